#!/usr/bin/env bash
# Issue 34's mixture-of-experts speed rows, on the GPU machine: synthetic Q4_0 models of the real
# shapes (wgc synth-model: Qwen3-30B-A3B, 17 GB; Mixtral-8x7B, 26 GB), wgc bench-llm (pp512,
# tg128) and bench-batched (the serving engine at 16/32/64 streams), with llama.cpp CUDA beside
# it on the same files where .peer/lcpp.tar.xz is carried (../shared/peers/README.md).
#
# Here:  WGC_PACK_TESTS=0 scripts/device_pack.sh
# There: run tool, carry [".gl", ".device/bundle.tar.xz", ".device/STAMP", ".peer/lcpp.tar.xz"],
#        one part per call (each fits the 10-minute limit; the models stay in /tmp/models while
#        the machine is warm, so `qwen-serve` after `qwen` does not write its model again):
#   bash scripts/bench_moe_device.sh qwen        # Qwen3-30B-A3B Q4_0: wgc pp512/tg128, llama-bench
#   bash scripts/bench_moe_device.sh qwen-serve  # the same model: bench-batched, llama-batched-bench
#   bash scripts/bench_moe_device.sh mixtral     # Mixtral-8x7B Q4_0: wgc pp512/tg128, llama-bench
# The tables land in $OUT (llm.txt, batched.txt, peer.txt) and results.tgz.
set -uo pipefail
part=${1:-qwen}
case $part in
  qwen) steps="info llm:qwen3-30b-a3b:q4_0 peer-bench:qwen3-30b-a3b:q4_0" ;;
  qwen-serve) steps="batched:qwen3-30b-a3b:q4_0:--parallel,16+32+64 peer-batched:qwen3-30b-a3b:q4_0" ;;
  mixtral) steps="llm:mixtral-8x7b:q4_0 peer-bench:mixtral-8x7b:q4_0" ;;
  *) echo "usage: $0 qwen|qwen-serve|mixtral" >&2; exit 2 ;;
esac
# Writing a 17-26 GB model takes longer than the default 200 s of device_run.sh's synth step.
WGC_SYNTH_TIMEOUT=${WGC_SYNTH_TIMEOUT:-420} WGC_DEVICE_STEPS="$steps" exec "$(dirname "$0")/device_run.sh"
