#!/usr/bin/env bash
# There (GPU machine): how long `wgc serve` takes to recover from a lost GPU device with a given
# model (issue 32): the loss is injected (WGC_INJECT_DEVICE_LOSS, src/gpu/context.cpp) at the
# first submit after a request is under way; prints /health once it is "ok" again (its
# last_recovery_s) and checks that a request after the recovery is answered.
#   scripts/device_recovery.sh WGC MODEL.gguf
set -uo pipefail
wgc=$1 model=$2
trig=$(mktemp -u /tmp/wgc-loss.XXXXXX) log=$(mktemp /tmp/wgc-recovery.XXXXXX)
WGC_INJECT_DEVICE_LOSS=$trig "$wgc" serve --model "$model" --port 0 --parallel 8 2>"$log" &
pid=$!
for _ in $(seq 1200); do grep -q "listening on" "$log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.5; done
url=$(grep -o "http://[0-9.]*:[0-9]*" "$log" | head -1)
req() {
  curl -s -m 300 "$url/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "The GPU", "max_tokens": 64, "temperature": 0}'
}
req >/dev/null
touch "$trig"
start=$(date +%s.%N)
req | head -c 300; echo
h=""
for _ in $(seq 3000); do
  h=$(curl -s "$url/health")
  [[ $h == *'"status":"ok"'* || $h == *'"status": "ok"'* ]] && [[ $h == *recoveries*1* ]] && break
  sleep 0.1
done
echo "health after: $h (wall $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s from the loss)"
[ -e "$trig" ] && echo "the device was never lost (trigger file still there)"
echo "after the recovery: $(req | head -c 200)"
grep "wgc serve:" "$log" | tail -5
kill -TERM $pid; wait $pid
