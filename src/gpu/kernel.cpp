#include "gpu/kernel.h"

#include "gpu/context_state.h"
#include "util/error.h"

#include <functional>
#include <map>
#include <sstream>

namespace wgc {
namespace detail {
const std::map<std::string, std::string_view, std::less<>>& embedded_kernels();  // generated
}

namespace {

using detail::ContextState;
using detail::to_string;
using detail::view;

std::string expand_includes(std::string_view path, std::string_view text, int depth) {
  if (depth > 8) throw Error("wgc: kernel includes nest too deep at " + std::string(path));
  constexpr std::string_view kDirective = "//!include \"";
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    if (line.starts_with(kDirective)) {
      size_t close = line.find('"', kDirective.size());
      if (close == std::string_view::npos) throw Error("wgc: malformed include in " + std::string(path));
      std::string_view inc = line.substr(kDirective.size(), close - kDirective.size());
      out += expand_includes(inc, embedded_source(inc), depth + 1);
    } else {
      out += line;
    }
    out += '\n';
    pos = eol + 1;
  }
  return out;
}

std::string cache_key(const KernelCode& c) {
  std::ostringstream k;
  k << std::hash<std::string>{}(c.wgsl) << '|' << c.wgsl.size() << '|' << c.entry;
  for (auto& [name, v] : c.constants) k << '|' << name << '=' << v;
  return k.str();
}

// Collects the compiler's messages; returns "" when there are no errors.
std::string compilation_errors(ContextState& s, WGPUShaderModule module, const std::string& label) {
  std::string errors;
  struct Ctx {
    std::string* out;
    const std::string* label;
  } c{&errors, &label};
  WGPUCompilationInfoCallbackInfo cb = WGPU_COMPILATION_INFO_CALLBACK_INFO_INIT;
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUCompilationInfoRequestStatus, const WGPUCompilationInfo* info, void* u, void*) {
    auto* cc = static_cast<Ctx*>(u);
    if (!info) return;
    for (size_t i = 0; i < info->messageCount; ++i) {
      const auto& m = info->messages[i];
      if (m.type != WGPUCompilationMessageType_Error) continue;
      *cc->out += *cc->label + ":" + std::to_string(m.lineNum) + ":" + std::to_string(m.linePos) + ": " +
                  to_string(m.message) + "\n";
    }
  };
  cb.userdata1 = &c;
  detail::lost_checked(s, [&] {
    detail::wait_future(s.instance, wgpuShaderModuleGetCompilationInfo(module, cb), "shader compilation");
  });
  return errors;
}

struct Prepared {
  WGPUShaderModule module = nullptr;
  std::vector<WGPUConstantEntry> constants;
  WGPUComputePipelineDescriptor desc = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
};

// Makes the shader module (throwing ShaderError on WGSL errors) and the pipeline descriptor.
void prepare(ContextState& s, const KernelCode& code, const std::string& label, Prepared& p) {
  WGPUShaderSourceWGSL src = WGPU_SHADER_SOURCE_WGSL_INIT;
  src.code = view(code.wgsl);
  WGPUShaderModuleDescriptor md = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
  md.nextInChain = &src.chain;
  md.label = view(label);
  detail::push_error_scopes(s);
  p.module = wgpuDeviceCreateShaderModule(s.device, &md);
  std::string errors = compilation_errors(s, p.module, label);
  detail::pop_error_scopes(s, {});
  if (!errors.empty()) {
    wgpuShaderModuleRelease(p.module);
    while (errors.back() == '\n') errors.pop_back();
    throw ShaderError("wgc: WGSL does not compile:\n" + errors);
  }
  for (auto& [name, v] : code.constants) {
    WGPUConstantEntry e = WGPU_CONSTANT_ENTRY_INIT;
    e.key = view(name);
    e.value = v;
    p.constants.push_back(e);
  }
  p.desc.label = view(label);
  p.desc.compute.module = p.module;
  p.desc.compute.entryPoint = view(code.entry);
  p.desc.compute.constantCount = p.constants.size();
  p.desc.compute.constants = p.constants.data();
}

std::string label_of(const KernelCode& code) { return code.label.empty() ? code.entry : code.label; }

}  // namespace

