#!/usr/bin/env bash
# wgc's CPU engine against llama.cpp's CPU backend (issue 13), side by side in one run: prefill and
# decode tokens/s of Llama-3.2-1B (random weights from `wgc synth-model`, the real shapes) in each
# type, the same GGUF file and the same number of threads for both. The peer is npm's
# node-llama-cpp 3.21.1 with its prebuilt linux-x64 binary (llama.cpp's CPU backend, which picks
# its kernels for this processor at run time), installed here from the pinned lock file
# (scripts/bench_cpu_llm/package-lock.json; --ignore-scripts, no compiler, gpu: false).
#
#   scripts/bench_cpu_llm.sh [--npm DIR] [--out DIR] [--types q4_0,q8_0,f16] [--threads N]
#                            [-p 128] [-n 32] [-r 3] [--passes 1] [--wgc PATH] [--avx2 | --peer-variant NAME]
#   scripts/bench_cpu_llm.sh --pack DIR   # fetch the peer's .tgz files into DIR (needs the registry)
#   scripts/bench_cpu_llm.sh [--npm DIR] [--avx2] --pack-portable FILE.tar.xz
#                            # node's binary and the installed peer in one file (31 MB), for a
#                            # machine without node or npm: unpack it there and pass --peer DIR/peer
#                            # (with --avx2 / --peer-variant: that llama.cpp CPU variant alone)
#
#  --npm DIR   install the peer from the .tgz files --pack put in DIR, offline (for the GPU
#              machine, which has no network)
#  --peer DIR  an installed peer (the `peer` folder of --pack-portable's file): no npm needed
#  --out DIR   results (default build/bench-cpu-llm): results.md (the table), results.json,
#              cpu_llm.png (the chart), the model files (kept for the next run) and the peer
#  --threads N threads of both engines (default: the processors this shell may use, nproc)
#  -p, -n, -r  prompt tokens, decoded tokens, timed runs (the median is reported)
#  --passes N  the whole comparison N times, which engine goes first alternating from pass to pass,
#              the table giving the median over the passes of each engine's medians (a shared
#              machine's load drifts: passes spread both engines over the same stretches of it)
#  --types     any of q4_0, q8_0, q4_k (llama.cpp's Q4_K_M mix), q6_k, f16, bf16, f32
#  --peer-variant NAME  llama.cpp's CPU variant to load (libggml-cpu-NAME.so: haswell, skylakex,
#              icelake, sapphirerapids, zen4, ...) instead of the best one for this processor:
#              ggml loads the highest-scoring libggml-cpu-*.so of the binary's folder, so the peer
#              is copied (hard links) with that one variant alone
#  --cpu-time  also tokens per CPU second (with --threads 1 only): a measure of the work that other
#              processes on a shared machine do not change, where wall time with them running does
#              (llama.cpp: its process's CPU time per run, median; wgc: the CPU time of bench-llm
#              with R + 1 runs less that with 1, without warm-ups, over R)
#  --avx2      the AVX2 level on both sides: WGC_CPU_ISA=avx2 and --peer-variant haswell (llama.cpp's
#              AVX2 + FMA + F16C + BMI2 build), for processors without AVX-512 measured on one with it
#
# Load: the machine should be quiet; the table records `uptime`'s load before and after.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
here="$repo/scripts/bench_cpu_llm"
log() { printf '[bench_cpu_llm] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The peer's two packages, pinned by version and sha256 of their npm tarballs (the lock file pins
# every dependency by sha512).
declare -A kPinned=(
  [node-llama-cpp-3.21.1.tgz]=7a231d6bafa14142a1cbed9893d4ec5bc6041b2a5f5939a623accaab4203c11f
  [node-llama-cpp-linux-x64-3.21.1.tgz]=4b5b65a8b2611d8af94349b02d815c0f424a30a0a19aef2be5db25ecfef6730f
)

npm_dir="" peer_dir="" portable="" variant="" cpu_time=0 passes=1 out="$repo/build/bench-cpu-llm" types="q4_0,q8_0,f16" threads=$(nproc) p=128 n=32 r=3 pack=""
wgc="$repo/build/wgc"
while [ $# -gt 0 ]; do
  case $1 in
    --pack) pack=${2:?--pack DIR}; shift 2 ;;
    --npm) npm_dir=${2:?--npm DIR}; shift 2 ;;
    --peer) peer_dir=${2:?--peer DIR}; shift 2 ;;
    --pack-portable) portable=${2:?--pack-portable FILE.tar.xz}; shift 2 ;;
    --out) out=${2:?--out DIR}; shift 2 ;;
    --types) types=${2:?--types q4_0,q8_0,f16}; shift 2 ;;
    --threads) threads=${2:?--threads N}; shift 2 ;;
    --wgc) wgc=${2:?--wgc PATH}; shift 2 ;;
    --peer-variant) variant=${2:?--peer-variant NAME}; shift 2 ;;
    --avx2) variant=haswell; export WGC_CPU_ISA=avx2; shift ;;
    --cpu-time) cpu_time=1; shift ;;
    -p) p=${2:?-p N}; shift 2 ;;
    -n) n=${2:?-n N}; shift 2 ;;
    -r) r=${2:?-r N}; shift 2 ;;
    --passes) passes=${2:?--passes N}; shift 2 ;;
    -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (--help lists them)" ;;
  esac
