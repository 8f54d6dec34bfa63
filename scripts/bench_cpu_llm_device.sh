#!/usr/bin/env bash
# Packs scripts/bench_cpu_llm.sh for a machine that has neither node, npm nor this machine's
# libraries (the GPU machine): the wgc binary of a build with its shared libraries (all but the
# C/C++ runtime), the bench script with its peer files, and the portable peer (node and
# node-llama-cpp, bench_cpu_llm.sh --pack-portable) into DIR; prints the command that runs it there.
#
#   scripts/bench_cpu_llm_device.sh DIR [--build BUILD] [--avx2 | --peer-variant NAME] [--peer-pack FILE]
#
#  --build BUILD      the build whose wgc and libwgc.so go (default: build)
#  --avx2, --peer-variant NAME   only that llama.cpp CPU variant in the peer (haswell for --avx2)
#  --peer-pack FILE   a portable peer made before (--pack-portable) instead of making one (minutes)
#
# DIR then holds wgc.tar.xz, peer.tar.xz and scripts/; with DIR = .dx/NAME of the lead's checkout,
# the device tool carries it (about 50 MB: keep the carry under 64 MiB).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
die() { printf '[bench_cpu_llm_device] %s\n' "$*" >&2; exit 1; }

dir=${1:?usage: scripts/bench_cpu_llm_device.sh DIR [--build BUILD] [--avx2 | --peer-variant NAME] [--peer-pack FILE]}
shift
build="$repo/build" variant_args=() peer_pack=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build BUILD}; shift 2 ;;
    --avx2) variant_args=(--avx2); shift ;;
    --peer-variant) variant_args=(--peer-variant "${2:?--peer-variant NAME}"); shift 2 ;;
    --peer-pack) peer_pack=${2:?--peer-pack FILE}; shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[ -x "$build/wgc" ] || die "$build/wgc not found: build first (scripts/build.sh)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# The tool and its libraries, as scripts/device_pack.sh packs them.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/wgc/bin" "$stage/wgc/lib"
cp "$build/wgc" "$stage/wgc/bin/"
ldd "$build/wgc" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' |
  grep -vE 'ld-linux|lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s)\.so' | sort -u |
  while read -r lib; do cp -L "$lib" "$stage/wgc/lib/"; done
git -C "$repo" describe --always --dirty >"$stage/wgc/STAMP"
tar -C "$stage" -cJf "$dir/wgc.tar.xz" wgc

# The bench script and the files it reads (package.json, the lock, the node driver).
mkdir -p "$dir/scripts"
rm -rf "$dir/scripts/bench_cpu_llm"
cp "$repo/scripts/bench_cpu_llm.sh" "$dir/scripts/"
cp -r "$repo/scripts/bench_cpu_llm" "$dir/scripts/"

if [ -n "$peer_pack" ]; then
  cp "$peer_pack" "$dir/peer.tar.xz"
else
  "$repo/scripts/bench_cpu_llm.sh" "${variant_args[@]}" --pack-portable "$dir/peer.tar.xz"
fi
du -sh "$dir"
cat <<EOF
[bench_cpu_llm_device] packed into $dir ($(cat "$stage/wgc/STAMP")). There, from the folder above it:
  cd ${dir##*/} && tar -xJf wgc.tar.xz && tar -xJf peer.tar.xz && PATH=\$PWD/bin:\$PATH LD_LIBRARY_PATH=\$PWD/wgc/lib \\
    scripts/bench_cpu_llm.sh --peer \$PWD/peer --wgc \$PWD/wgc/bin/wgc ${variant_args[*]} --out /tmp/bench-cpu-llm [--types ...]
EOF
