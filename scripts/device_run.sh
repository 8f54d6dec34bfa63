#!/usr/bin/env bash
# There (GPU machine, through the device tool): unpacks the Vulkan loader (.gl) and the bundle
# from scripts/device_pack.sh, checks the adapter is the GPU, runs the GPU checks and benchmarks
# named by $WGC_DEVICE_STEPS (default: "info tests bench"), and prints a short table last.
# Results land in $OUT (bench.json, bench.png, logs).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1 && ! ls /usr/share/vulkan/icd.d/nvidia* >/dev/null 2>&1; then
  echo "no NVIDIA Vulkan ICD found"; ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1
fi
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/wgc && tar -C /tmp -xJf .device/bundle.tar.xz
export LD_LIBRARY_PATH=/tmp/wgc/lib:${LD_LIBRARY_PATH:-}
export WGC_BACKEND=gpu WGC_FIXTURES=$PWD/.device/fixtures WGC_MODELS=$PWD/.device/models
wgc=/tmp/wgc/bin/wgc
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
steps=${WGC_DEVICE_STEPS:-info tests bench}
summary=""
for step in $steps; do
  case $step in
    info) $wgc info | tee "$OUT/info.txt" ;;
    tests)
      for t in /tmp/wgc/bin/test_*; do
        if timeout 300 "$t" --gtest_brief=1 >"$OUT/$(basename "$t").log" 2>&1; then r=pass; else r=FAIL; fi
        summary+="$(basename "$t"): $r"$'\n'
      done ;;
    bench)
      $wgc bench ${WGC_BENCH_ARGS:-} --json "$OUT/bench.json" --png "$OUT/bench.png" 2>"$OUT/bench.err" | tee "$OUT/bench.txt" ;;
    bench:*)  # bench:OPS:SIZES, e.g. bench:matmul:2048,4096
      IFS=: read -r _ ops sizes <<<"$step"
      tag=$(echo "$ops" | tr ',' '_')
      timeout 240 $wgc bench --ops "$ops" ${sizes:+--sizes $sizes} --json "$OUT/bench-$tag.json" \
        2>"$OUT/bench-$tag.err" | tee "$OUT/bench-$tag.txt"
      sed -n '/^op /,/^$/p' "$OUT/bench-$tag.txt" >>"$OUT/bench.txt" ;;
    llm:*)  # llm:SHAPE:TYPE, e.g. llm:llama-3.2-1b:q8_0
      IFS=: read -r _ shape type <<<"$step"
      m=/tmp/$shape-$type.gguf
      timeout 200 $wgc synth-model --shape "$shape" --type "$type" --out "$m" --force >/dev/null 2>"$OUT/synth-$shape-$type.err" &&
        timeout 200 $wgc bench-llm --model "$m" -p 512 -n 128 -r 3 --json "$OUT/llm-$shape-$type.json" \
          2>"$OUT/llm-$shape-$type.err" | tee -a "$OUT/llm.txt"
      rm -f "$m" ;;
    *) echo "unknown step $step" ;;
  esac
done
echo "=== summary ==="
printf '%s' "$summary"
[ -f "$OUT/bench.txt" ] && grep -v "^$" "$OUT/bench.txt" | awk '!/^op / || !seen++'
[ -f "$OUT/llm.txt" ] && cat "$OUT/llm.txt"
