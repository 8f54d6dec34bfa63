#!/usr/bin/env bash
# Runs the libFuzzer targets in fuzz/ one after another (clang build in build-fuzz/), each on its own
# copy of its seed corpus (fuzz/corpus/<name>, grown in $WGC_FUZZ_WORK/<name>/corpus; the committed
# seeds stay as they are), one process each at nice 10, and prints each run's summary line.
#   scripts/fuzz.sh                      every target
#   scripts/fuzz.sh gguf chat_template   some (names without the fuzz_ prefix)
#   scripts/fuzz.sh --smoke              build every target and run each over its seeds and a few
#                                        thousand mutations (CI's sanitizer leg: they keep compiling)
# WGC_FUZZ_RUNS (default 1000000) executions per target, stopped after WGC_FUZZ_SECONDS (600);
# full logs and any crashing input (crash-*, timeout-*, oom-*) in $WGC_FUZZ_WORK/<name>/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${WGC_FUZZ_BUILD_DIR:-$repo/build-fuzz}
work=${WGC_FUZZ_WORK:-$build/fuzz-work}
runs=${WGC_FUZZ_RUNS:-1000000}
seconds=${WGC_FUZZ_SECONDS:-600}
all=(gguf safetensors json config image chat_template tokenizer_load tokenize onnx server_request grammar)
smoke=0
if [ "${1:-}" = --smoke ]; then
  smoke=1
  shift
  runs=${WGC_FUZZ_RUNS:-3000} seconds=${WGC_FUZZ_SECONDS:-60}
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all[@]}"); fi

cmake -S "$repo" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DWGC_FUZZ=ON -DWGC_BUILD_TESTS=OFF \
  -DWGC_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

status=0
for t in "${targets[@]}"; do
  dir=$work/$t
  mkdir -p "$dir/corpus"
  cp -n "$repo/fuzz/corpus/$t/"* "$dir/corpus/"
  max_len=4096
  [ "$t" != chat_template ] || max_len=8192  # real templates run to a few KiB
  args=(-runs="$runs" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024
        -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$dir/")
  [ ! -f "$repo/fuzz/$t.dict" ] || args+=(-dict="$repo/fuzz/$t.dict")
  start=$(date +%s)
  rc=0
  nice -n 10 "$build/fuzz/fuzz_$t" "${args[@]}" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || [ "$smoke" = 0 ] || tail -40 "$dir/log"
  end=$(date +%s)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 || true)
  units=$(ls "$dir/corpus" | wc -l)
  echo "fuzz_$t: exit $rc, ${execs:-?} executions in $((end - start)) s, $cov, corpus $units units (log: $dir/log)"
  [ "$rc" = 0 ] || status=1
done
exit $status