done
[ -n "$peer_dir" ] || command -v npm >/dev/null || die "npm not found (apt-get install npm)"
[ $cpu_time = 0 ] || [ "$threads" = 1 ] ||
  die "--cpu-time compares the engines with one thread each (--threads 1): waiting threads spin, burning CPU time without work"

# The lock's packages that this platform installs (not the optional GPU/ARM builds): name@version.
lock_specs() {
  node -e '
    const lock = require(process.argv[1]);
    for (const [key, p] of Object.entries(lock.packages))
      if (key && !p.optional) console.log(key.slice(key.lastIndexOf("node_modules/") + 13) + "@" + p.version);
  ' "$here/package-lock.json" | sort -u
}

check_pinned() {  # DIR: the two pinned tarballs are there with their sha256
  local f
  for f in "${!kPinned[@]}"; do
    [ -f "$1/$f" ] || die "$1/$f is missing"
    echo "${kPinned[$f]}  $1/$f" | sha256sum -c --status || die "sha256 mismatch: $1/$f"
  done
}

if [ -n "$pack" ]; then
  mkdir -p "$pack"
  pack=$(cd "$pack" && pwd)
  log "fetching $(lock_specs | wc -l) packages into $pack"
  (cd "$pack" && lock_specs | xargs npm pack --silent --pack-destination . >/dev/null)
  check_pinned "$pack"
  log "done: carry $pack to the other machine and run: scripts/bench_cpu_llm.sh --npm $pack"
  exit 0
fi

