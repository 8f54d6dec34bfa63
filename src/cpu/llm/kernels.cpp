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

bool kernels_read(TensorType t) {
  for (TensorType k : kCpuKernelTypes)
    if (k == t) return true;
  return false;
}

bool takes_q8(TensorType t) {
  return t == TensorType::Q8_0 || t == TensorType::Q4_0 || t == TensorType::Q4_K || t == TensorType::Q6_K;
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

PackedWeight pack_weight(const Kernels& k, const Weight& w) {
  PackedWeight p;
  p.weight = w;
  const int64_t n = k.packed_bytes ? k.packed_bytes(w) : 0;
  if (n <= 0) return p;
  p.bytes = std::make_unique_for_overwrite<std::byte[]>(size_t(n));
  p.size = n;
  k.pack(w, p.bytes.get(), 0, w.rows / k.tile_rows);
  p.weight.packed = p.bytes.get();
  p.weight.packed_isa = k.isa;
  return p;
}

const Kernels& kernels() {
  static const Kernels& k = kernels(default_isa());
  return k;
}

}  // namespace wgc::llm::cpu
