#!/usr/bin/env bash
# tests/data/arch/nomic-bert: a tiny random-weight nomic-bert (nomic-embed-text's architecture) and
# llama.cpp's embeddings of it, the reference tests/test_encoder.cpp checks wgc's encoder against.
# transformers cannot run nomic-bert (it is the Hub's remote code), so the reference is llama.cpp's
# nomic-bert (node-llama-cpp 3.21.1's prebuilt CPU backend, pinned as scripts/bench_cpu_llm.sh pins it).
#
#   scripts/make_nomic_bert_fixture.sh [BUILD_DIR] [OUT_DIR]     # defaults: build, tests/data/arch/nomic-bert
#
# How it was made (this script, on the CPU machine, with build/wgc from the same commit):
#  1. `wgc synth-model --shape nomic-bert-tiny --type f32 --seed 34`: wgc's GGUF writer, llama.cpp's
#     nomic-bert keys and tensor names, random weights (matrices ~N(0, 0.15^2), LayerNorms ~N(1 or
#     0, 0.02^2)), a synthetic WordPiece vocabulary of 160 pieces (src/llm/synth/synth_model.cpp:
#     hidden 72, 3 heads of 24 rotated whole with base 1000, ffn 68, 2 layers, 128 positions, mean
#     pooling) -> nomic-bert-f32.gguf;
#  2. scripts/nomic_bert_fixture_hf.py: the same tensors (the same bytes) as the Hugging Face folder
#     nomic's repos have (config.json with NomicBertConfig's keys, model.safetensors under nomic's
#     names, tokenizer.json, sentence-transformers' modules.json and 1_Pooling, mean);
#  3. scripts/nomic_bert_fixture_ref.mjs under node-llama-cpp: for each of its texts, llama.cpp's
#     token ids ([CLS] text [SEP]) and its mean-pooled, unnormalised embedding -> reference.json.
# Nothing of wgc computes a reference value: wgc only wrote the weights both sides read.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
out=${2:-$repo/tests/data/arch/nomic-bert}
peer=${NOMIC_PEER:-/tmp/nomic-bert-peer}
log() { printf '[make_nomic_bert_fixture] %s\n' "$*" >&2; }

# node-llama-cpp from the registry, pinned by the lock file's sha512s (scripts/bench_cpu_llm).
if [ ! -e "$peer/.installed" ]; then
  log "installing node-llama-cpp 3.21.1 into $peer"
  rm -rf "$peer"
  mkdir -p "$peer"
  cp "$repo/scripts/bench_cpu_llm/package.json" "$repo/scripts/bench_cpu_llm/package-lock.json" "$peer/"
  (cd "$peer" && npm ci --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=error)
  touch "$peer/.installed"
fi

mkdir -p "$out"
"$build/wgc" synth-model --shape nomic-bert-tiny --type f32 --seed 34 --out "$out/nomic-bert-f32.gguf" --force
python3 "$repo/scripts/nomic_bert_fixture_hf.py" "$out/nomic-bert-f32.gguf" "$out"
cp "$repo/scripts/nomic_bert_fixture_ref.mjs" "$peer/"
node "$peer/nomic_bert_fixture_ref.mjs" "$out/nomic-bert-f32.gguf" > "$out/reference.json"
log "wrote $out"
