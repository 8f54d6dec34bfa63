#include "util/install_dirs.h"

#include <system_error>

#include <dlfcn.h>

namespace wgc {

std::filesystem::path share_dir_beside_library() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<const void*>(&share_dir_beside_library), &info) || !info.dli_fname) return {};
  std::error_code ec;
  std::filesystem::path lib = std::filesystem::absolute(info.dli_fname, ec);
  if (ec) return {};
  return lib.parent_path().parent_path() / "share" / "wgc";
}

}  // namespace wgc
