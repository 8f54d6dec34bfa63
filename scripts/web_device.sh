#!/usr/bin/env bash
# There (the GPU machine, through the device tool): the engine in headless Chromium on the GPU.
# Finds Chromium, Node.js, puppeteer-core and the static site (its own, or those packed by
# scripts/web_device_pack.sh and carried as .webdev/1, .webdev/2, ...), says what is missing,
# brings the Vulkan loader, asks Chromium for a WebGPU adapter under a few flag sets (headless, on
# Vulkan) and prints each one's adapter, then runs web/test/local_bench.mjs with the first set
# whose adapter is not SwiftShader (the page's load, wasm memory, decode tokens/s against the
# native engine on the same GPU where device_pack.sh's bundle is there). Output: stdout, and
# $OUT/web_device.txt.
#   scripts/web_device.sh      (WGC_WEBDEV_TOKENS: greedy tokens per run, default 64;
#                               WGC_WEBDEV_PROBE_ONLY=1: stop after printing the adapters)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/web_device.txt") 2>&1
log() { printf '[web_device] %s\n' "$*"; }
root=/tmp/webdev # the packed files, unpacked
missing=()

# --- the pack, where carried ------------------------------------------------------------------
if ls .webdev/*/webdev.part >/dev/null 2>&1; then
  n=$(cat .webdev/*/PARTS 2>/dev/null | head -1)
  have=$(ls .webdev/*/webdev.part | wc -l)
  if [ -n "$n" ] && [ "$have" -eq "$n" ]; then
    rm -rf "$root" && mkdir -p "$root"
    for i in $(seq 1 "$n"); do cat ".webdev/$i/webdev.part"; done | xz -d | tar -C "$root" -xf - &&
      log "unpacked the pack of $(cat "$root/STAMP") ($n parts)"
    mkdir -p "$root/sys"
    for f in "$root"/debs/*.deb; do dpkg -x "$f" "$root/sys"; done
  else
    log "the pack is incomplete: $have of ${n:-?} parts here (carry .webdev/1 ... in turn, to one warm machine)"
  fi
fi

# --- the Vulkan loader (as scripts/device_run.sh), and the NVIDIA driver's ICD -----------------
for f in .gl/*.deb "$root"/debs/libvulkan1_*.deb "$root"/debs/libegl1_*.deb "$root"/debs/libglvnd0_*.deb; do
  [ -f "$f" ] && dpkg -x "$f" /
done
ldconfig 2>/dev/null
icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia*.json \
  /etc/vulkan/icd.d/nvidia*.json 2>/dev/null | head -1)
if [ -n "$icd" ]; then
  export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
  log "NVIDIA Vulkan ICD: $icd"
else
  missing+=("the NVIDIA Vulkan ICD (nvidia_icd.json)")
fi
ldconfig -p | grep -q 'libvulkan.so.1 ' || missing+=("the Vulkan loader libvulkan.so.1 (carry .gl: docs/CONTRIBUTING.md)")
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/[web_device] GPU: /'

# --- Chromium ---------------------------------------------------------------------------------
chromium=${WGC_CHROMIUM:-}
for c in /usr/lib/chromium/chromium "$root/sys/usr/lib/chromium/chromium" "$(command -v chromium 2>/dev/null)" \
  "$(command -v google-chrome 2>/dev/null)"; do
  [ -z "$chromium" ] && [ -n "$c" ] && [ -x "$c" ] && chromium=$c
done
libs=/tmp/webdev-libs # the pack's libraries this machine lacks (its own are used where it has them)
if [ -n "$chromium" ]; then
  rm -rf "$libs" && mkdir -p "$libs"
  if [ -d "$root/sys" ]; then
    for pass in 1 2 3; do # a library found may need another
      LD_LIBRARY_PATH=$libs ldd "$chromium" 2>/dev/null | awk '/not found/ {print $1}' | while read -r so; do
        f=$(find "$root/sys" -name "$so" 2>/dev/null | head -1)
        [ -n "$f" ] && ln -sf "$f" "$libs/$so"
      done
    done
    # Fonts: fontconfig's configuration and DejaVu from the pack where the machine has none.
    [ -d /etc/fonts ] || export FONTCONFIG_PATH=$root/sys/etc/fonts
  fi
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  nf=$(ldd "$chromium" 2>/dev/null | grep -c 'not found')
  if [ "$nf" -gt 0 ]; then
    missing+=("libraries of Chromium: $(ldd "$chromium" | awk '/not found/ {print $1}' | tr '\n' ' ')")
  fi
  log "Chromium: $chromium ($("$chromium" --version 2>/dev/null || echo 'does not start'))"
else
  missing+=("Chromium (Debian's chromium + chromium-common: scripts/web_device_pack.sh packs them)")
fi

# --- Node.js, puppeteer-core, the site, the native engine --------------------------------------
node=$(command -v node 2>/dev/null || true)
[ -z "$node" ] && [ -x "$root/bin/node" ] && node=$root/bin/node
if [ -n "$node" ]; then log "node: $node $("$node" --version)"; else missing+=("Node.js (node)"); fi
deps=${WGC_DEPS:-}
for d in "$root" "$repo/.deps"; do
  [ -z "$deps" ] && [ -d "$d/web-test/node_modules/puppeteer-core" ] && deps=$d
done
[ -z "$deps" ] && missing+=("puppeteer-core (\$WGC_DEPS/web-test: scripts/setup_web_tests.sh)")
site=${WGC_SITE:-}
for d in "$root/site" "$repo/build/web"; do
  [ -z "$site" ] && [ -f "$d/local/wgc-core.wasm" ] && site=$d
done
[ -z "$site" ] && missing+=("the static site with the wasm build (build/web: scripts/build.sh)")
wgc=${WGC_BIN:-}
[ -z "$wgc" ] && [ -x /tmp/wgc/bin/wgc ] && wgc=/tmp/wgc/bin/wgc
if [ -z "$wgc" ] && [ -f .device/bundle.tar.xz ]; then
  rm -rf /tmp/wgc && tar -C /tmp -xJf .device/bundle.tar.xz && wgc=/tmp/wgc/bin/wgc
fi
[ -n "$wgc" ] && export LD_LIBRARY_PATH=/tmp/wgc/lib:$LD_LIBRARY_PATH WGC_DEFAULT_MODEL=$repo/models
[ -z "$wgc" ] && log "no native wgc (device_pack.sh's bundle, .device/): the native comparison is left out"

if ((${#missing[@]})); then
  log "MISSING:"
  for m in "${missing[@]}"; do log "  - $m"; done
  [ -z "$chromium" ] || [ -z "$node" ] || [ -z "$deps" ] || [ -z "$site" ] && exit 2
fi

# --- which flags reach the GPU ---------------------------------------------------------------
export WGC_CHROMIUM=$chromium
flagsets=(
  "--enable-features=Vulkan --use-angle=vulkan --use-vulkan=native --ignore-gpu-blocklist --disable-vulkan-surface"
  "--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan --use-angle=vulkan --ignore-gpu-blocklist --enable-gpu --disable-gpu-sandbox"
  "--enable-features=Vulkan --use-webgpu-adapter=default --ignore-gpu-blocklist"
  ""
)
best=""
for f in "${flagsets[@]}"; do
  a=$(WGC_CHROMIUM_FLAGS="$f" timeout 120 "$node" web/test/adapter_probe.mjs --deps "$deps" --site "$site" 2>&1 | tail -1)
  log "flags [${f:-none}]: adapter $a"
  if [ -z "$best" ] && [[ "$a" != *swiftshader* ]] && [[ "$a" != none* ]] && [[ "$a" != *rror* ]]; then best=$f; fi
done
[ "${WGC_WEBDEV_PROBE_ONLY:-0}" = 1 ] && exit 0
if [ -z "$best" ]; then
  log "no flag set gave Chromium a GPU adapter (only SwiftShader or none): the bench runs on the first set anyway"
  best=${flagsets[0]}
fi
log "bench with [$best]"
args=(--site "$site" --deps "$deps" --tokens "${WGC_WEBDEV_TOKENS:-64}" --runs 2 --backend gpu)
[ -n "$wgc" ] && args+=(--wgc "$wgc")
WGC_CHROMIUM_FLAGS="$best" timeout 540 "$node" web/test/local_bench.mjs "${args[@]}"
