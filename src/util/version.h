// What this build of wgc is: its version, the Dawn package it links, the git revision it was built
// from (all fixed at build time; `wgc --version` prints them).
#pragma once

#include <string_view>

namespace wgc {

std::string_view version();       // "0.1.0" (CMake's project version)
std::string_view git_revision();  // `git describe --always --dirty` of the source tree, or "unknown"
std::string_view dawn_package();  // the npm package Dawn came from, "bun-webgpu-linux-x64@0.1.7", or "unknown"

}  // namespace wgc
