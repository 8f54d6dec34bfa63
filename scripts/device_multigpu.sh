#!/usr/bin/env bash
# There (a machine with 2+ GPUs, through the device tool, kind nvidia-h100-x2 or nvidia-h200-x2):
# one model split by layers over two GPUs (issue 40) against the same model on one GPU, and
# llama.cpp CUDA with --split-mode layer on the same file beside it. Each phase fits one call
# (< 10 min); the synthetic models stay in /tmp/models between calls on the same warm machine.
#
# Here: WGC_PACK_TESTS=0 scripts/device_pack.sh; mkdir -p .peer && cp ../shared/peers/* .peer/
# (build_llama_bench.sh and the llama.cpp source tarball; .peer is ignored: carry it). Then, there:
#   scripts/device_multigpu.sh tests     # test_layer_split across the two GPUs (pack with tests for this one)
#   scripts/device_multigpu.sh tg        # bench-llm 8B Q4_0: tg128 + pp512, one GPU vs --gpus 0,1 (50/50)
#   scripts/device_multigpu.sh batched   # bench-batched 8B Q4_0 --parallel 1,16,64: one GPU vs two (2 and 4 micro-batches)
#   scripts/device_multigpu.sh serve     # wgc serve --parallel 64 + bench-serve (1,8,32,64 streams): one vs two
#   scripts/device_multigpu.sh peer      # llama.cpp CUDA (built here, ~3 min): llama-bench -sm none vs layer
#   scripts/device_multigpu.sh peerb     # llama.cpp's llama-batched-bench, -sm none vs layer
#   scripts/device_multigpu.sh synth70   # writes the synthetic Llama 3.1 70B Q8_0 (~75 GB; in the background)
#   scripts/device_multigpu.sh 70b       # that model on --gpus 0,1 (it fits no single 80 GB card)
#   scripts/device_multigpu.sh peer70    # llama.cpp -sm layer on the same 70B file
# (several phases in one call run one after the other). Carry: .gl .device/bundle.tar.xz .device/STAMP .peer
# Results: $OUT/multigpu.txt (and the JSON of each run in $OUT/multigpu.tgz).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/mg
log=$OUT/multigpu.txt
# The bundle, the Vulkan loader and the 8B model through device_run.sh (its info step lists the adapters).
if [ ! -x /tmp/wgc/bin/wgc ] || [ ! -f /tmp/models/llama-3.1-8b-q4_0.gguf ]; then
  WGC_DEVICE_STEPS=info WGC_KEEP_MODELS=1 WGC_PRESYNTH="llama-3.1-8b:q4_0" OUT=/tmp/mg/setup scripts/device_run.sh |
    grep -E "adapter|NVIDIA|bundle" | head -20 | tee -a "$log"
