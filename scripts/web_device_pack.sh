#!/usr/bin/env bash
# Here (the build machine): packs what scripts/web_device.sh needs on the GPU machine to run the
# engine in headless Chromium on its GPU (web/test/local_bench.mjs), in pieces the device tool can
# carry (64 MiB per call): .webdev/1, .webdev/2, ... (each one file, part of one tar), to carry one
# per call (a warm machine keeps what earlier calls carried; scripts/web_device.sh runs once all
# are there). The tar holds:
#  - Debian's chromium and chromium-common (.deb, apt-get download) and the packages of every
#    shared library the chromium binary loads (ldd here) but libc6/libgcc-s1/libstdc++6; the GPU
#    machine uses its own copy of a library where it has one, these where it has none;
#  - fonts-dejavu-core; the Vulkan loader's packages (the .gl set: docs/CONTRIBUTING.md);
#  - node (this machine's binary, which needs only libc, libstdc++ and libgcc) unless WGC_WEBDEV_NODE=0;
#  - puppeteer-core ($WGC_DEPS/web-test, scripts/setup_web_tests.sh);
#  - the static site build/web (the page, wgc-core.js/.wasm and the built-in model).
# The native comparison (`wgc generate --backend gpu`) uses device_pack.sh's bundle, carried as
# usual (.device/), where it is there.
#   scripts/web_device_pack.sh            # then: ls -l .webdev (carry .webdev/1, then .webdev/2, ...)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
deps=${WGC_DEPS:-$repo/.deps}
site=${WGC_SITE:-$repo/build/web}
out=$repo/.webdev
part_mib=${WGC_WEBDEV_PART_MIB:-60}
log() { printf '[web_device_pack] %s\n' "$*" >&2; }

[ -f "$site/local/wgc-core.wasm" ] || { log "no wasm build in $site/local (scripts/build.sh)"; exit 1; }
[ -d "$deps/web-test/node_modules/puppeteer-core" ] || { log "no puppeteer-core in $deps/web-test (scripts/setup_web_tests.sh)"; exit 1; }
[ -x /usr/lib/chromium/chromium ] || { log "no chromium here to read its libraries from (scripts/setup.sh)"; exit 1; }

stage=$(mktemp -d) packed=$(mktemp -d) # what goes in the tar, and the tar (not inside what it packs)
trap 'rm -rf "$stage" "$packed"' EXIT
mkdir -p "$stage/debs" "$stage/bin"
# The packages of chromium's shared libraries (resolved through symlinks), but the C/C++ runtime.
pkgs=$(ldd /usr/lib/chromium/chromium | awk '/=>/ {print $3}' | while read -r f; do
  dpkg -S "$(readlink -f "$f")" 2>/dev/null || dpkg -S "$f" 2>/dev/null || true
done | cut -d: -f1 | sort -u | grep -vxE 'libc6|libgcc-s1|libstdc\+\+6')
vulkan="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
log "downloading $(echo chromium chromium-common fonts-dejavu-core $vulkan $pkgs | wc -w) Debian packages"
(cd "$stage/debs" && apt-get download -q chromium chromium-common fonts-dejavu-core $vulkan $pkgs >/dev/null)
if [ "${WGC_WEBDEV_NODE:-1}" != 0 ]; then cp "$(command -v node)" "$stage/bin/node"; fi
mkdir -p "$stage/web-test" && cp -a "$deps/web-test/node_modules" "$deps/web-test/package.json" "$stage/web-test/"
mkdir -p "$stage/site" && cp -a "$site/." "$stage/site/"
(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown) >"$stage/STAMP"

rm -rf "$out" && mkdir -p "$out"
log "packing (xz)"
tar -C "$stage" -cf - . | xz -T2 -6 >"$packed/webdev.tar.xz"
split -b "${part_mib}M" -d -a 1 "$packed/webdev.tar.xz" "$packed/part."
i=1
for p in "$packed"/part.*; do
  mkdir -p "$out/$i" && mv "$p" "$out/$i/webdev.part"
  i=$((i + 1))
done
n=$((i - 1))
echo "$n" >"$out/$n/PARTS"
log "$(du -sh "$out" | cut -f1) in $n parts: carry .webdev/1 ... .webdev/$n, one per call, then run scripts/web_device.sh"
ls -l "$out"/*/
