#!/usr/bin/env bash
# The main job: installs what is missing, builds, shows the adapter, generates a short text with
# the built-in default model, and runs the GPU-vs-CPU benchmark on small sizes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/build.sh"
build=${WGC_BUILD_DIR:-$repo/build}
"$build/wgc" info
echo
"$build/wgc" generate --prompt "Computer science is" -n 48 --seed 1
echo
"$build/wgc" bench --quick --json "$build/bench.json" --png "$build/bench.png"
