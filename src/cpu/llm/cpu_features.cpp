#include "cpu/llm/cpu_features.h"

#include "util/error.h"

#include <cstdlib>
#include <cstring>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define WGC_X86 1
#endif
#include <sched.h>

namespace wgc::llm::cpu {

std::string_view to_string(Isa isa) {
  switch (isa) {
    case Isa::Portable: return "portable";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

Isa parse_isa(std::string_view name) {
  for (Isa i : kIsas)
    if (to_string(i) == name) return i;
  throw Error("wgc: unknown CPU kernel level '" + std::string(name) + "' (portable, avx2, avx512)");
}

namespace {

CpuFeatures detect() {
  CpuFeatures f;
  cpu_set_t set;
  CPU_ZERO(&set);
  f.threads = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : int(std::thread::hardware_concurrency());
  if (f.threads < 1) f.threads = 1;
#ifdef WGC_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned max_leaf = a;
  __get_cpuid(1, &a, &b, &c, &d);
  const bool osxsave = c & bit_OSXSAVE;
  f.fma = c & bit_FMA;
  f.f16c = c & bit_F16C;
  const bool avx = c & bit_AVX;
  // The OS must save the YMM (bits 1-2) and, for AVX-512, the opmask and ZMM state (bits 5-7).
  uint64_t xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t(hi) << 32) | lo;
  }
  const bool ymm = avx && (xcr0 & 0x6) == 0x6;
  const bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &c, &d);
    f.avx2 = ymm && (b & bit_AVX2);
    f.avx512f = zmm && (b & bit_AVX512F);
    f.avx512bw = zmm && (b & bit_AVX512BW);
    f.avx512vl = zmm && (b & bit_AVX512VL);
    f.avx512vnni = zmm && (c & bit_AVX512VNNI);
  }
  f.fma = f.fma && ymm;
  f.f16c = f.f16c && ymm;
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &c, &d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &c, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
    std::string_view s(brand);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    f.model = s;
  }
#endif
  return f;
}

}  // namespace

// Defined by the kernel translation units: whether this build compiled the level in.
bool avx2_compiled();
bool avx512_compiled();

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

bool supported(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::Portable: return true;
    case Isa::Avx2: return avx2_compiled() && f.avx2 && f.fma && f.f16c;
    case Isa::Avx512:
      return avx512_compiled() && f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
  }
  return false;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> v;
  for (Isa i : kIsas)
    if (supported(i)) v.push_back(i);
  return v;
}

Isa default_isa() {
  if (const char* env = std::getenv("WGC_CPU_ISA"); env && *env) {
    Isa i = parse_isa(env);
    if (!supported(i)) throw Error("wgc: WGC_CPU_ISA=" + std::string(env) + ": this processor (or build) lacks it");
    return i;
  }
  Isa best = Isa::Portable;
  for (Isa i : kIsas)
    if (supported(i)) best = i;
  return best;
}

std::string describe_cpu(int threads) {
  const CpuFeatures& f = cpu_features();
  std::string feats;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!feats.empty()) feats += ' ';
    feats += name;
  };
  add(f.avx2, "AVX2");
  add(f.fma, "FMA");
  add(f.f16c, "F16C");
  add(f.avx512f && f.avx512bw && f.avx512vl, "AVX512");
  add(f.avx512vnni, "AVX512-VNNI");
  std::string s = f.model.empty() ? std::string("CPU") : f.model;
  s += ", " + std::to_string(threads > 0 ? threads : f.threads) + " threads, kernels " +
       std::string(to_string(default_isa()));
  if (!feats.empty()) s += " (" + feats + ")";
  return s;
}

}  // namespace wgc::llm::cpu

namespace wgc::llm::cpu {

json::Value describe_cpu_json() {
  const CpuFeatures& f = cpu_features();
  json::Value o = json::Value::object();
  o.set("model", f.model);
  o.set("threads", f.threads);
  o.set("kernels", std::string(to_string(default_isa())));
  json::Value feats = json::Value::object();
  feats.set("avx2", f.avx2);
  feats.set("fma", f.fma);
  feats.set("f16c", f.f16c);
  feats.set("avx512f", f.avx512f);
  feats.set("avx512bw", f.avx512bw);
  feats.set("avx512vl", f.avx512vl);
  feats.set("avx512vnni", f.avx512vnni);
  o.set("features", std::move(feats));
  return o;
}

}  // namespace wgc::llm::cpu
