// Kernel: a compiled compute pipeline made from WGSL, an entry point and override constants.
// Pipelines are cached per context by a key of all three, so compiling again is cheap.
#pragma once

#include "gpu/context.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wgc {

struct KernelCode {
  std::string wgsl;
  std::string entry = "main";
  std::vector<std::pair<std::string, double>> constants;  // WGSL `override` values
  std::string label;                                      // names it in errors and timings
};

// A kernel shipped in src/kernels, by its path there ("matmul/tiled.wgsl"). Lines of the form
// `//!include "family/x.wgsl"` (a path under src/kernels, at the start of a line) are replaced by
// that file's text. Throws if there is no such file.
KernelCode embedded_kernel(std::string_view path, std::vector<std::pair<std::string, double>> constants = {},
                           std::string entry = "main");
std::string_view embedded_source(std::string_view path);
std::vector<std::string> embedded_kernel_paths();

class Kernel {
 public:
  Kernel() = default;
  Kernel(WGPUComputePipeline pipeline, std::string label) : pipeline_(pipeline), label_(std::move(label)) {}
  WGPUComputePipeline pipeline() const { return pipeline_; }  // owned by the context's cache
  const std::string& label() const { return label_; }
  explicit operator bool() const { return pipeline_ != nullptr; }

 private:
  WGPUComputePipeline pipeline_ = nullptr;
  std::string label_;
};

// Compiles (or finds in the cache). Throws ShaderError with "label:line:col: message" lines when
// the WGSL does not compile.
Kernel compile(const Context& ctx, const KernelCode& code);

// Compiles many at once with Dawn's asynchronous pipeline creation (overlaps the compiler's work).
std::vector<Kernel> compile_all(const Context& ctx, const std::vector<KernelCode>& codes);

}  // namespace wgc
