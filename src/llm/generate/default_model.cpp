#include "llm/generate/default_model.h"

#include "util/error.h"
#include "util/install_dirs.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace wgc::llm {

namespace fs = std::filesystem;

std::vector<fs::path> default_model_candidates() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("WGC_DEFAULT_MODEL"); env && *env) {
    // Set means meant: the only candidate (default_model_path says when it leads nowhere).
    fs::path p(env);
    std::error_code ec;
    return {fs::is_directory(p, ec) ? p / kDefaultModelFile : p};
  }
#ifdef WGC_SOURCE_MODELS
  out.push_back(fs::path(WGC_SOURCE_MODELS) / kDefaultModelFile);
#endif
  // <prefix>/share/wgc/models of an installed wgc: beside the executable (<prefix>/bin/wgc), and
  // beside this library (<prefix>/lib/libwgc.so) for programs installed elsewhere (the Python
  // package).
  auto add = [&](const fs::path& share) {
    fs::path p = share / "models" / kDefaultModelFile;
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) add(exe.parent_path().parent_path() / "share" / "wgc");
  if (fs::path share = share_dir_beside_library(); !share.empty()) add(share);
  return out;
}

fs::path default_model_path() {
  auto cands = default_model_candidates();
  if (const char* env = std::getenv("WGC_DEFAULT_MODEL"); env && *env) {
    std::error_code ec;
    if (!fs::is_regular_file(cands[0], ec))
      throw Error("wgc: WGC_DEFAULT_MODEL is set to " + std::string(env) + ", but " + cands[0].string() +
                  " is not a file (unset it to use the built-in model)");
    return cands[0];
  }
  std::string tried;
  for (const auto& p : cands) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
    tried += "\n  " + p.string();
  }
  throw Error("wgc: no model named and the default model " + std::string(kDefaultModelFile) +
              " was not found; tried:" + tried + "\nName a model file, or set WGC_DEFAULT_MODEL.");
}

SamplingParams default_sampling(const fs::path& model) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.95f;
  if (model.filename().string().starts_with("wgc-tiny-dict")) return p;
  p.top_k = 40;
  p.min_p = 0.05f;
  return p;
}

}  // namespace wgc::llm
