// Matrix multiply C[M,N] = A[M,K] x B (B is [K,N], or [N,K] with trans_b), f32, row-major.
// A ladder of kernels (src/kernels/matmul): naive -> tiled (workgroup memory) -> register-tiled
// -> register-tiled with vec4 loads, and two variants of that body: L2-friendly grouped
// workgroup order, the next tile's global loads issued before this tile's math (register
// prefetch), and that with two workgroup-memory buffers (one barrier per tile); vec4-db2:
// vec4-db's schedule with the block shape, the warp's layout over it and the workgroup order as
// knobs (MatmulTuning), Auto's rung since session 9 (256 x 128 blocks from 2048 rows, A's tile
// skewed, two tiles per k-loop iteration: 45.6 TFLOP/s at 4096^3 on the H200); Auto picks by
// shape. Rungs and knobs that lost on the H200 left the library (docs/history/pruned.md).
#pragma once

#include "gpu/batch.h"
#include "ops/thresholds.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc {

enum class MatmulVersion {
  Auto,
  Naive,
  Tiled,
  RegTile,
  RegTileVec4,
  RegTileVec4Grouped,
  Vec4Prefetch,
  Vec4Db,
  Vec4Db2
};
std::string_view to_string(MatmulVersion v);                // "auto", "naive", "tiled", "regtile", "regtile-vec4", ...
MatmulVersion parse_matmul_version(std::string_view name);  // throws naming the op and the valid names
inline constexpr MatmulVersion kMatmulVersions[] = {MatmulVersion::Naive,
                                                    MatmulVersion::Tiled,
                                                    MatmulVersion::RegTile,
                                                    MatmulVersion::RegTileVec4,
                                                    MatmulVersion::RegTileVec4Grouped,
                                                    MatmulVersion::Vec4Prefetch,
                                                    MatmulVersion::Vec4Db,
                                                    MatmulVersion::Vec4Db2};

struct MatmulDims {
  uint32_t m = 0, n = 0, k = 0;
  bool trans_b = false;
  double flops() const { return 2.0 * m * n * k; }
};

// vec4-db2's knobs (override constants of matmul/regtile_db.wgsl, so a sweep needs no rebuild);
// the defaults run on every adapter; choose_matmul_tuning says what Auto runs. `wgc bench` times
// sets of them through WGC_MATMUL_SWEEP.
struct MatmulTuning {
  uint32_t bm = 128, bn = 128;  // the block of C a workgroup computes: 64, 128, 256 or 512 each
  uint32_t wn = 8;              // lanes of a 32-lane warp along n: 4 x 8 (0: bn / 8, vec4-db's 2 x 16)
  uint32_t group_m = 1;         // block-rows walked together (grouped_order.wgsl; 1: row-major)
  uint32_t bk = 8;              // k per workgroup-memory tile: 8 or 16 (then bm, bn >= 128)
  uint32_t pad = 0;             // 1: A's tile skewed per k-quad in workgroup memory (conflict-free stores)
  uint32_t two = 0;             // 1: two tiles per k-loop iteration, buffers by constant
};
// "key=value/key=value" (keys as the fields) over base; an unknown key or a bad number throws.
MatmulTuning parse_matmul_tuning(std::string_view knobs, MatmulTuning base = {});
// Why vec4-db2 cannot run these knobs on this context (empty: it can).
std::string matmul_tuning_error(const Context& ctx, const MatmulTuning& t);
// vec4-db2's knobs for a problem (measured on the H200, see matmul.cpp): what Auto and the
// matmul overloads without a MatmulTuning use.
MatmulTuning choose_matmul_tuning(const Context& ctx, const MatmulDims& d);

// The vec4 versions need K % 4 == 0 (and N % 4 == 0 unless trans_b); the others run any shape.
bool supports(const Context& ctx, MatmulVersion v, const MatmulDims& d);
// What Auto runs: the 16x16 tiled kernel for thin products, else vec4-db2 where it applies
// (measured on the H200, see matmul.cpp), else the scalar register-tiled kernel.
MatmulVersion choose_matmul(const Context& ctx, const MatmulDims& d);

// Records the product into a batch. a, b, c must hold M*K, K*N and M*N floats. vec4-db2 runs
// choose_matmul_tuning's knobs.
void matmul(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, const MatmulDims& d,
            MatmulVersion v = MatmulVersion::Auto);
// The same with vec4-db2's knobs (the other versions ignore them); bad knobs throw.
void matmul(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, const MatmulDims& d,
            const MatmulTuning& tuning, MatmulVersion v = MatmulVersion::Auto);

// A [M,K] and B [K,N] (or [N,K] with trans_b) tensors in, a new [M,N] tensor out; waits.
Tensor matmul(const Context& ctx, const Tensor& a, const Tensor& b, bool trans_b = false,
              MatmulVersion v = MatmulVersion::Auto);

// Host-memory convenience: runs the CPU reference below the threshold (thresholds::kMatmul, in
// FLOPs = 2*M*N*K; Policy and WGC_CPU_BELOW_MATMUL override it), else uploads and runs on the GPU.
std::vector<float> matmul(const Context& ctx, std::span<const float> a, std::span<const float> b, const MatmulDims& d,
                          Policy policy = {});

}  // namespace wgc
