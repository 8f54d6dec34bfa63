// The avx512 kernel level (AVX-512 F/BW/VL/VNNI): not written yet.
#include "cpu/llm/kernels.h"

namespace wgc::llm::cpu {
const Kernels* avx512_kernels() { return nullptr; }
}  // namespace wgc::llm::cpu
