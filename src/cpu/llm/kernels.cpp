#include "cpu/llm/kernels.h"

#include "util/error.h"

#include <string>

namespace wgc::llm::cpu {

// Each level's table (nullptr where this build lacks the level).
const Kernels* portable_kernels();
const Kernels* avx2_kernels();
const Kernels* avx512_kernels();

bool avx2_compiled() { return avx2_kernels() != nullptr; }
bool avx512_compiled() { return avx512_kernels() != nullptr; }

int64_t wtype_block(WType t) {
  switch (t) {
    case WType::F32:
    case WType::F16:
    case WType::BF16: return 1;
    case WType::Q8_0:
    case WType::Q4_0: return 32;
    case WType::Q4_K:
    case WType::Q6_K: return 256;
  }
  return 1;
}

int64_t wtype_block_bytes(WType t) {
  switch (t) {
    case WType::F32: return 4;
    case WType::F16:
    case WType::BF16: return 2;
    case WType::Q8_0: return 34;
    case WType::Q4_0: return 18;
    case WType::Q4_K: return 144;
    case WType::Q6_K: return 210;
  }
  return 4;
}

bool wtype_quantized(WType t) { return wtype_block(t) > 1; }

const char* wtype_name(WType t) {
  switch (t) {
    case WType::F32: return "F32";
    case WType::F16: return "F16";
    case WType::BF16: return "BF16";
    case WType::Q8_0: return "Q8_0";
    case WType::Q4_0: return "Q4_0";
    case WType::Q4_K: return "Q4_K";
    case WType::Q6_K: return "Q6_K";
  }
  return "?";
}

const Kernels& kernels(Isa isa) {
  const Kernels* k = nullptr;
  switch (isa) {
    case Isa::Portable: k = portable_kernels(); break;
    case Isa::Avx2: k = supported(isa) ? avx2_kernels() : nullptr; break;
    case Isa::Avx512: k = supported(isa) ? avx512_kernels() : nullptr; break;
  }
  if (!k) throw Error("wgc: the CPU kernels '" + std::string(to_string(isa)) + "' do not run on this processor");
  return *k;
}

const Kernels& kernels() {
  static const Kernels& k = kernels(default_isa());
  return k;
}

}  // namespace wgc::llm::cpu
