#!/usr/bin/env bash
# Here (CPU machine with the CUDA toolkit): builds llama.cpp CUDA's llama-bench and
# llama-batched-bench for sm_90 from ../shared/peers (the peer wgc is measured against, never linked
# into it) and packs them into .peer/lcpp.tar.xz for the peer-bench / peer-batched steps of
# scripts/device_run.sh (carry ".peer"). Building here saves ~3 minutes of GPU-machine time per
# session; one -j1 build takes ~2 hours on 2 cores, so it runs niced and resumes where it stopped.
#   scripts/peer_pack.sh [SRC_TARBALL] [BUILD_DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$repo/../shared/peers/llama.cpp-c392e50-src.tar.xz}
dir=${2:-/tmp/lcpp}
cuda=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
[ -d "$dir" ] || { mkdir -p "$dir" && tar -C "$dir" --strip-components=1 -xJf "$src"; }
# libcuda.so.1 comes with the driver, which only the GPU machine has: link against the toolkit's stub.
cmake -S "$dir" -B "$dir/b" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_EXE_LINKER_FLAGS="-L$cuda/lib/stubs -Wl,-rpath-link,$cuda/lib/stubs -Wl,--allow-shlib-undefined" >/dev/null
nice -n 19 cmake --build "$dir/b" -j "${JOBS:-1}" --target llama-bench llama-batched-bench
mkdir -p "$repo/.peer"
(cd "$dir/b/bin" && tar -cf - llama-bench llama-batched-bench ./*.so) | xz -T0 -6 >"$repo/.peer/lcpp.tar.xz"
du -h "$repo/.peer/lcpp.tar.xz"