fi
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done
ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=/tmp/wgc/lib:${LD_LIBRARY_PATH:-} WGC_BACKEND=gpu WGC_DEFAULT_MODEL=$PWD/models
wgc=/tmp/wgc/bin/wgc
m8=/tmp/models/llama-3.1-8b-q4_0.gguf
m70=/tmp/models/llama-3.1-70b-q8_0.gguf
say() { echo "== $*" | tee -a "$log"; }
run() {  # run TIMEOUT TAG COMMAND...: its stdout to the log, stderr kept
  local t=$1 tag=$2
  shift 2
  say "$*"
  timeout "$t" "$@" 2>/tmp/mg/$tag.err | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || { echo "exit $rc" | tee -a "$log"; tail -5 /tmp/mg/$tag.err | tee -a "$log"; }
}
peer() {  # llama.cpp built once per machine (../shared/peers/build_llama_bench.sh, ~3 min)
  if [ ! -x /tmp/lb/llama-bench ]; then
    bash .peer/build_llama_bench.sh .peer/llama.cpp-c392e50-src.tar.xz >/tmp/mg/peer-build.log 2>&1 ||
      { tail -20 /tmp/mg/peer-build.log | tee -a "$log"; return 1; }
  fi
}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,memory.used --format=csv | tee -a "$log"
for phase in "$@"; do
  case $phase in
    tests)  # test_layer_split with its second device on the second GPU (needs the bundle packed with
      # its tests, and .device/fixtures .device/models carried)
      WGC_TEST_SPLIT_ADAPTER=1 WGC_FIXTURES=$PWD/.device/fixtures WGC_MODELS=$PWD/.device/models \
        run 400 tests /tmp/wgc/bin/test_layer_split --gtest_brief=1 ;;
    tg)  # latency: tg128 (and pp512) on one GPU, then split 50/50 over two; target tg >= 0.9x one GPU
      run 200 tg1 $wgc bench-llm --model "$m8" -p 512 -n 128 -r 3 --gpus 0 --json /tmp/mg/tg-1gpu.json
      run 200 tg2 $wgc bench-llm --model "$m8" -p 512 -n 128 -r 3 --gpus 0,1 --tensor-split 1,1 \
        --json /tmp/mg/tg-2gpu.json ;;
    batched)  # aggregate decode of many streams (the serving engine, micro-batches pipelined over the GPUs)
      run 200 b1 $wgc bench-batched --model "$m8" --parallel 1,16,64 -p 256 -n 128 --gpus 0 --json /tmp/mg/b-1gpu.json
      run 200 b2 $wgc bench-batched --model "$m8" --parallel 1,16,64 -p 256 -n 128 --gpus 0,1 \
        --json /tmp/mg/b-2gpu.json
      # more micro-batches: shorter pipeline bubbles, smaller batches per GPU (the knob to settle)
      run 150 b2-mb4 $wgc bench-batched --model "$m8" --parallel 64 -p 256 -n 128 --gpus 0,1 --micro-batches 4 \
        --json /tmp/mg/b-2gpu-mb4.json ;;
    serve)  # the server, 64 streams; target aggregate >= 1.6x one GPU
      for g in 0 0,1; do
        slog=/tmp/mg/serve-$g.log
        $wgc serve --model "$m8" --port 0 --parallel 64 --gpus $g 2>"$slog" &
        pid=$!
        for _ in $(seq 600); do grep -q "listening on" "$slog" && break; kill -0 $pid 2>/dev/null || break; sleep 0.5; done
        url=$(grep -o "http://[0-9.]*:[0-9]*" "$slog" | head -1)
        grep -m1 "wgc serve: " "$slog" | tee -a "$log"
        [ -n "$url" ] && run 250 serve-$g $wgc bench-serve --url "$url" --concurrency 1,8,32,64 --prompt-len 128 \
          --gen-len 128 --json /tmp/mg/serve-$g.json
        kill -TERM $pid; wait $pid
      done ;;
    peer)  # llama.cpp CUDA on the same file: one GPU (-sm none) and both (-sm layer, 50/50)
      peer || continue
      export LD_LIBRARY_PATH=/tmp/lb:$LD_LIBRARY_PATH
      run 300 peer-tg /tmp/lb/llama-bench -m "$m8" -p 512 -n 128 -fa 1 -r 3 -sm none,layer -ts 1/1 ;;
    peerb)  # llama.cpp's llama-batched-bench, one GPU and both (after peer has built it)
      peer || continue
      export LD_LIBRARY_PATH=/tmp/lb:$LD_LIBRARY_PATH
      for sm in none layer; do
        run 250 peer-b-$sm /tmp/lb/llama-batched-bench -m "$m8" -ngl 99 -c 50000 -b 2048 -ub 512 -npp 256 -ntg 128 \
          -npl 1,16,64 -fa -sm $sm -ts 1,1
      done ;;
    synth70)  # ~75 GB to /tmp/models: runs on past this call; the 70b phase waits for it
      mkdir -p /tmp/models
      df -h /tmp | tee -a "$log"
      setsid nohup bash -c "$wgc synth-model --shape llama-3.1-70b --type q8_0 --out $m70.part --force && mv $m70.part $m70" \
        >/tmp/mg/synth70.log 2>&1 </dev/null &
      say "synth70 started (pid $!); ls -la /tmp/models shows its progress" ;;
    70b)  # does not fit one 80 GB card: runs split (target: it runs); llama.cpp beside it
      for _ in $(seq 500); do [ -f "$m70" ] && break; sleep 1; done
      [ -f "$m70" ] || { say "70b: $m70 not written yet (synth70 first)"; continue; }
      run 450 tg70 $wgc bench-llm --model "$m70" -p 128 -n 32 -r 1 --gpus 0,1 --json /tmp/mg/tg70-2gpu.json ;;
    peer70)  # llama.cpp on the same 70B file, split by layers
      [ -f "$m70" ] || { say "peer70: no $m70 (synth70 first)"; continue; }
      peer || continue
      LD_LIBRARY_PATH=/tmp/lb:$LD_LIBRARY_PATH run 450 peer70 /tmp/lb/llama-bench -m "$m70" -p 128 -n 32 -fa 1 -r 1 \
        -sm layer -ts 1/1 ;;
    *) say "unknown phase $phase (tg, batched, serve, peer, peerb, synth70, 70b, peer70)" ;;
  esac
done
tar -C /tmp/mg -czf "$OUT/multigpu.tgz" --exclude='*.part' . 2>/dev/null
echo "=== multigpu ==="
cat "$log"
