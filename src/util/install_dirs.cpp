#include "util/install_dirs.h"

#include <system_error>

#include <dlfcn.h>

namespace wgc {

std::filesystem::path library_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<const void*>(&library_dir), &info) || !info.dli_fname) return {};
  std::error_code ec;
  std::filesystem::path lib = std::filesystem::canonical(info.dli_fname, ec);
  if (ec) return {};
  return lib.parent_path();
}

std::filesystem::path share_dir_beside_library() {
  std::filesystem::path lib = library_dir();
  return lib.empty() ? lib : lib.parent_path() / "share" / "wgc";
}

}  // namespace wgc
