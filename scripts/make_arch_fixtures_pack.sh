#!/usr/bin/env bash
# Prepares the GPU-machine call that makes tests/data/arch's model fixtures: llama.cpp's converter
# (convert_hf_to_gguf.py, conversion/, gguf-py/ from the llama.cpp source that node-llama-cpp's npm
# package carries as llama/gitRelease.bundle) and the two scripts, into DIR (default .dx/arch):
#
#   scripts/make_arch_fixtures_pack.sh            # here (ONLY=modernbert,xlmr: just those models)
#   run: bash .dx/arch/run.sh, carry [".dx/arch"]   # there: $OUT/arch.tar.xz, report.json, log.txt
#   tar xJf arch.tar.xz -C /tmp && cp -r /tmp/arch/* tests/data/arch/   # here again
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$repo/.dx/arch}
version=3.21.1
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "node-llama-cpp@$version" --silent >/dev/null &&
  tar xzf "node-llama-cpp-$version.tgz" package/llama/gitRelease.bundle)
git clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/lc" 2>/dev/null
tar cf "$dir/conv.tar" -C "$tmp/lc" convert_hf_to_gguf.py conversion gguf-py/gguf LICENSE
cp "$repo/scripts/make_arch_fixtures.py" "$repo/scripts/arch_chat_templates.py" "$dir/"
cat > "$dir/run.sh" <<'RUN'
#!/bin/bash
# On the GPU machine (CPU work: torch, transformers, tokenizers, sentence-transformers are there).
cd "$(dirname "$0")"
mkdir -p conv && tar xf conv.tar -C conv
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
timeout 200 python3 make_arch_fixtures.py --out /tmp/arch --converter conv ONLY_ARGS "$@" > "$OUT/log.txt" 2>&1
echo "rc=$?"
cp /tmp/arch/report.json "$OUT/" 2>/dev/null
tar cJf "$OUT/arch.tar.xz" -C /tmp arch
ls -la "$OUT"
tail -c 3000 "$OUT/log.txt"
RUN
only_args=${ONLY:+--only $ONLY}
sed -i "s/ONLY_ARGS/$only_args/" "$dir/run.sh"
echo "ready: $dir (conv.tar from node-llama-cpp@$version's llama.cpp source)"
