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
# Only what is packed gets built (every test binary relinks after a library change).
targets=""
case "${WGC_PACK_TESTS:-1}" in 0) targets="wgc_cli" ;; 1) ;; *) targets="wgc_cli $WGC_PACK_TESTS" ;; esac
[ "${WGC_PACK_PYTHON:-0}" = 0 ] || targets=""
WGC_DEPS="$repo/.deps" WGC_BUILD_DIR="$build" WGC_CMAKE_ARGS="-DWGC_DEPS=$repo/.deps" WGC_BUILD_TARGETS="$targets" WGC_WASM=0 \
  "$snap/scripts/build.sh" >/dev/null
stage=$(mktemp -d)
mkdir -p "$stage/wgc/bin" "$stage/wgc/lib"
cp "$build/wgc" "$stage/wgc/bin/"
# WGC_PACK_TESTS: 1 (default) every test binary, 0 none, or a list of names ("test_llm_q8 test_runtime").
case "${WGC_PACK_TESTS:-1}" in
  0) ;;
  1) for t in "$build"/test_*; do [ -x "$t" ] && cp "$t" "$stage/wgc/bin/"; done ;;
  *) for t in $WGC_PACK_TESTS; do cp "$build/$t" "$stage/wgc/bin/"; done ;;
esac
# WGC_PACK_PYTHON=1: the Python package too, for device_run.sh's `python` step (python/bench.py):
# the extension with libwgc and Dawn (CMake's component `python`, SwiftShader left out), and the
# Debian Python 3.11 it is built for, with its standard library and NumPy (the GPU machine's own
# python3 may be another version, which a pybind11 extension does not load in).
pylibs=()
if [ "${WGC_PACK_PYTHON:-0}" != 0 ]; then
  py="$stage/wgc/python"
  cmake --install "$build" --component python --prefix "$py/site" >/dev/null
  [ -f "$py/site/wgc/_wgc.cpython-311-x86_64-linux-gnu.so" ] || { echo "the Python extension was not built"; exit 1; }
  # SwiftShader is not needed there; libwgc and Dawn are in the bundle's lib/ already (LD_LIBRARY_PATH).
  rm -rf "$py/site/wgc/lib"
  mkdir -p "$py/bin" "$py/lib"
  cp /usr/bin/python3.11 "$py/bin/"
  tar -C /usr/lib --exclude=__pycache__ --exclude=test --exclude=idlelib --exclude=tkinter --exclude=turtledemo \
    --exclude=lib2to3 --exclude=ensurepip --exclude='config-3.11*' -cf - python3.11 | tar -C "$py/lib" -xf -
  tar -C /usr/lib/python3/dist-packages --exclude=__pycache__ --exclude=tests -cf - numpy | tar -C "$py/site" -xf -
  mapfile -t pylibs < <(find "$py" -name '*.so*' -type f; echo "$py/bin/python3.11")
fi
# Every shared library but the C/C++ runtime, which the GPU machine has in newer versions.
for bin in "$stage"/wgc/bin/* "${pylibs[@]}"; do
  ldd "$bin" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' | grep -vE 'ld-linux|lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s)\.so' |
    grep -v "^$stage/" || true
done | sort -u | while read -r lib; do cp -L "$lib" "$stage/wgc/lib/"; done
# WGC_PACK_THIN=1: the binaries and libwgc only (device_run.sh unpacks it over WGC_BASE_BUNDLE, a
# full bundle of the same dependencies).
[ "${WGC_PACK_THIN:-0}" = 0 ] || find "$stage/wgc/lib" -type f ! -name 'libwgc*' -delete
# What was packed (device_run.sh prints it first, so a run shows which build it measured).
stamp="$(git -C "$repo" rev-parse --abbrev-ref HEAD) $(git -C "$repo" rev-parse --short HEAD)"
echo "$stamp" >"$stage/wgc/STAMP"
# WGC_BUNDLE_OUT: where the bundle goes (default .device/bundle.tar.xz; device_run.sh takes another
# through WGC_BUNDLE, so that several branches' bundles travel in one call).
out=${WGC_BUNDLE_OUT:-$repo/.device/bundle.tar.xz}
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cJf "$out" wgc
[ -n "${WGC_BUNDLE_OUT:-}" ] || echo "$stamp" >"$repo/.device/STAMP"
rm -rf "$stage"
du -h "$out"
# The model fixtures the test binaries read (device_run.sh points WGC_FIXTURES and WGC_MODELS at
# .device/fixtures and .device/models; without them test_llm_model skips its GPU cases): the tiny
# LLM fixtures and the built-in model, ~40 MB. Carry .device/fixtures and .device/models too.
fixtures=${WGC_FIXTURES:-$repo/../shared/fixtures}
models=${WGC_MODELS:-$repo/../shared/models}
if [ -d "$fixtures/tiny-llama3-bf16" ]; then
  mkdir -p "$repo/.device/fixtures" "$repo/.device/models"
  for d in tiny-llama2-f32 tiny-llama3-bf16; do
    [ -d "$fixtures/$d" ] && rm -rf "$repo/.device/fixtures/$d" && cp -r "$fixtures/$d" "$repo/.device/fixtures/"
  done
  if [ -d "$models/wgc-tiny-dict" ]; then
    rm -rf "$repo/.device/models/wgc-tiny-dict" && cp -r "$models/wgc-tiny-dict" "$repo/.device/models/"
  fi
  du -sh "$repo/.device/fixtures" "$repo/.device/models"
else
  echo "no fixtures in $fixtures: test_llm_model's GPU cases will skip there" >&2
fi
