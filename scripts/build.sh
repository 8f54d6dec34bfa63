#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then configures and builds wgc into build/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/setup.sh"
build=${WGC_BUILD_DIR:-$repo/build}
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE="${WGC_BUILD_TYPE:-Release}" ${WGC_CMAKE_ARGS:-} >/dev/null
# WGC_BUILD_TARGETS: only these targets (device_pack.sh builds just what it packs).
cmake --build "$build" -j"$(nproc)" ${WGC_BUILD_TARGETS:+--target $WGC_BUILD_TARGETS}
