#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (CTest) on whatever
# adapter the machine has (SwiftShader on CPU-only machines).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/build.sh"
build=${WGC_BUILD_DIR:-$repo/build}
cd "$build" && ctest --output-on-failure -j"$(nproc)" "$@"
