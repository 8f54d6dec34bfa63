// Matrix multiply C[M,N] = A[M,K] x B (B is [K,N], or [N,K] with trans_b), f32, row-major.
// A ladder of kernels (src/kernels/matmul): naive -> tiled (workgroup memory) -> register-tiled
// -> register-tiled with vec4 loads, and two variants of that body: L2-friendly grouped
// workgroup order, and the next tile's global loads issued before this tile's math (register
// prefetch); Auto picks by shape.
#pragma once

#include "gpu/batch.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace wgc {

enum class MatmulVersion { Auto, Naive, Tiled, RegTile, RegTileVec4, RegTileVec4Grouped, Vec4Prefetch };
std::string_view to_string(MatmulVersion v);
inline constexpr MatmulVersion kMatmulVersions[] = {MatmulVersion::Naive,
                                                    MatmulVersion::Tiled,
                                                    MatmulVersion::RegTile,
                                                    MatmulVersion::RegTileVec4,
                                                    MatmulVersion::RegTileVec4Grouped,
                                                    MatmulVersion::Vec4Prefetch};

struct MatmulDims {
  uint32_t m = 0, n = 0, k = 0;
  bool trans_b = false;
  double flops() const { return 2.0 * m * n * k; }
};

bool supports(MatmulVersion v, MatmulDims d);  // vec4 needs K % 4 == 0 (and N % 4 == 0 unless trans_b)
MatmulVersion choose_matmul(MatmulDims d);

// Records the product into a batch. a, b, c must hold M*K, K*N and M*N floats.
void matmul(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& c, MatmulDims d,
            MatmulVersion v = MatmulVersion::Auto);

// A [M,K] and B [K,N] (or [N,K] with trans_b) tensors in, a new [M,N] tensor out; waits.
Tensor matmul(const Context& ctx, const Tensor& a, const Tensor& b, bool trans_b = false,
              MatmulVersion v = MatmulVersion::Auto);

// Below this many FLOPs (2*M*N*K) a host-memory matmul stays on the CPU: the upload, dispatch and
// readback cost more than the arithmetic. SwiftShader: measured with `wgc bench --ops matmul`, the
// GPU path never wins. GPU: an estimate, not yet measured end to end: ~0.2 ms of fixed round trip
// plus uploads at ~3 GB/s (measured on the H200 for the reductions) against the plain CPU loop's
// ~5 GFLOP/s puts the crossover near 4 MFLOP (about 128^3).
inline constexpr double kMatmulCpuBelowFlopsGpu = 4.0e6;
inline constexpr double kMatmulCpuBelowFlopsSwiftShader = 1.0e12;

// Host-memory convenience: runs on the CPU under the threshold (by default the adapter's value
// above; WGC_CPU_BELOW_MATMUL overrides, as does cpu_below_flops), else uploads and runs on the GPU.
std::vector<float> matmul(const Context& ctx, std::span<const float> a, std::span<const float> b, MatmulDims d,
                          std::optional<double> cpu_below_flops = std::nullopt);

}  // namespace wgc
