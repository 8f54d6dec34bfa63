#!/usr/bin/env bash
# On the GPU machine (the device tool), from the repository root, with .gl, .device/bundle.tar.xz
# and .device/STAMP carried (scripts/device_pack.sh builds the bundle): unpacks the Vulkan loader and
# the bundle (unless scripts/device_run.sh already did in this call), then checks wgc's Faster R-CNN
# (scripts/check_fasterrcnn_device.py) against PyTorch float64. Results in $OUT/fasterrcnn.
#   scripts/check_fasterrcnn_device.sh [--model fasterrcnn|ssdlite] [--classes 91] [--seed 1234] [--device gpu]
set -euo pipefail
if [ ! -x /tmp/wgc/bin/wgc ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  rm -rf /tmp/wgc && tar -C /tmp -xJf "${WGC_BUNDLE:-.device/bundle.tar.xz}"
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=$icd
export LD_LIBRARY_PATH=/tmp/wgc/lib:${LD_LIBRARY_PATH:-}
out=${OUT:-/tmp/out}/fasterrcnn
mkdir -p "$out"
timeout 115 python3 scripts/check_fasterrcnn_device.py --wgc /tmp/wgc/bin/wgc --out "$out" "$@" 2>"$out/stderr.txt" |
  tee "$out/summary.txt"
