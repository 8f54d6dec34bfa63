#!/usr/bin/env bash
# wgc's CPU linear-layer kernels against llama.cpp's, one core, one matrix at a time: wgc's
# cpu_llm_kernels_bench (every level, the rows as stored and the level's packed copy) beside
# ggml's CPU mul_mat from the peer's prebuilt libggml-cpu-<variant>.so (scripts/bench_cpu_llm/
# ggml_mul_mat.cpp, compiled here against the ggml headers of the peer's own llama.cpp source, the
# git bundle node-llama-cpp ships). Both timed by CPU time, best of 7: a shared machine's other
# work changes them only through the caches and memory it shares.
#
#   scripts/bench_cpu_llm_kernels.sh [--peer DIR] [--variant haswell] [--levels avx2]
#                                    [--types q4_0,...] [TOKENS ROWS COLS]
#
#  --peer DIR      an installed peer (default build/bench-cpu-llm/peer, which bench_cpu_llm.sh installs)
#  --variant NAME  llama.cpp's CPU variant (default haswell: AVX2 + FMA + F16C)
#  --levels LIST   wgc's kernel levels (default avx2)
#  TOKENS ROWS COLS  default 1 16384 2048 (decode: weights from memory); 64 2048 2048 for prefill
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
die() { printf '[bench_cpu_llm_kernels] %s\n' "$*" >&2; exit 1; }
peer="$repo/build/bench-cpu-llm/peer" variant=haswell levels=avx2 types=f16,bf16,q8_0,q4_0,q4_k,q6_k
while [ $# -gt 0 ]; do
  case $1 in
    --peer) peer=${2:?}; shift 2 ;;
    --variant) variant=${2:?}; shift 2 ;;
    --levels) levels=${2:?}; shift 2 ;;
    --types) types=${2:?}; shift 2 ;;
    -*) die "unknown argument '$1'" ;;
    *) break ;;
  esac
done
tokens=${1:-1} rows=${2:-16384} cols=${3:-2048}
bins="$peer/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
bundle="$peer/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[ -f "$bins/libggml-cpu-$variant.so" ] || die "no $bins/libggml-cpu-$variant.so (install the peer: scripts/bench_cpu_llm.sh)"
[ -f "$bundle" ] || die "no $bundle (llama.cpp's source, for the ggml headers)"

work="$repo/build/bench-cpu-llm-kernels"
mkdir -p "$work/lib"
# The variant alone beside ggml-base (ggml loads no other backend: the harness links the variant).
cp "$bins/libggml-base.so" "$bins/libggml-cpu-$variant.so" "$work/lib/"
if [ ! -f "$work/include/ggml.h" ]; then
  src=$(mktemp -d)
  git -C "$src" init -q
  git -C "$src" fetch -q "$bundle"
  git -C "$src" archive FETCH_HEAD ggml/include | tar -C "$work" --strip-components=1 -xf -
  rm -rf "$src"
fi
c++ -O2 -std=c++17 "$repo/scripts/bench_cpu_llm/ggml_mul_mat.cpp" -I "$work/include" -L "$work/lib" \
  -l:"libggml-cpu-$variant.so" -l:libggml-base.so -Wl,-rpath,"$work/lib" -o "$work/ggml_mul_mat-$variant"
cmake --build "$repo/build" --target cpu_llm_kernels_bench >/dev/null

"$repo/build/cpu_llm_kernels_bench" "$tokens" "$rows" "$cols" "$types" "$levels"
for t in ${types//,/ }; do "$work/ggml_mul_mat-$variant" "$t" "$tokens" "$rows" "$cols" 2>/dev/null; done
echo "(llama.cpp $variant variant, node-llama-cpp 3.21.1's prebuilt binary; its CPU time includes quantizing the activations)"
