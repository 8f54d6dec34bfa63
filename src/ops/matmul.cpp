#include "ops/matmul.h"

#include "cpu/matmul.h"
#include "util/error.h"
#include "util/knobs.h"

#include <algorithm>
#include <string>
#include <utility>

namespace wgc {
namespace {

constexpr uint32_t kNaiveTile = 16;      // naive.wgsl and tiled.wgsl: 16 x 16 invocations
constexpr uint32_t kRegTileBlock = 128;  // regtile_main.wgsl: BM = BN = 128
// regtile-vec4-grouped: block-rows walked together (GROUP_M). The BK override of the same body
// (k per workgroup-memory tile) stays at its 8: BK 16 and 32 measured slower on the H200
// (27.4 and 19.5 vs 32.7 TFLOP/s at 4096^3, docs/history/benchmarks-kernels.md).
constexpr uint32_t kGroupM = 8;
// vec4-db2 runs 256 x 128 blocks (MatmulTuning::bm 256) from this many rows of C: the smallest
// size measured (choose_matmul_tuning).
constexpr uint32_t kTallBlockMinRows = 2048;

const char* kernel_file(MatmulVersion v) {
  switch (v) {
    case MatmulVersion::Naive: return "matmul/naive.wgsl";
    case MatmulVersion::Tiled: return "matmul/tiled.wgsl";
    case MatmulVersion::RegTile: return "matmul/regtile.wgsl";
    case MatmulVersion::RegTileVec4:
    case MatmulVersion::RegTileVec4Grouped:
    case MatmulVersion::Vec4Prefetch:
    case MatmulVersion::Vec4Db: return "matmul/regtile_vec4.wgsl";
    case MatmulVersion::Vec4Db2: return "matmul/regtile_db.wgsl";
    case MatmulVersion::Auto: break;
  }
  throw Error("wgc: matmul: no kernel for version Auto");
}

bool is_block_side(uint32_t x) { return x == 64 || x == 128 || x == 256 || x == 512; }

// regtile_db.wgsl's A_SKEW: vec4s after each 4 rows of k that spread one warp's stores of a k-quad
// over the 32 banks (a warp stores 32 / (bk / 4) rows of m per k-quad).
uint32_t a_skew(const MatmulTuning& t) { return t.pad ? 8 / (t.bk / 4) : 0; }

}  // namespace

MatmulTuning parse_matmul_tuning(std::string_view knobs, MatmulTuning t) {
  const Knob keys[] = {{"bm", &t.bm}, {"bn", &t.bn},   {"wn", &t.wn},  {"group_m", &t.group_m},
                       {"bk", &t.bk}, {"pad", &t.pad}, {"two", &t.two}};
  parse_knobs(knobs, keys, '/', "matmul");
  return t;
}

std::string matmul_tuning_error(const Context& ctx, const MatmulTuning& t) {
  if (!is_block_side(t.bm) || !is_block_side(t.bn)) return "bm and bn must be 64, 128, 256 or 512";
  const uint32_t ntn = t.bn / 8, wn = t.wn ? t.wn : ntn;
  // regtile_db.wgsl's warp layout: WN lanes along n, whole warps along m.
  if (32 % wn || ntn % wn || t.bm * wn % 256) return "wn must divide 32 and bn / 8, with bm * wn a multiple of 256";
  if (!t.group_m) return "group_m must be >= 1";
  // regtile_db.wgsl loads a tile in at most two vec4s per invocation.
  if (t.bk != 8 && t.bk != 16) return "bk must be 8 or 16";
  if (std::min(t.bm, t.bn) < 8 * t.bk) return "bk 16 needs bm and bn >= 128";
  if (t.pad > 1 || t.two > 1) return "pad and two must be 0 or 1";
  const uint64_t threads = uint64_t(t.bm) * t.bn / 64;
  const uint64_t storage = 2ull * 16 * (uint64_t(t.bk) * (t.bm + t.bn) / 4 + a_skew(t) * (t.bk / 4));
  const Limits& lim = ctx.limits();
  if (threads > lim.max_compute_invocations_per_workgroup || storage > lim.max_compute_workgroup_storage_size)
    return "bm x bn needs " + std::to_string(threads) + " invocations and " + std::to_string(storage) +
           " bytes of workgroup memory; this device offers " +
           std::to_string(lim.max_compute_invocations_per_workgroup) + " and " +
           std::to_string(lim.max_compute_workgroup_storage_size);
  return "";
}

std::string_view to_string(MatmulVersion v) {
  switch (v) {
    case MatmulVersion::Auto: return "auto";
    case MatmulVersion::Naive: return "naive";
    case MatmulVersion::Tiled: return "tiled";
    case MatmulVersion::RegTile: return "regtile";
    case MatmulVersion::RegTileVec4: return "regtile-vec4";
    case MatmulVersion::RegTileVec4Grouped: return "regtile-vec4-grouped";
    case MatmulVersion::Vec4Prefetch: return "vec4-prefetch";
    case MatmulVersion::Vec4Db: return "vec4-db";
    case MatmulVersion::Vec4Db2: return "vec4-db2";
  }
  return "?";
}

MatmulVersion parse_matmul_version(std::string_view name) {
  std::string names = "auto";
  if (name == "auto") return MatmulVersion::Auto;
  for (MatmulVersion v : kMatmulVersions) {
    if (to_string(v) == name) return v;
    names += ", " + std::string(to_string(v));
  }
  throw Error("wgc: unknown matmul version '" + std::string(name) + "' (" + names + ")");
}

bool supports(const Context&, MatmulVersion v, const MatmulDims& d) {
  if (v == MatmulVersion::Auto || v == MatmulVersion::Naive || v == MatmulVersion::Tiled || v == MatmulVersion::RegTile)
    return true;
  return d.k % 4 == 0 && (d.trans_b || d.n % 4 == 0);
}

MatmulVersion choose_matmul(const Context& ctx, const MatmulDims& d) {
  // Register tiling only pays once there are enough 128x128 blocks to fill the machine;
  // for thin products the 16x16 tiles keep more workgroups busy.
  if (uint64_t(d.m) * d.n < 64ull * 64ull) return MatmulVersion::Tiled;
  // vec4-db2 under choose_matmul_tuning's knobs led vec4-db at every size measured on the H200
  // (session 9 run B, TFLOP/s: 42.2 / 44.0 / 44.3 against 37.7 / 39.0 / 39.3 at 2048^3 / 4096^3 /
  // 8192^3; docs/history/benchmarks-kernels.md).
  return supports(ctx, MatmulVersion::Vec4Db2, d) ? MatmulVersion::Vec4Db2 : MatmulVersion::RegTile;
}

MatmulTuning choose_matmul_tuning(const Context& ctx, const MatmulDims& d) {
  // 256 x 128 blocks of 512 invocations, where the adapter offers them: on the H200 (session 9
  // run B, with wn 8) 42.2 / 44.0 / 44.3 TFLOP/s at 2048^3 / 4096^3 / 8192^3 against 128 x 128's
  // 40.5 / 41.8 / 39.1. Below 2048 rows unmeasured: 128 x 128 blocks, twice as many workgroups.
  // A's tile skewed (pad): 42.7 / 44.7 / 45.1 against 42.2 / 44.1 / 44.4 (session 10 run B; 44.7
  // against 44.0 at 4096^3 in run A; at 128 x 128 it lost, 41.2).
  // Two tiles per k-loop iteration (two): 45.76 against 44.76 at 4096^3 (session 12).
  MatmulTuning tall;
  tall.bm = 256;
  tall.pad = 1;
  tall.two = 1;
  if (d.m >= kTallBlockMinRows && matmul_tuning_error(ctx, tall).empty()) return tall;
  return MatmulTuning{};
}

void matmul(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, const MatmulDims& d, MatmulVersion v) {
  matmul(batch, a, b, c, d, choose_matmul_tuning(batch.context(), d), v);
}

void matmul(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, const MatmulDims& d,
            const MatmulTuning& tuning, MatmulVersion v) {
  const Context& ctx = batch.context();
  if (v == MatmulVersion::Auto) v = choose_matmul(ctx, d);
  if (!supports(ctx, v, d))
    throw Error("wgc: matmul " + std::string(to_string(v)) + " needs K (and N) to be multiples of 4");
  auto need = [&](const Tensor& t, uint64_t elems, const char* name) {
    if (t.capacity() < elems * 4)
      throw Error("wgc: matmul: " + std::string(name) + " holds " + std::to_string(t.capacity() / 4) +
                  " floats, needs " + std::to_string(elems));
  };
  need(a, uint64_t(d.m) * d.k, "A");
  need(b, uint64_t(d.k) * d.n, "B");
  need(c, uint64_t(d.m) * d.n, "C");
  if (d.m == 0 || d.n == 0) return;
  KernelCode code = embedded_kernel(kernel_file(v));
  if (v == MatmulVersion::RegTileVec4Grouped) code.constants = {{"GROUP_M", kGroupM}};
  if (v == MatmulVersion::Vec4Prefetch) code.constants = {{"PREFETCH", 1}};
  if (v == MatmulVersion::Vec4Db) code.constants = {{"PREFETCH", 1}, {"DB", 1}};
  uint32_t block_m = v == MatmulVersion::Naive || v == MatmulVersion::Tiled ? kNaiveTile : kRegTileBlock;
  uint32_t block_n = block_m;
  if (v == MatmulVersion::Vec4Db2) {
    if (std::string e = matmul_tuning_error(ctx, tuning); !e.empty()) throw Error("wgc: matmul vec4-db2: " + e);
    code.constants = {{"BM", tuning.bm},
                      {"BN", tuning.bn},
                      {"GROUP_M", tuning.group_m},
                      {"BK", tuning.bk},
                      {"A_SKEW", a_skew(tuning)}};
    if (tuning.wn) code.constants.push_back({"WN", tuning.wn});
    if (tuning.two) code.constants.push_back({"TWO_TILES", 1});
    block_m = tuning.bm;
    block_n = tuning.bn;
  }
  Kernel k = compile(ctx, code);
  Groups g{ceil_div(d.n, block_n), ceil_div(d.m, block_m), 1};
  batch.dispatch(k, {a, b, c}, Params(d.m, d.n, d.k, uint32_t(d.trans_b)), g);
}

Tensor matmul(const Context& ctx, const Tensor& a, const Tensor& b, bool trans_b, MatmulVersion v) {
  if (a.shape().size() != 2 || b.shape().size() != 2)
    throw Error("wgc: matmul takes 2-D tensors, got " + to_string(a.shape()) + " and " + to_string(b.shape()));
  MatmulDims d{uint32_t(a.shape()[0]), uint32_t(trans_b ? b.shape()[0] : b.shape()[1]), uint32_t(a.shape()[1]),
               trans_b};
  int64_t bk = trans_b ? b.shape()[1] : b.shape()[0];
  if (bk != d.k)
    throw Error("wgc: matmul: inner dimensions differ: A " + to_string(a.shape()) + ", B " + to_string(b.shape()) +
                (trans_b ? " (transposed)" : ""));
  Tensor c = make_tensor(ctx, {d.m, d.n});
  Batch batch(ctx);
  matmul(batch, a, b, c, d, v);
  batch.run();
  return c;
}

std::vector<float> matmul(const Context& ctx, std::span<const float> a, std::span<const float> b, const MatmulDims& d,
                          Policy policy) {
  if (a.size() != size_t(d.m) * d.k || b.size() != size_t(d.k) * d.n)
    throw Error("wgc: matmul: host buffers do not match M=" + std::to_string(d.m) + " N=" + std::to_string(d.n) +
                " K=" + std::to_string(d.k));
  std::vector<float> c(size_t(d.m) * d.n);
  if (run_on_cpu(ctx, thresholds::kMatmul, policy, 2 * uint64_t(d.m) * d.n * d.k)) {
    cpu::matmul(a, b, c, d.m, d.n, d.k, d.trans_b);
    return c;
  }
  Tensor ta = make_tensor(ctx, {d.m, d.k}, a);
  Tensor tb = make_tensor(ctx, {d.trans_b ? d.n : d.k, d.trans_b ? d.k : d.n}, b);
  Tensor tc = make_tensor(ctx, {d.m, d.n});
  Batch batch(ctx);
  matmul(batch, ta, tb, tc, d);
  batch.run();
  download(ctx, tc, std::as_writable_bytes(std::span(c)));
  return c;
}

}  // namespace wgc
