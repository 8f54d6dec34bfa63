#!/usr/bin/env bash
# The main job: installs what is missing, builds, shows the adapter, generates a short text with
# the built-in default model, and runs the GPU-vs-CPU benchmark on small sizes. The setup and build
# output goes to a log (shown when they fail), so what is printed is wgc's own.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${WGC_BUILD_DIR:-$repo/build}
mkdir -p "$build"
log="$build/main-build.log"
echo "wgc: installing what is missing and building (log: $log)" >&2
if ! "$repo/scripts/build.sh" >"$log" 2>&1; then
  tail -n 60 "$log" >&2
  echo "wgc: the build failed; the whole log is $log" >&2
  exit 1
fi
"$build/wgc" info
echo
"$build/wgc" generate --prompt "Computer science is" -n 48 --seed 1
echo
"$build/wgc" bench --quick --json "$build/bench.json" --png "$build/bench.png" --force