std::string_view embedded_source(std::string_view path) {
  const auto& all = detail::embedded_kernels();
  auto it = all.find(path);
  if (it == all.end()) throw Error("wgc: no kernel file '" + std::string(path) + "' in src/kernels");
  return it->second;
}

std::vector<std::string> embedded_kernel_paths() {
  std::vector<std::string> r;
  for (auto& [k, v] : detail::embedded_kernels()) r.push_back(k);
  return r;
}

KernelCode embedded_kernel(std::string_view path, std::vector<std::pair<std::string, double>> constants,
                           std::string entry) {
  KernelCode c;
  c.wgsl = expand_includes(path, embedded_source(path), 0);
  c.entry = std::move(entry);
  c.constants = std::move(constants);
  c.label = std::string(path);
  if (c.entry != "main") c.label += ":" + c.entry;
  return c;
}

Kernel compile(const Context& ctx, const KernelCode& code) {
  auto& s = ctx.state();
  std::string key = cache_key(code);
  std::string label = label_of(code);
  {
    std::lock_guard lock(s.mu);
    if (auto it = s.pipelines.find(key); it != s.pipelines.end()) return Kernel(it->second, label);
  }
  Prepared p;
  prepare(s, code, label, p);
  WGPUComputePipeline pipe = nullptr;
  try {
    pipe = detail::with_error_scope(s, "creating the pipeline for " + label,
                                    [&] { return wgpuDeviceCreateComputePipeline(s.device, &p.desc); });
  } catch (...) {
    wgpuShaderModuleRelease(p.module);
    throw;
  }
  wgpuShaderModuleRelease(p.module);
  std::lock_guard lock(s.mu);
  auto [it, inserted] = s.pipelines.emplace(key, pipe);
  if (!inserted) wgpuComputePipelineRelease(pipe);
  return Kernel(it->second, label);
}

std::vector<Kernel> compile_all(const Context& ctx, const std::vector<KernelCode>& codes) {
  auto& s = ctx.state();
  struct Pending {
    Prepared prepared;
    std::string key, label;
    WGPUComputePipeline pipeline = nullptr;
    std::string error;
    WGPUFuture future{};
  };
  std::vector<Pending> pending(codes.size());
  std::vector<Kernel> out(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    auto& p = pending[i];
    p.key = cache_key(codes[i]);
    p.label = label_of(codes[i]);
    {
      std::lock_guard lock(s.mu);
      if (auto it = s.pipelines.find(p.key); it != s.pipelines.end()) {
        out[i] = Kernel(it->second, p.label);
        continue;
      }
    }
    prepare(s, codes[i], p.label, p.prepared);
    WGPUCreateComputePipelineAsyncCallbackInfo cb = WGPU_CREATE_COMPUTE_PIPELINE_ASYNC_CALLBACK_INFO_INIT;
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPUCreatePipelineAsyncStatus st, WGPUComputePipeline pipe, WGPUStringView msg, void* u, void*) {
      auto* pp = static_cast<Pending*>(u);
      if (st == WGPUCreatePipelineAsyncStatus_Success)
        pp->pipeline = pipe;
      else
        pp->error = to_string(msg);
    };
    cb.userdata1 = &p;
    p.future = wgpuDeviceCreateComputePipelineAsync(s.device, &p.prepared.desc, cb);
  }
  std::string errors;
  for (size_t i = 0; i < codes.size(); ++i) {
    auto& p = pending[i];
    if (out[i]) continue;
    detail::lost_checked(s, [&] { detail::wait_future(s.instance, p.future, "pipeline " + p.label); });
    wgpuShaderModuleRelease(p.prepared.module);
    if (!p.pipeline) {
      errors += p.label + ": " + p.error + "\n";
      continue;
    }
    std::lock_guard lock(s.mu);
    auto [it, inserted] = s.pipelines.emplace(p.key, p.pipeline);
    if (!inserted) wgpuComputePipelineRelease(p.pipeline);
    out[i] = Kernel(it->second, p.label);
  }
  if (!errors.empty()) detail::throw_if_lost(s);
  if (!errors.empty()) throw GpuError("wgc: creating pipelines failed:\n" + errors);
  return out;
}

}  // namespace wgc
