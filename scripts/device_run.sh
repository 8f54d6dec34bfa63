#!/usr/bin/env bash
# There (GPU machine, through the device tool): unpacks the Vulkan loader (.gl) and the bundle
# from scripts/device_pack.sh, checks the adapter is the GPU, runs the GPU checks and benchmarks
# named by $WGC_DEVICE_STEPS (default: "info tests bench"), and prints a short table last.
# Results land in $OUT: info.txt, bench.txt, llm.txt and results.tgz (JSON, PNG charts, logs).
set -uo pipefail
# WGC_BUNDLE: the bundle to run (default .device/bundle.tar.xz; device_pack.sh's WGC_BUNDLE_OUT).
bundle=${WGC_BUNDLE:-.device/bundle.tar.xz}
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1 && ! ls /usr/share/vulkan/icd.d/nvidia* >/dev/null 2>&1; then
  echo "no NVIDIA Vulkan ICD found"; ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1
fi
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# WGC_BASE_BUNDLE: a full bundle unpacked first, under a thin one (device_pack.sh's WGC_PACK_THIN:
# the binaries and libwgc only), so that several branches' builds fit in one call's carry.
rm -rf /tmp/wgc && { [ -z "${WGC_BASE_BUNDLE:-}" ] || { tar -C /tmp -xJf "$WGC_BASE_BUNDLE" && rm -f /tmp/wgc/bin/*; }; } &&
  tar -C /tmp -xJf "$bundle"
if [ -f /tmp/wgc/STAMP ]; then echo "bundle: $bundle, $(cat /tmp/wgc/STAMP)"; elif [ -f .device/STAMP ]; then echo "bundle: $(cat .device/STAMP)"; fi
export LD_LIBRARY_PATH=/tmp/wgc/lib:${LD_LIBRARY_PATH:-}
export WGC_BACKEND=gpu WGC_FIXTURES=$PWD/.device/fixtures WGC_MODELS=$PWD/.device/models
# The built-in model from the checkout (the bundle's binaries look for it under the build's source
# path, which this machine does not have).
export WGC_DEFAULT_MODEL=$PWD/models
wgc=/tmp/wgc/bin/wgc
# Everything goes to $RES; $OUT gets the text tables and one tarball of the rest (the device
# tool brings back at most 8 files).
OUT=${OUT:-/tmp/out}; RES=/tmp/res; rm -rf "$RES"; mkdir -p "$OUT" "$RES"
steps=${WGC_DEVICE_STEPS:-info tests bench}
# The synthetic model of a shape and type (written once, kept for later steps), or "" on failure.
synth() {
  local m=/tmp/models/$1-$2.gguf
  mkdir -p /tmp/models
  if [ ! -f "$m" ]; then
    timeout ${WGC_SYNTH_TIMEOUT:-200} $wgc synth-model --shape "$1" --type "$2" --out "$m" --force >/dev/null 2>"$RES/synth-$1-$2.err" || rm -f "$m"
  fi
  echo "$m"
}
# WGC_PRESYNTH="SHAPE:TYPE ...": make these synthetic models first, all at once (each synth-model
# runs mostly on one core; 8B models take ~40 s each one after the other).
for st in ${WGC_PRESYNTH:-}; do synth "${st%%:*}" "${st#*:}" >/dev/null & done
wait
summary=""
for step in $steps; do
  case $step in
    info) $wgc info | tee "$RES/info.txt" ;;
    tests|tests:*)  # every test binary, or those named in $WGC_DEVICE_TESTS (e.g. "test_llm_batched test_scheduler"); tests:GTEST_FILTER: with that filter
      filter=${step#tests}; filter=${filter#:}
      for t in ${WGC_DEVICE_TESTS:-/tmp/wgc/bin/test_*}; do
        [[ "$t" == /* ]] || t=/tmp/wgc/bin/$t
        if timeout 300 "$t" --gtest_brief=1 ${filter:+--gtest_filter=$filter} >"$RES/$(basename "$t").log" 2>&1; then r=pass; else r=FAIL; fi
        summary+="$(basename "$t"): $r"$'\n'
        echo "$(basename "$t"): $r"
        [ "$r" = pass ] || grep -E "^\[  FAILED  \]|Failure|error:" "$RES/$(basename "$t").log" | head -8
      done ;;
    bench)
      $wgc bench ${WGC_BENCH_ARGS:-} --json "$RES/bench.json" --png "$RES/bench.png" 2>"$RES/bench.err" | tee "$RES/bench.txt" ;;
    bench:*)  # bench:OPS:SIZES[:LLM_TUNING], e.g. bench:matmul:2048,4096 or bench:llm.matvec:4096:mvq_tpr=16/mvq_rows=4
      IFS=: read -r _ ops sizes tuning <<<"$step"
      tag=$(echo "$ops-${tuning:-}" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-120)
      WGC_LLM_TUNING=${tuning:-} timeout 240 $wgc bench --ops "$ops" ${sizes:+--sizes $sizes} --json "$RES/bench-$tag.json" \
        2>"$RES/bench-$tag.err" | tee "$RES/bench-$tag.txt"
      { [ -n "${tuning:-}" ] && echo "WGC_LLM_TUNING=$tuning"; sed -n '/^op /,/^$/p' "$RES/bench-$tag.txt"; } >>"$RES/bench.txt" ;;
    conv:*)  # conv:OPS:SIZES[:TUNING], e.g. conv:conv2d:conv3x3-64-56-n32:igemm_bm=128,igemm_bn=64
      IFS=: read -r _ ops sizes tuning <<<"$step"
      tag=$(echo "$ops-${sizes:-default}-${tuning:-}" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-120)
      WGC_CONV_TUNING=${tuning:-} timeout 300 $wgc bench --ops "$ops" ${sizes:+--sizes $sizes} \
        --json "$RES/conv-$tag.json" --png "$RES/conv-$tag.png" 2>"$RES/conv-$tag.err" | tee "$RES/conv-$tag.txt"
      { [ -n "${tuning:-}" ] && echo "WGC_CONV_TUNING=$tuning"; sed -n '/^op /,/^$/p' "$RES/conv-$tag.txt"; } >>"$RES/bench.txt" ;;
    llm:*)  # llm:SHAPE:TYPE[:EXTRA], e.g. llm:llama-3.2-1b:q8_0 or llm:llama-3.1-8b:q4_0:--decode-ahead,1
      # (--tuning sets: knobs joined by '/', sets by ';', e.g. --tuning,mvq_rows=2;mvq_rows=4)
      IFS=: read -r _ shape type extra <<<"$step"
      m=$(synth "$shape" "$type")
      tag=$shape-$type$(echo "${extra:-}" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-120)
      defaults=""  # -p 512 -n 128 -r 3 unless the step gives its own
      for d in "-p 512" "-n 128" "-r 3"; do [[ ",${extra:-}," == *",${d% *},"* ]] || defaults+=" $d"; done
      [ -f "$m" ] && timeout ${WGC_LLM_TIMEOUT:-300} $wgc bench-llm --model "$m" $defaults ${extra//,/ } ${WGC_LLM_ARGS:-} \
          --json "$RES/llm-$tag.json" 2>"$RES/llm-$tag.err" | tee -a "$RES/llm.txt" ;;
    spec:*)  # spec:TARGET_SHAPE:DRAFT_SHAPE:TYPE[:EXTRA]: bench-llm's plain decode and speculative decoding
      # (the draft proposing, the target verifying) in one process, e.g.
      # spec:llama-3.1-8b:llama-3.2-1b:q4_0:--draft-acceptance,0.5+0.7+0.9+1,--draft-tokens,4+8
      # (commas become spaces, then + becomes a comma; random weights agree on nothing, so give rates)
      IFS=: read -r _ shape dshape type extra <<<"$step"
      m=$(synth "$shape" "$type"); dm=$(synth "$dshape" "$type")
      tag=spec-$shape-$dshape-$type$(echo "${extra:-}" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-120)
      defaults=""  # -p 0 -n 128 -r 3 unless the step gives its own
      for d in "-p 0" "-n 128" "-r 3"; do [[ ",${extra:-}," == *",${d% *},"* ]] || defaults+=" $d"; done
      args=${extra//,/ }
      [ -f "$m" ] && [ -f "$dm" ] && timeout ${WGC_LLM_TIMEOUT:-300} $wgc bench-llm --model "$m" --draft-model "$dm" \
          $defaults ${args//+/,} --json "$RES/llm-$tag.json" 2>"$RES/llm-$tag.err" | tee -a "$RES/llm.txt" ;;
    specbatched:*)  # specbatched:TARGET_SHAPE:DRAFT_SHAPE:TYPE[:EXTRA]: wgc bench-batched --draft-model, the
      # scheduler's speculative decoding against its plain decode at each --parallel count, e.g.
      # specbatched:llama-3.1-8b:llama-3.2-1b:q4_0:--draft-acceptance,0+0.5+0.7+0.9,--draft-tokens,3+5
      # (commas become spaces, then + becomes a comma; random weights agree on nothing, so give rates)
      IFS=: read -r _ shape dshape type extra <<<"$step"
      m=$(synth "$shape" "$type"); dm=$(synth "$dshape" "$type")
      tag=specbatched-$shape-$dshape-$type$(echo "${extra:-}" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-120)
      defaults=""  # --parallel 1,16,64 -p 256 -n 128 unless the step gives its own
      for d in "--parallel 1,16,64" "-p 256" "-n 128"; do [[ ",${extra:-}," == *",${d% *},"* ]] || defaults+=" $d"; done
      args=${extra//,/ }
      [ -f "$m" ] && [ -f "$dm" ] && timeout 500 $wgc bench-batched --model "$m" --draft-model "$dm" $defaults \
          ${args//+/,} --json "$RES/batched-$tag.json" 2>"$RES/batched-$tag.err" | tee -a "$RES/batched.txt" ;;
    batched:*)  # batched:SHAPE:TYPE[:EXTRA]: wgc bench-batched (llama-batched-bench), e.g. batched:llama-3.1-8b:q4_0
      # or batched:llama-3.1-8b:q4_0:--parallel,16+64,-r,3 (commas become spaces, then + becomes a comma)
      IFS=: read -r _ shape type extra <<<"$step"
      m=$(synth "$shape" "$type")
      tag=$shape-$type$(echo "${extra:-}" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-120)
      defaults=""  # --parallel 1,8,16,32,64 -p 256 -n 128 unless the step gives its own
      for d in "--parallel 1,8,16,32,64" "-p 256" "-n 128"; do [[ ",${extra:-}," == *",${d% *},"* ]] || defaults+=" $d"; done
      args=${extra//,/ }
      [ -f "$m" ] && timeout 400 $wgc bench-batched --model "$m" $defaults ${args//+/,} --json "$RES/batched-$tag.json" \
          --png "$RES/batched-$tag.png" 2>"$RES/batched-$tag.err" | tee -a "$RES/batched.txt" ;;
    prof:*)  # prof:COMMAND:SHAPE:TYPE:ARGS: one wgc COMMAND (bench-llm, bench-batched) on the synthetic model
      # under WGC_PROFILE=1, its batches summed by scripts/profile_sum.py (GPU time per kernel of a
      # step); e.g. prof:bench-batched:llama-3.1-8b:q4_0:--parallel,64,-p,256,-n,8,--no-warmup
      IFS=: read -r _ cmd shape type extra <<<"$step"
      m=$(synth "$shape" "$type")
      args=${extra//,/ }
      tag=$cmd-$shape-$type$(echo "${extra:-}" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-100)
      if [ -f "$m" ]; then
        WGC_PROFILE=1 timeout 300 $wgc "$cmd" --model "$m" ${args//+/,} >"$RES/prof-$tag.out" 2>"$RES/prof-$tag.err"
        { echo "== profile: wgc $cmd $shape $type ${args//+/,}"; python3 scripts/profile_sum.py "$RES/prof-$tag.err" |
            head -60; } | tee -a "$RES/prof.txt"
        rm -f "$RES/prof-$tag.err"  # large; the summary keeps what matters
      fi ;;
    serve:*)  # serve:SHAPE:TYPE[:EXTRA]: wgc serve, measured by wgc bench-serve; e.g. serve:llama-3.1-8b:q4_0 or
      # serve:llama-3.1-8b:q4_0:--gpu,1,--parallel,32 (EXTRA: wgc serve's arguments, commas become spaces)
      IFS=: read -r _ shape type extra <<<"$step"
      m=$(synth "$shape" "$type")
      tag=$shape-$type$(echo "${extra:-}" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-120)
      defaults=""  # --parallel 64 unless the step gives its own
      [[ ",${extra:-}," == *",--parallel,"* ]] || defaults="--parallel 64"
      if [ -f "$m" ]; then
        log="$RES/serve-$tag.log"
        $wgc serve --model "$m" --port 0 $defaults ${extra//,/ } 2>"$log" &
        pid=$!
        for _ in $(seq 600); do grep -q "listening on" "$log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.5; done
        url=$(grep -o "http://[0-9.]*:[0-9]*" "$log" | head -1)
        { echo "wgc serve $defaults ${extra//,/ }: $(grep -m1 'wgc serve: ' "$log")"; } >>"$RES/serve.txt"
        [ -n "$url" ] && timeout 500 $wgc bench-serve --url "$url" \
            ${WGC_SERVE_BENCH_ARGS:---concurrency 1,8,32,64 --prompt-len 128 --gen-len 128} \
            --json "$RES/serve-$tag.json" --png "$RES/serve-$tag.png" 2>"$RES/serve-$tag.err" | tee -a "$RES/serve.txt"
        command -v nvidia-smi >/dev/null &&
          nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv >>"$RES/serve.txt"
        kill -TERM $pid; wait $pid; echo "wgc serve exit status $? after SIGTERM" >>"$RES/serve.txt"
      fi ;;
    serve-constrained:*)  # serve-constrained:SHAPE:TYPE[:CLIENTS]: the cost of constrained sampling in wgc serve
      # (scripts/bench_constrained.py: free vs json_schema completions, aggregate tokens/s)
      IFS=: read -r _ shape type clients <<<"$step"
      m=$(synth "$shape" "$type")
      [ -f "$m" ] && timeout 300 python3 scripts/bench_constrained.py --wgc "$wgc" --model "$m" \
          --clients "${clients:-64}" --max-tokens 64 2>"$RES/serve-constrained.err" | tee -a "$RES/serve-constrained.txt"
      ;;
    peer-bench:*|peer-batched:*)  # llama.cpp CUDA beside wgc on the same file (.peer/lcpp.tar.xz, see
      # ../shared/peers/README.md): peer-bench:SHAPE:TYPE (llama-bench -p 512 -n 128 -fa 1 -r 3),
      # peer-batched:SHAPE:TYPE (llama-batched-bench -npp 256 -ntg 128 -npl 1,8,16,32,64 -fa)
      IFS=: read -r kind shape type <<<"$step"
      m=$(synth "$shape" "$type")
      if [ ! -x /tmp/lb/llama-bench ] && [ -f .peer/lcpp.tar.xz ]; then mkdir -p /tmp/lb && tar -C /tmp/lb -xJf .peer/lcpp.tar.xz; fi
      if [ ! -x /tmp/lb/llama-bench ]; then echo "peer: no .peer/lcpp.tar.xz carried" | tee -a "$RES/peer.txt"
      elif [ -f "$m" ] && [ "$kind" = peer-bench ]; then
        { echo "llama.cpp llama-bench $shape $type"; LD_LIBRARY_PATH=/tmp/lb timeout 300 /tmp/lb/llama-bench -m "$m" \
            -p 512 -n 128 -fa 1 -r 3 2>"$RES/peer-$shape-$type.err"; } | tee -a "$RES/peer.txt"
      elif [ -f "$m" ]; then
        { echo "llama.cpp llama-batched-bench $shape $type"; LD_LIBRARY_PATH=/tmp/lb timeout 400 /tmp/lb/llama-batched-bench \
            -m "$m" -ngl 99 -c 50000 -b 2048 -ub 512 -npp 256 -ntg 128 -npl 1,8,16,32,64 -fa \
            2>"$RES/peer-batched-$shape-$type.err"; } | tee -a "$RES/peer.txt"
      fi ;;
    cnn|cnn:*)  # cnn[:MODEL]: export a torchvision model, check it, wgc bench-cnn vs PyTorch and ORT
      IFS=: read -r _ cmodel <<<"$step"
      WGC=$wgc RES=$RES timeout 580 scripts/bench_cnn_device.sh ${cmodel:-mobilenet_v2} >"$RES/cnn.log" 2>&1
      [ -f "$RES/cnn.txt" ] && cp "$RES/cnn.txt" "$OUT/" && cat "$RES/cnn.txt" ;;
    dense|dense:*)  # dense[:MODELS]: segmentation and ViT-B/16 exported full size, checked, wgc vs PyTorch and ORT
      IFS=: read -r _ dmodels <<<"$step"
      WGC=$wgc RES=$RES timeout 580 scripts/bench_dense_device.sh ${dmodels:-lraspp,deeplabv3,fcn,vit} \
        >"$RES/dense.log" 2>&1
      [ -f "$RES/dense.txt" ] && cp "$RES/dense.txt" "$OUT/" && cat "$RES/dense.txt" ;;
    cpu-llm|cpu-llm:*)  # cpu-llm[:ARGS]: wgc's CPU engine vs llama.cpp's CPU backend on every core
      # (scripts/bench_cpu_llm.sh; the peer offline from .device/npm, which `scripts/bench_cpu_llm.sh
      # --pack .device/npm` fills on the CPU machine). ARGS: the script's, commas become spaces.
      # Without node there, .device/peer-node.tar.xz (`scripts/bench_cpu_llm.sh --npm .device/npm
      # --pack-portable .device/peer-node.tar.xz`: node's binary and the installed peer) stands in.
      IFS=: read -r _ extra <<<"$step"
      peer_args=(--npm .device/npm)
      if ! command -v npm >/dev/null && [ -f .device/peer-node.tar.xz ]; then
        mkdir -p /tmp/peer-node && tar -C /tmp/peer-node -xJf .device/peer-node.tar.xz
        export PATH=/tmp/peer-node/bin:$PATH
        peer_args=(--peer /tmp/peer-node/peer)
      fi
      if ! command -v node >/dev/null || { ! command -v npm >/dev/null && [ ! -d /tmp/peer-node/peer ]; }; then
        summary+="cpu-llm: no node/npm on this machine and no .device/peer-node.tar.xz"$'\n'
      else
        timeout 580 scripts/bench_cpu_llm.sh --wgc $wgc "${peer_args[@]}" --out /tmp/cpu-llm \
            ${extra:+${extra//,/ }} 2>"$RES/cpu-llm.err" | tee "$RES/cpu-llm.txt"
        cp /tmp/cpu-llm/results.json /tmp/cpu-llm/cpu_llm.png /tmp/cpu-llm/*.txt "$RES/" 2>/dev/null
        echo "nproc: $(nproc); $(grep -m1 "model name" /proc/cpuinfo)" >>"$RES/cpu-llm.txt"
      fi ;;
    python|python:*)  # python[:SHAPE:TYPE]: python/bench.py (per-call cost from Python vs the same calls in
      # C++; llm.generate vs wgc generate on the built-in model, or the synthetic SHAPE:TYPE one).
      # Needs the bundle packed with WGC_PACK_PYTHON=1 (Debian's Python 3.11, NumPy and the package).
      IFS=: read -r _ shape type <<<"$step"
      py=/tmp/wgc/python
      if [ ! -x "$py/bin/python3.11" ]; then
        echo "python: not in the bundle (pack with WGC_PACK_PYTHON=1 scripts/device_pack.sh)" | tee -a "$RES/python.txt"
      else
        m=""; [ -n "${shape:-}" ] && m=$(synth "$shape" "$type")
        # libwgc comes from the bundle's lib/ (LD_LIBRARY_PATH), so the built-in model is named.
        WGC_DEFAULT_MODEL=$py/site/wgc/share/wgc/models PYTHONHOME=$py PYTHONPATH=$py/site PYTHONNOUSERSITE=1 \
          timeout 500 "$py/bin/python3.11" python/bench.py \
          --cli $wgc --backend gpu ${m:+--model $m} ${WGC_PY_BENCH_ARGS:-} --json "$RES/python-bench.json" \
          2>"$RES/python.err" | tee -a "$RES/python.txt"
      fi ;;
    *) echo "unknown step $step" ;;
  esac
done
for f in info.txt bench.txt llm.txt batched.txt prof.txt serve.txt serve-constrained.txt peer.txt python.txt cpu-llm.txt; do [ -f "$RES/$f" ] && cp "$RES/$f" "$OUT/"; done
tar -C "$RES" -czf "$OUT/results.tgz" .
[ "${WGC_KEEP_MODELS:-0}" = 1 ] || rm -rf /tmp/models  # kept for the next run in the same call
echo "=== summary ==="
printf '%s' "$summary"
[ -f "$RES/bench.txt" ] && grep -v "^$" "$RES/bench.txt" | awk '!/^op / || !seen++'
[ -f "$RES/llm.txt" ] && grep -E "^\| (llama|model)|host time" "$RES/llm.txt"
[ -f "$RES/batched.txt" ] && grep -E "^(\||model)" "$RES/batched.txt"
[ -f "$RES/serve.txt" ] && cat "$RES/serve.txt"
[ -f "$RES/peer.txt" ] && grep -E "^(\\||llama.cpp)" "$RES/peer.txt"
[ -f "$RES/prof.txt" ] && cat "$RES/prof.txt"
[ -f "$RES/python.txt" ] && cat "$RES/python.txt"
[ -f "$RES/cpu-llm.txt" ] && cat "$RES/cpu-llm.txt"