# The peer installed from the registry or offline from --npm DIR (npm ci checks every tarball
# against the lock's sha512) into $1.
install_peer() {
  local dest=$1
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$here/package.json" "$here/package-lock.json" "$dest/"
  local flags=(--ignore-scripts --omit=optional --no-audit --no-fund --loglevel=error)
  if [ -n "$npm_dir" ]; then
    npm_dir=$(cd "$npm_dir" && pwd)
    check_pinned "$npm_dir"
    log "installing node-llama-cpp offline from $npm_dir"
    local cache
    cache=$(mktemp -d)
    npm cache add --cache "$cache" --loglevel=error "$npm_dir"/*.tgz
    (cd "$dest" && npm ci --offline --cache "$cache" "${flags[@]}")
    rm -rf "$cache"
  else
    log "installing node-llama-cpp from the registry"
    (cd "$dest" && npm ci "${flags[@]}")
  fi
  touch "$dest/.installed"
}

if [ -n "$portable" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  install_peer "$tmp/peer"
  # The git bundle of llama.cpp's source (34 MB) is only for building from source (never done here).
  rm -f "$tmp/peer/node_modules/node-llama-cpp/llama/gitRelease.bundle"
  # With --peer-variant / --avx2: that CPU variant alone (the others are 1-1.6 MB each).
  if [ -n "$variant" ]; then
    vbins="$tmp/peer/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
    [ -f "$vbins/libggml-cpu-$variant.so" ] || die "no llama.cpp CPU variant '$variant'"
    find "$vbins" -name 'libggml-cpu-*.so' ! -name "libggml-cpu-$variant.so" -delete
  fi
  mkdir -p "$tmp/bin"
  cp "$(readlink -f "$(command -v node)")" "$tmp/bin/node"
  log "packing node $(node --version) and the peer into $portable"
  tar -C "$tmp" -cf - bin peer | xz -T0 -6 >"$portable"
  log "done ($(du -h "$portable" | cut -f1)): unpack it into D, then: PATH=D/bin:\$PATH scripts/bench_cpu_llm.sh --peer D/peer"
  exit 0
fi

[ -x "$wgc" ] || die "$wgc not found: build first (scripts/build.sh)"
mkdir -p "$out/models"
out=$(cd "$out" && pwd)

peer="$out/peer"
if [ -n "$peer_dir" ]; then
  [ -f "$peer_dir/.installed" ] || die "$peer_dir is not an installed peer (see --pack-portable)"
  peer=$(cd "$peer_dir" && pwd)
elif [ ! -f "$peer/.installed" ] || ! cmp -s "$here/package-lock.json" "$peer/package-lock.json"; then
  install_peer "$peer"
fi
if [ -n "$variant" ]; then
  bins=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
  [ -f "$peer/$bins/libggml-cpu-$variant.so" ] ||
    die "no llama.cpp CPU variant '$variant' (have: $(cd "$peer/$bins" && ls libggml-cpu-*.so | sed 's/libggml-cpu-//; s/\.so//' | tr '\n' ' '))"
  one="$out/peer-$variant"
  rm -rf "$one"
  cp -al "$peer" "$one" 2>/dev/null || cp -a "$peer" "$one"
  find "$one/$bins" -name 'libggml-cpu-*.so' ! -name "libggml-cpu-$variant.so" -delete
  peer=$one
fi
cp "$here/llama_cpp_bench.mjs" "$peer/"

load() { uptime | sed 's/.*load average: //'; }
cpu_seconds() {  # COMMAND...: its user + system CPU seconds (bash's time keyword)
  local TIMEFORMAT='%3U %3S'
  { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{print $1 + $2}'
}
cpu=$("$wgc" info --backend cpu | sed 's/^CPU engine: //')
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx512f|avx512bw|avx512_vnni|avx_vnni|avx512_bf16)$' | tr '\n' ' ' | sed 's/ $//' || true)
results="$out/results.json"
[[ $passes =~ ^[1-9][0-9]*$ ]] || die "--passes takes a count (1, 2, ...), not '$passes'"
for t in ${types//,/ }; do
  model="$out/models/llama-3.2-1b-$t.gguf"
  if [ ! -f "$model" ]; then
    log "making $model"
    "$wgc" synth-model --shape llama-3.2-1b --type "$t" --out "$model"
  fi
done
run_wgc() {  # TYPE PASS
  local t=$1 k=$2 model="$out/models/llama-3.2-1b-$1.gguf"
  log "$t (pass $k of $passes): wgc (CPU engine, $threads threads)"
  "$wgc" bench-llm --backend cpu --threads "$threads" -m "$model" -p "$p" -n "$n" -r "$r" \
    --json "$out/wgc-$t-$k.json" --force >"$out/wgc-$t-$k.txt"
  local cpu="{}"
  if [ $cpu_time = 1 ]; then
    log "$t: wgc's CPU time (bench-llm with 1 and $((r + 1)) runs)"
    local bl=("$wgc" bench-llm --backend cpu --threads 1 -m "$model" --no-warmup --bandwidth 0) a b c d
    a=$(cpu_seconds "${bl[@]}" -p "$p" -n 0 -r 1) b=$(cpu_seconds "${bl[@]}" -p "$p" -n 0 -r $((r + 1)))
    c=$(cpu_seconds "${bl[@]}" -p 0 -n "$n" -r 1) d=$(cpu_seconds "${bl[@]}" -p 0 -n "$n" -r $((r + 1)))
    cpu=$(node -e 'const [a, b, c, d, p, n, r] = process.argv.slice(1).map(Number);
      console.log(JSON.stringify({pp: p * r / (b - a), tg: n * r / (d - c)}));' "$a" "$b" "$c" "$d" "$p" "$n" "$r")
  fi
  echo "$cpu" >"$out/wgc-cpu-$t-$k.json"
}
run_llama() {  # TYPE PASS
  local t=$1 k=$2
  log "$t (pass $k of $passes): llama.cpp (node-llama-cpp, $threads threads)"
  (cd "$peer" && node llama_cpp_bench.mjs "$out/models/llama-3.2-1b-$t.gguf" "$p" "$n" "$r" "$threads") \
    >"$out/llama_cpp-$t-$k.json"
}
declare -A loads
for k in $(seq 1 "$passes"); do
  for t in ${types//,/ }; do
    load0=$(load)
    if [ $((k % 2)) = 1 ]; then run_wgc "$t" "$k"; run_llama "$t" "$k"; else run_llama "$t" "$k"; run_wgc "$t" "$k"; fi
    loads[$t]="${loads[$t]:+${loads[$t]} / }$load0; $(load)"
  done
done
echo "[" >"$results"
first=1
for t in ${types//,/ }; do
  row=$(node -e '
    const [out, type, passes, p, n, loads] = process.argv.slice(1);
    const med = (v) => { const s = [...v].sort((a, b) => a - b), m = s.length >> 1;
                         return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
    const ks = Array.from({ length: Number(passes) }, (_, i) => i + 1);
    const w = ks.map((k) => require(`${out}/wgc-${type}-${k}.json`));
    const l = ks.map((k) => require(`${out}/llama_cpp-${type}-${k}.json`));
    const wc = ks.map((k) => require(`${out}/wgc-cpu-${type}-${k}.json`));
    const test = (x, name) => x.results.find((y) => y.test === name).tps_median;
    const r = {type, passes: ks.length, wgc_pp: med(w.map((x) => test(x, "pp" + p))),
               wgc_tg: med(w.map((x) => test(x, "tg" + n))), llama_pp: med(l.map((x) => x.pp_median)),
               llama_tg: med(l.map((x) => x.tg_median)), loads,
               wgc_threads: w[0].threads, llama_threads: l[0].threads, llama_cpu_variant: l[0].cpu_variant};
    if (wc[0].pp !== undefined)
      Object.assign(r, {wgc_pp_cpu: med(wc.map((x) => x.pp)), wgc_tg_cpu: med(wc.map((x) => x.tg)),
                        llama_pp_cpu: med(l.map((x) => x.pp_cpu_median)), llama_tg_cpu: med(l.map((x) => x.tg_cpu_median))});
    console.log(JSON.stringify(r));
  ' "$out" "$t" "$passes" "$p" "$n" "${loads[$t]}")
  [ $first = 1 ] || echo "," >>"$results"
  first=0
  echo "$row" >>"$results"
done
echo "]" >>"$results"

node -e '
  const rows = require(process.argv[1]);
  const [cpu, threads, p, n, r, flags] = process.argv.slice(2);
  const f = (x) => x.toFixed(2), pct = (a, b) => (100 * a / b).toFixed(0) + "%";
  const passes = rows[0].passes > 1 ? `, the median over ${rows[0].passes} passes (engine order alternating)` : "";
  console.log(`CPU: ${cpu}; flags: ${flags}; ${threads} threads each; llama.cpp CPU variant: ${rows[0].llama_cpu_variant}; ` +
              `pp${p} / tg${n}, median of ${r} runs after a warm-up${passes}\n`);
  console.log("| model | wgc pp t/s | llama.cpp pp t/s | wgc/llama.cpp pp | wgc tg t/s | llama.cpp tg t/s | wgc/llama.cpp tg | load (1/5/15 min) before; after (each pass) |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---|");
  for (const x of rows)
    console.log(`| Llama-3.2-1B ${x.type.toUpperCase()} | ${f(x.wgc_pp)} | ${f(x.llama_pp)} | ${pct(x.wgc_pp, x.llama_pp)} | ` +
                `${f(x.wgc_tg)} | ${f(x.llama_tg)} | ${pct(x.wgc_tg, x.llama_tg)} | ${x.loads} |`);
  if (rows[0].wgc_pp_cpu !== undefined) {
    console.log("\nTokens per CPU second (one thread each):\n");
    console.log("| model | wgc pp | llama.cpp pp | wgc/llama.cpp pp | wgc tg | llama.cpp tg | wgc/llama.cpp tg |");
    console.log("|---|---:|---:|---:|---:|---:|---:|");
    for (const x of rows)
      console.log(`| Llama-3.2-1B ${x.type.toUpperCase()} | ${f(x.wgc_pp_cpu)} | ${f(x.llama_pp_cpu)} | ${pct(x.wgc_pp_cpu, x.llama_pp_cpu)} | ` +
                  `${f(x.wgc_tg_cpu)} | ${f(x.llama_tg_cpu)} | ${pct(x.wgc_tg_cpu, x.llama_tg_cpu)} |`);
  }
' "$results" "$cpu" "$threads" "$p" "$n" "$r" "$flags" | tee "$out/results.md"

cats=()
for t in ${types//,/ }; do cats+=("${t^^} pp$p" "${t^^} tg$n"); done
series() {  # KEY_PP KEY_TG: the values in the chart's category order
  node -e '
    const rows = require(process.argv[1]);
    console.log(rows.flatMap((x) => [x[process.argv[2]], x[process.argv[3]]].map((v) => v.toFixed(2))).join(","));
  ' "$results" "$1" "$2"
}
"$wgc" chart --force --out "$out/cpu_llm.png" --title "Llama-3.2-1B on the CPU ($threads threads): wgc vs llama.cpp" \
  --y-label "tokens/s" --categories "$(IFS=,; echo "${cats[*]}")" \
  --series "wgc=$(series wgc_pp wgc_tg)" --series "llama.cpp=$(series llama_pp llama_tg)" >/dev/null
log "wrote $out/results.md, $out/results.json, $out/cpu_llm.png"
