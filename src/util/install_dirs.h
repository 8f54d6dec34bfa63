// Where an installed wgc keeps its files, found from the file of this library (libwgc.so), so a
// relocated install (cmake --install --prefix P, the Python package) finds SwiftShader and the
// built-in model without environment variables or absolute paths compiled in.
#pragma once

#include <filesystem>

namespace wgc {

// The folder of libwgc.so (symlinks resolved), or empty when the library's file cannot be told.
std::filesystem::path library_dir();
// <library_dir>/../share/wgc (the built-in model is in its models/), or empty.
std::filesystem::path share_dir_beside_library();

}  // namespace wgc
