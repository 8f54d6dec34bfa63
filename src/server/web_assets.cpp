#include "server/web_assets.h"

#include "llm/generate/default_model.h"
#include "util/install_dirs.h"

#include <algorithm>
#include <system_error>

namespace wgc::server {
namespace {

const detail::EmbeddedWebFile* find(std::string_view rel) {
  auto files = detail::embedded_web_files();
  auto it = std::lower_bound(files.begin(), files.end(), rel,
                             [](const detail::EmbeddedWebFile& f, std::string_view p) { return f.path < p; });
  return it != files.end() && it->path == rel ? &*it : nullptr;
}

}  // namespace

std::optional<WebAsset> web_asset(std::string_view path) {
  if (!path.starts_with('/')) return std::nullopt;
  std::string rel(path.substr(1));
  if (rel.empty() || rel.ends_with('/')) rel += "index.html";
  const detail::EmbeddedWebFile* f = find(rel);
  if (!f) return std::nullopt;
  return WebAsset{f->body, f->mime};
}

std::optional<std::string> web_redirect(std::string_view path) {
  if (!path.starts_with('/') || path.ends_with('/')) return std::nullopt;
  std::string dir = std::string(path) + "/";
  if (!find(dir.substr(1) + "index.html")) return std::nullopt;
  return dir;
}

std::optional<WebFile> web_local_file(std::string_view path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path == "/local/models/" + std::string(llm::kDefaultModelFile)) {
    try {
      return WebFile{llm::default_model_path(), "application/octet-stream"};
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  const std::string_view kPrefix = "/local/";
  if (!path.starts_with(kPrefix)) return std::nullopt;
  const std::string_view name = path.substr(kPrefix.size());
  std::string_view mime = name == "wgc-core.wasm" ? "application/wasm"
                          : name == "wgc-core.js" ? "text/javascript; charset=utf-8"
                                                  : "";
  if (mime.empty()) return std::nullopt;
  for (const fs::path& dir : {fs::path(WGC_WASM_DIR), share_dir_beside_library() / "wasm"}) {
    if (dir.empty()) continue;
    fs::path f = dir / name;
    if (fs::is_regular_file(f, ec)) return WebFile{f, mime};
  }
  return std::nullopt;
}

}  // namespace wgc::server
