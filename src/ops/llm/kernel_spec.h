// A compiled LLM kernel's full description, made in one place per kernel family from that family's
// typed variant (a struct of the choices that set one pipeline apart: types, schedule, fused
// steps): its cache key (also its label in profiles), its shader files, the WGSL prelude of
// constants and the override constants. LlmOps::kernel(spec) compiles it once per LlmOps. Not
// installed.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace wgc::llm {

struct KernelSpec {
  std::string key = {};                                        // unique per pipeline: every choice below is in it
  std::vector<std::string> files = {};                         // under src/kernels, concatenated after the prelude
  std::string prelude = {};                                    // WGSL `const` declarations the files read
  std::vector<std::pair<std::string, double>> constants = {};  // WGSL `override` values
  bool subgroups = false;                                      // "enable subgroups;" first
  std::string entry = "main";
};

namespace detail {

// A WGSL constant for a kernel's prelude ("const NAME: u32 = 8u;").
inline std::string prelude_u32(const char* name, uint32_t v) {
  return std::string("const ") + name + ": u32 = " + std::to_string(v) + "u;\n";
}
inline std::string prelude_bool(const char* name, bool v) {
  return std::string("const ") + name + ": bool = " + (v ? "true" : "false") + ";\n";
}

// "256x32x2": a kernel's shape knobs, in its name (labels in profiles, the pipeline cache's key).
inline std::string shape_tag(std::initializer_list<uint32_t> v) {
  std::string s;
  for (uint32_t x : v) {
    if (!s.empty()) s += 'x';
    s += std::to_string(x);
  }
  return s;
}

}  // namespace detail
}  // namespace wgc::llm
