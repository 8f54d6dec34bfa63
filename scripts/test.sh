#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (CTest) on whatever
# adapter the machine has (SwiftShader on CPU-only machines); then the sanitizer leg
# (scripts/sanitize.sh: clang, warnings as errors, ASan + UBSan). WGC_SANITIZERS=0 skips that leg
# (it is on by default, as in CI). Arguments go to the first leg's ctest.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/build.sh"
build=${WGC_BUILD_DIR:-$repo/build}
(cd "$build" && ctest --output-on-failure -j"$(nproc)" "$@")
if [ "${WGC_SANITIZERS:-1}" != 0 ]; then
  "$repo/scripts/sanitize.sh"
fi
