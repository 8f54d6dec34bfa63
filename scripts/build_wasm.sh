#!/usr/bin/env bash
# Builds the engine for the browser (wasm32, Debian's emscripten 3.1.6) into $WGC_BUILD_DIR/wasm
# (default build/wasm): wgc-core.js + wgc-core.wasm, which `wgc serve` serves at /local/ and which
# are copied into the static site (build/web/local/). Installs what it needs, into the same cache as
# scripts/setup.sh ($WGC_DEPS, default <repo>/.deps):
#  - Debian's emscripten (apt), and Dawn's C header (scripts/setup.sh fetches it; the library is
#    compiled against it, and src/gpu/webgpu_browser.cpp maps it onto emscripten's 2022 bindings);
#  - PCRE2 10.42 (the tokenizer's regexes) compiled for wasm32 from Debian's source package
#    (pool/main/p/pcre2, pcre2_10.42-1: the .orig.tar.gz and Debian's .diff.gz, sha256-pinned as in
#    the signed .dsc), cached in $WGC_DEPS/wasm-pcre2-10.42-1.
# Incremental like the native build: an unchanged tree rebuilds nothing. WGC_WASM=0 skips it;
# without emscripten and no way to install it, it says so and exits 0 (the /local page then says
# that the engine was not built).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
deps=${WGC_DEPS:-$repo/.deps}
build=${WGC_BUILD_DIR:-$repo/build}
out="$build/wasm"
log() { printf '[build_wasm] %s\n' "$*" >&2; }
[ "${WGC_WASM:-1}" = 0 ] && { log "WGC_WASM=0: skipped"; exit 0; }

# --- emscripten (Debian), and curl and patch for PCRE2's source package ----------------------
missing=()
command -v emcmake >/dev/null || missing+=(emscripten)
command -v curl >/dev/null || missing+=(curl)
command -v patch >/dev/null || missing+=(patch)
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  { $sudo_cmd apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    { log "could not install ${missing[*]}: the wasm engine is not built"; exit 0; }
fi
# Debian's emscripten finds its JavaScript dependencies (acorn) through NODE_PATH when the node on
# PATH is not Debian's.
export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs
[ -f "$deps/dawn/include/webgpu/webgpu.h" ] || "$repo/scripts/setup.sh"

# --- PCRE2 for wasm32, from Debian's source package -------------------------------------------
pcre_ver=10.42 pcre_deb=10.42-1
pcre="$deps/wasm-pcre2-$pcre_deb"
if [ ! -f "$pcre/lib/libpcre2-8.a" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  pool=http://deb.debian.org/debian/pool/main/p/pcre2
  fetch() { # file sha256
    log "fetching $1 (Debian source package)"
    curl -fsSL --retry 3 -o "$tmp/$1" "$pool/$1"
    echo "$2  $tmp/$1" | sha256sum -c --status || { log "sha256 mismatch for $1"; exit 1; }
  }
  fetch pcre2_$pcre_ver.orig.tar.gz c33b418e3b936ee3153de2c61cc638e7e4fe3156022a5c77d0711bcbb9d64f1f
  fetch pcre2_$pcre_deb.diff.gz 8267c3acacb04e8a077235f676187393e295443fc16ff46ddbe5f6476879c8cb
  tar xzf "$tmp/pcre2_$pcre_ver.orig.tar.gz" -C "$tmp"
  (cd "$tmp/pcre2-$pcre_ver" && zcat "$tmp/pcre2_$pcre_deb.diff.gz" | patch -s -p1)
  log "building PCRE2 $pcre_deb for wasm32"
  emcmake cmake -S "$tmp/pcre2-$pcre_ver" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$pcre" \
    -DBUILD_SHARED_LIBS=OFF -DPCRE2_BUILD_PCRE2_8=ON -DPCRE2_BUILD_PCRE2_16=OFF -DPCRE2_BUILD_PCRE2_32=OFF \
    -DPCRE2_SUPPORT_JIT=OFF -DPCRE2_SUPPORT_UNICODE=ON -DPCRE2_BUILD_PCRE2GREP=OFF -DPCRE2_BUILD_TESTS=OFF \
    -DPCRE2_SUPPORT_LIBBZ2=OFF -DPCRE2_SUPPORT_LIBZ=OFF -DPCRE2_SUPPORT_LIBEDIT=OFF -DPCRE2_SUPPORT_LIBREADLINE=OFF \
    ${WGC_CMAKE_ARGS:-} >/dev/null
  cmake --build "$tmp/build" -j"$(nproc)" >/dev/null
  cmake --install "$tmp/build" >/dev/null
fi

# --- the engine ----------------------------------------------------------------------------
start=$(date +%s)
emcmake cmake -S "$repo/wasm" -B "$out" -DCMAKE_BUILD_TYPE="${WGC_WASM_BUILD_TYPE:-Release}" -DWGC_PCRE2="$pcre" \
  -DWGC_DEPS="$deps" ${WGC_CMAKE_ARGS:-} >/dev/null
cmake --build "$out" -j"$(nproc)" ${WGC_WASM_TARGETS:+--target $WGC_WASM_TARGETS}
log "done in $(($(date +%s) - start)) s: $out/wgc-core.js, $out/wgc-core.wasm"
