#!/usr/bin/env bash
# There (GPU machine): an A/B of two or more bundles (scripts/device_pack.sh with WGC_BUNDLE_OUT,
# each a full bundle), the runs alternating: for each round, for each bundle in the order given
# (reversed on even rounds: A B, B A, ...), scripts/device_run.sh with the same WGC_DEVICE_STEPS.
# Synthetic models are made once and kept (also for a next call: WGC_KEEP_MODELS_AFTER=1).
#   WGC_DEVICE_STEPS="llm:llama-3.1-8b:q4_0 ..." scripts/device_ab.sh ROUNDS BUNDLE...
# Results: $OUT/ab.txt (each run's tables, in run order) and $OUT/ab.tgz (each run's files).
set -uo pipefail
rounds=$1
shift
OUT=${OUT:-/tmp/out}
ab=/tmp/ab
rm -rf "$ab" && mkdir -p "$ab" "$OUT"
export WGC_KEEP_MODELS=1
if [ -n "${WGC_PRESYNTH:-}" ]; then
  WGC_BUNDLE=$1 WGC_DEVICE_STEPS=info OUT=$ab/presynth timeout 400 bash scripts/device_run.sh >"$ab/presynth.log" 2>&1
fi
unset WGC_PRESYNTH
for r in $(seq "$rounds"); do
  order=("$@")
  if [ $((r % 2)) = 0 ]; then mapfile -t order < <(printf '%s\n' "$@" | tac); fi
  for b in "${order[@]}"; do
    name=$(basename "$b" .tar.xz)-r$r
    WGC_BUNDLE=$b OUT=$ab/$name timeout "${WGC_RUN_TIMEOUT:-300}" bash scripts/device_run.sh >"$ab/$name.log" 2>&1
    { echo "== $name"; grep -E "^bundle: |^\| |^test_|t/s|pp[0-9]|tg[0-9]" "$ab/$name.log"; } | tee -a "$OUT/ab.txt"
  done
done
tar -C "$ab" -czf "$OUT/ab.tgz" .
[ "${WGC_KEEP_MODELS_AFTER:-0}" = 1 ] || rm -rf /tmp/models
