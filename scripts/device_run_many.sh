#!/usr/bin/env bash
# There (GPU machine): scripts/device_run.sh once per bundle in DIR (default .device/b), so that
# several branches are measured in one device call. For each DIR/NAME.tar.xz (thin bundles from
# `WGC_PACK_THIN=1 WGC_BUNDLE_OUT=DIR/NAME.tar.xz scripts/device_pack.sh` go over the full
# .device/bundle.tar.xz), DIR/steps-NAME.txt holds its WGC_DEVICE_STEPS (one line) and optional
# DIR/env-NAME.txt lines of VAR=value for that run. Results: $OUT/summary.txt (each run's
# summary) and $OUT/many.tgz (NAME/ with each run's files, NAME.log); the device tool brings back
# only a few files. Synthetic models are made once and kept across the runs.
set -uo pipefail
dir=${1:-.device/b}
OUT=${OUT:-/tmp/out}
many=/tmp/many
rm -rf "$many" && mkdir -p "$many" "$OUT"
export WGC_KEEP_MODELS=1
# WGC_PRESYNTH (device_run.sh): the synthetic models made once, in parallel, with the full bundle,
# before the first branch runs (so no branch's time limit pays for them).
if [ -n "${WGC_PRESYNTH:-}" ]; then
  echo "== presynth: $WGC_PRESYNTH"
  WGC_DEVICE_STEPS=info OUT=$many/presynth timeout 400 bash scripts/device_run.sh >"$many/presynth.log" 2>&1
  ls -la /tmp/models
fi
unset WGC_PRESYNTH
for b in "$dir"/*.tar.xz; do
  name=$(basename "$b" .tar.xz)
  [ -f "$dir/steps-$name.txt" ] || { echo "== $name: no steps-$name.txt, skipped"; continue; }
  echo "== $name"
  mkdir -p "$many/$name"
  (
    if [ -f "$dir/env-$name.txt" ]; then set -a; . "$dir/env-$name.txt"; set +a; fi
    WGC_BASE_BUNDLE=.device/bundle.tar.xz WGC_BUNDLE=$b OUT=$many/$name \
      WGC_DEVICE_STEPS="$(head -1 "$dir/steps-$name.txt")" timeout "${WGC_RUN_TIMEOUT:-300}" bash scripts/device_run.sh
  ) >"$many/$name.log" 2>&1
  { echo "== $name"; sed -n '/^bundle: /p; /=== summary ===/,$p' "$many/$name.log"; } | tee -a "$OUT/summary.txt"
done
tar -C "$many" -czf "$OUT/many.tgz" .
# WGC_KEEP_MODELS_AFTER=1: leave the models for a next call on the same (warm) machine.
[ "${WGC_KEEP_MODELS_AFTER:-0}" = 1 ] || rm -rf /tmp/models
