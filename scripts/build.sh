#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then configures and builds wgc into build/ (and the
# engine for the browser into build/wasm: scripts/build_wasm.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/setup.sh"
build=${WGC_BUILD_DIR:-$repo/build}
# The engine for the browser (wasm, into $build/wasm; WGC_WASM=0 skips it), before the native build
# copies it into the static site (build/web/local).
"$repo/scripts/build_wasm.sh"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE="${WGC_BUILD_TYPE:-Release}" ${WGC_CMAKE_ARGS:-} >/dev/null
# WGC_BUILD_TARGETS: only these targets (device_pack.sh builds just what it packs).
cmake --build "$build" -j"$(nproc)" ${WGC_BUILD_TARGETS:+--target $WGC_BUILD_TARGETS}
