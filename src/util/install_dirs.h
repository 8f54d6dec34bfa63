// Where an installed wgc keeps its data: <prefix>/share/wgc, found from the file of this library
// (<prefix>/lib/libwgc.so), so a relocated install (cmake --install --prefix P, the Python
// package) finds its built-in model and SwiftShader without environment variables.
#pragma once

#include <filesystem>

namespace wgc {

// <dir of libwgc.so>/../share/wgc, or empty when the library's file cannot be told.
std::filesystem::path share_dir_beside_library();

}  // namespace wgc
