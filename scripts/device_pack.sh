#!/usr/bin/env bash
# Here (CPU machine): builds wgc and packs the tool, the test binaries and the shared libraries
# they need (Dawn, OpenBLAS, ...) into .device/bundle.tar.xz for scripts/device_run.sh on the
# GPU machine. .device/ and .gl/ are git-ignored and travel with the device tool's `carry`.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# Build what is committed (HEAD), in a worktree of its own, so that work in progress in the
# checkout never reaches a measurement.
snap=${WGC_SNAPSHOT_DIR:-/tmp/wgc-snapshot}
if [ ! -d "$snap/.git" ] && [ ! -f "$snap/.git" ]; then git -C "$repo" worktree add --detach "$snap" HEAD >/dev/null; fi
git -C "$snap" checkout -q --detach "$(git -C "$repo" rev-parse HEAD)"
build="$snap/build"
WGC_DEPS="$repo/.deps" WGC_BUILD_DIR="$build" WGC_CMAKE_ARGS="-DWGC_DEPS=$repo/.deps" "$snap/scripts/build.sh" >/dev/null
stage=$(mktemp -d)
mkdir -p "$stage/wgc/bin" "$stage/wgc/lib"
cp "$build/wgc" "$stage/wgc/bin/"
# WGC_PACK_TESTS: 1 (default) every test binary, 0 none, or a list of names ("test_llm_q8 test_runtime").
case "${WGC_PACK_TESTS:-1}" in
  0) ;;
  1) for t in "$build"/test_*; do [ -x "$t" ] && cp "$t" "$stage/wgc/bin/"; done ;;
  *) for t in $WGC_PACK_TESTS; do cp "$build/$t" "$stage/wgc/bin/"; done ;;
esac
# Every shared library but the C/C++ runtime, which the GPU machine has in newer versions.
for bin in "$stage"/wgc/bin/*; do
  ldd "$bin" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' | grep -vE 'ld-linux|lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s)\.so' || true
done | sort -u | while read -r lib; do cp -L "$lib" "$stage/wgc/lib/"; done
mkdir -p "$repo/.device"
tar -C "$stage" -cJf "$repo/.device/bundle.tar.xz" wgc
# What was packed (device_run.sh prints it first, so a run shows which build it measured).
echo "$(git -C "$repo" rev-parse --abbrev-ref HEAD) $(git -C "$repo" rev-parse --short HEAD)" >"$repo/.device/STAMP"
rm -rf "$stage"
du -h "$repo/.device/bundle.tar.xz"
