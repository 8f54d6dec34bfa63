#!/usr/bin/env bash
# The main job: installs what is missing, builds, shows the adapter and runs the GPU-vs-CPU
# benchmark on small sizes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/build.sh"
build=${WGC_BUILD_DIR:-$repo/build}
"$build/wgc" info
"$build/wgc" bench --quick
