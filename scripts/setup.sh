#!/usr/bin/env bash
# Installs everything wgc needs on a fresh Debian 12 machine, into a cache; safe to run again.
#  - Debian packages (compiler, CMake, GoogleTest, Vulkan loader, image and BLAS libraries, Node.js,
#    cpp-httplib for `wgc serve`, nginx for its two-replica test, and for the Python package
#    (python/): pybind11, the Python headers, venv/pip/setuptools, NumPy and pytest)
#  - Dawn (WebGPU) from npm: bun-webgpu-linux-x64, verified by sha256
#  - Dawn's C header from npm: react-native-wgpu (only the five header files are kept)
#  - SwiftShader (Vulkan on the CPU) from Debian's chromium-common, with an ICD json
#  - emscripten (Debian) for the engine in the browser (scripts/build_wasm.sh; WGC_WASM=0: not needed)
#  - Chromium (Debian) for the browser tests, driven by puppeteer-core from npm (setup_web_tests.sh)
# The cache is $WGC_DEPS (default: <repo>/.deps). Nothing of it is committed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
deps=${WGC_DEPS:-$repo/.deps}
mkdir -p "$deps"
log() { printf '[setup] %s\n' "$*" >&2; }

# --- Debian packages ----------------------------------------------------------------------
apt_pkgs=(cmake g++ make pkg-config libgtest-dev libvulkan1 libpng-dev libjpeg-dev
          libopenblas-dev libpcre2-dev libcli11-dev libedit-dev libssl-dev ca-certificates chromium fonts-dejavu-core
          libcpp-httplib-dev nginx-light libonnx-dev libprotobuf-dev libonnx-testdata
          python3-dev python3-venv python3-pip python3-setuptools python3-wheel pybind11-dev
          python3-numpy python3-pytest)
# The sanitizer leg of scripts/test.sh (and the fuzz targets): clang with its sanitizer runtimes.
if [ "${WGC_SANITIZERS:-1}" != 0 ]; then apt_pkgs+=(clang libclang-rt-dev); fi
# The engine for the browser (scripts/build_wasm.sh): Debian's emscripten (its system libraries come
# prebuilt), and curl and patch for PCRE2's Debian source package.
if [ "${WGC_WASM:-1}" != 0 ]; then apt_pkgs+=(emscripten curl patch); fi
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm comes with nodejs from some repositories and as its own package in Debian's
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- npm tarballs, pinned and verified ------------------------------------------------------
fetch_npm() { # name version sha256 -> path of verified tarball
  local name=$1 ver=$2 sum=$3 base
  base=$(echo "$name" | sed 's/^@//; s/\//-/')-$ver.tgz
  if [ ! -f "$deps/$base" ] || ! echo "$sum  $deps/$base" | sha256sum -c --status; then
    log "fetching $name@$ver from npm"
    (cd "$deps" && npm pack --silent "$name@$ver" >/dev/null)
  fi
  echo "$sum  $deps/$base" | sha256sum -c --status || { log "sha256 mismatch for $base"; exit 1; }
  echo "$deps/$base"
}

dawn_pkg=bun-webgpu-linux-x64 dawn_ver=0.1.7
if [ ! -f "$deps/dawn/lib/libwebgpu_wrapper.so" ]; then
  tgz=$(fetch_npm $dawn_pkg $dawn_ver 8badfecdad4e726ac12be4f29771f4cbd7ce7683b4418316a547c5bda94fb798)
  mkdir -p "$deps/dawn/lib" && tar xzf "$tgz" -C "$deps/dawn/lib" --strip-components=1 package/libwebgpu_wrapper.so package/LICENSE
  rm -f "$tgz"
fi
# The package Dawn came from, for `wgc --version` (read at build time).
[ "$(cat "$deps/dawn/PACKAGE" 2>/dev/null)" = "$dawn_pkg@$dawn_ver" ] || echo "$dawn_pkg@$dawn_ver" > "$deps/dawn/PACKAGE"
if [ ! -f "$deps/dawn/include/webgpu/webgpu.h" ]; then
  tgz=$(fetch_npm react-native-wgpu 0.3.2 81896269a143abc98c9afc2d79d9b7e8d96565e8071e72b28e1a7c10b24b2fef)
  mkdir -p "$deps/dawn/include/webgpu"
  tar xzf "$tgz" -C "$deps/dawn/include/webgpu" --strip-components=3 package/cpp/webgpu/webgpu.h
  rm -f "$tgz" # 44 MB; only the C header is used
fi

# --- ImageNet class names (wgc classify): TensorFlow.js's MobileNet package ships the 1000 ILSVRC
# names in the standard (torchvision) order; the plain list is checked again after conversion.
classes="$deps/imagenet/imagenet_classes.txt"
classes_sum=1b0c1e842afe63343c3d11a78c69e19ee2be9d80d19c5080ea0863f3ef66451e
if [ ! -f "$classes" ] || ! echo "$classes_sum  $classes" | sha256sum -c --status; then
  tgz=$(fetch_npm @tensorflow-models/mobilenet 2.1.1 29b97f8db758d1d699c5654100fd363beaaeda1874e1488b5bceb267d13f90ff)
  tmp=$(mktemp -d)
  tar xzf "$tgz" -C "$tmp" package/dist/imagenet_classes.js
  mkdir -p "$deps/imagenet"
  node -e 'const c = require(process.argv[1]).IMAGENET_CLASSES; let s = "";
           for (let i = 0; i < 1000; i++) s += c[i] + "\n"; process.stdout.write(s);' \
    "$tmp/package/dist/imagenet_classes.js" > "$classes.tmp"
  rm -rf "$tmp" "$tgz"
  echo "$classes_sum  $classes.tmp" | sha256sum -c --status || { log "ImageNet class list differs from the pinned one"; exit 1; }
  mv "$classes.tmp" "$classes"
fi

# --- SwiftShader from chromium-common -----------------------------------------------------
ss="$deps/swiftshader"
if [ ! -f "$ss/libvk_swiftshader.so" ]; then
  log "fetching SwiftShader (Debian chromium-common)"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download chromium-common >/dev/null 2>&1) || { apt-get update -qq && (cd "$tmp" && apt-get download chromium-common >/dev/null 2>&1); }
  dpkg -x "$tmp"/chromium-common_*.deb "$tmp/x"
  mkdir -p "$ss" && cp "$tmp/x/usr/lib/chromium/libvk_swiftshader.so" "$ss/"
  rm -rf "$tmp"
fi
# The library path is relative to the json (the Vulkan loader resolves it from the json's folder), so
# the cache stays valid wherever it is linked from.
cp "$repo/cmake/vk_swiftshader_icd.json" "$ss/vk_swiftshader_icd.json"
# Reference implementations used by tests (npm), when that script exists.
[ -x "$repo/scripts/setup_test_refs.sh" ] && "$repo/scripts/setup_test_refs.sh"
# The browser tests' driver (npm).
[ -x "$repo/scripts/setup_web_tests.sh" ] && "$repo/scripts/setup_web_tests.sh"
log "dependencies ready in $deps"
