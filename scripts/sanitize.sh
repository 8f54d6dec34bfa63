#!/usr/bin/env bash
# The sanitizer leg of scripts/test.sh: a clang build (build-asan/) with warnings as errors and
# AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer), then its tests. Arguments go
# to ctest. The slowest GPU-bound tests are left out (they spend their time in SwiftShader, which
# is not instrumented, or in a browser or load generator), and so are the install check and the
# Python package (an ASan-built extension does not load into an uninstrumented python); the list
# is in README.md and below. WGC_ASAN_EXCLUDE= (empty) runs them all.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${WGC_ASAN_BUILD_DIR:-$repo/build-asan}
WGC_BUILD_DIR=$build WGC_BUILD_TYPE=RelWithDebInfo WGC_WASM=0 \
  WGC_CMAKE_ARGS="-DCMAKE_CXX_COMPILER=clang++ -DWGC_SANITIZE=address,undefined -DWGC_WERROR=ON ${WGC_CMAKE_ARGS:-}" \
  "$repo/scripts/build.sh"
# Dawn and SwiftShader are prebuilt and not instrumented: their allocations at exit are theirs.
export LSAN_OPTIONS="suppressions=$repo/scripts/lsan.supp:print_suppressions=0"
# intercept_tls_get_addr=0: LeakSanitizer's tracer crashed at exit ("Tracer caught signal 11",
# test_pool under ctest, every run) reading a bogus dynamic-TLS range that the prebuilt Vulkan stack
# leaves behind ("DTLS 8 at 0x204e-0x4800003150" with LSAN_OPTIONS=verbosity=1); wgc's own TLS is
# static, so not tracking __tls_get_addr's blocks hides nothing of ours.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1:intercept_tls_get_addr=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
slow=${WGC_ASAN_EXCLUDE-"^(test_llm_model|test_llm_linear|test_llm_batched|test_llm_kv_cache_engines|test_speculative|test_llm_attention|test_generate|test_matmul|test_reduce|test_conv|test_bench_llm|test_bench_batched|web_kernels|web_chat|serve_load|serve_nginx|serve_recovery|install_consumer|python_package)$"}
cd "$build" && ctest --output-on-failure -j"$(nproc)" ${slow:+-E "$slow"} "$@"
# The libFuzzer targets (fuzz/, clang): built and run briefly over their seeds, so that they keep
# compiling and their seeds keep passing (the long runs: scripts/fuzz.sh, docs/reliability.md).
# WGC_FUZZ_SMOKE=0 skips this.
if [ "${WGC_FUZZ_SMOKE:-1}" != 0 ]; then
  WGC_FUZZ_BUILD_DIR=${WGC_FUZZ_BUILD_DIR:-$repo/build-fuzz} "$repo/scripts/fuzz.sh" --smoke
fi
