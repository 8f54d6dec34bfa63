// CPU matrix multiply: the reference the GPU versions are checked against, and the fallback for
// problems too small to pay for a GPU round trip.
#pragma once

#include <cstdint>
#include <span>

namespace wgc::cpu {

// C[M,N] = A[M,K] x B, B is [K,N] or, with trans_b, [N,K]. Row-major. Accumulates in double:
// slow, exact enough to judge the GPU.
void matmul_reference(std::span<const float> a, std::span<const float> b, std::span<float> c, uint32_t m, uint32_t n,
                      uint32_t k, bool trans_b);

// A cache-blocked float loop on the calling thread: the "plain CPU" figure in the benchmark and
// the small-size fallback.
void matmul(std::span<const float> a, std::span<const float> b, std::span<float> c, uint32_t m, uint32_t n, uint32_t k,
            bool trans_b);

}  // namespace wgc::cpu
