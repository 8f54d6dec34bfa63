// What the processor offers the CPU LLM kernels, and which kernel set (instruction-set level) runs:
// the best the processor has, or the one WGC_CPU_ISA names (portable, avx2, avx512) for tests and
// comparisons. Each level is compiled in its own translation unit with its own target flags, so
// the library runs on any x86-64 (and non-x86) processor and picks the level at run time.
#pragma once

#include "util/json.h"

#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm::cpu {

// Portable: plain C++ (what the compiler makes of it for the baseline target).
// Avx2: AVX2 + FMA + F16C.
// Avx512: those and AVX-512 F/BW/VL with VNNI (vpdpbusd: the quantized weights' int8 dot products).
enum class Isa { Portable, Avx2, Avx512 };
inline constexpr Isa kIsas[] = {Isa::Portable, Isa::Avx2, Isa::Avx512};

std::string_view to_string(Isa isa);   // "portable", "avx2", "avx512"
Isa parse_isa(std::string_view name);  // wgc::Error listing the names otherwise

struct CpuFeatures {
  std::string model;  // the processor's brand string, when it tells
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false;
  int threads = 1;  // processors this process may run on (its affinity)
};
const CpuFeatures& cpu_features();

// Whether this build has the level and this processor runs it.
bool supported(Isa isa);
std::vector<Isa> supported_isas();
// The level the kernels use: WGC_CPU_ISA when set (wgc::Error if the processor lacks it), else the
// best supported one.
Isa default_isa();

// One line for `wgc info` and status lines: "AMD EPYC ..., 2 threads, kernels avx2 (AVX2 FMA F16C
// AVX512-VNNI)" (threads: 0 for CpuFeatures::threads).
std::string describe_cpu(int threads = 0);

// The same as JSON, for `wgc info --json` and wgc.info(): {"model", "threads", "kernels",
// "features": {"avx2", ...}}.
json::Value describe_cpu_json();

}  // namespace wgc::llm::cpu
