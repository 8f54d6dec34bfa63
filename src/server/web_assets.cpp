#include "server/web_assets.h"

#include <algorithm>

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

}  // namespace wgc::server
