// The web pages `wgc serve` serves (the chat page at /, the kernel playground at /kernels/), from
// files embedded in the library at build time (web/ and the kernel bundle; cmake/embed_web.cmake):
// nothing to install beside the binary.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace wgc::server {

struct WebAsset {
  std::string_view body;  // the file's bytes (static storage)
  std::string_view mime;  // Content-Type, with the charset for text
};

// The file served at URL path `path` (no query string): "/" and any path ending in "/" name that
// folder's index.html ("/kernels/" -> kernels/index.html). nullopt for anything else, including
// "..", and a folder named without its slash (see web_redirect).
std::optional<WebAsset> web_asset(std::string_view path);

// Where a folder named without its trailing slash redirects ("/kernels" -> "/kernels/", so that the
// page's relative links resolve inside it), or nullopt.
std::optional<std::string> web_redirect(std::string_view path);

// The files of the page at /local/ that are too large to embed, from disk: the engine built for
// the browser (local/wgc-core.js and local/wgc-core.wasm, scripts/build_wasm.sh: in the build tree,
// or <prefix>/share/wgc/wasm when installed) and the built-in model
// (local/models/wgc-tiny-dict-q8_0.gguf). Only those names; nullopt for anything else, or when the
// file is not there (the page then says what is missing).
struct WebFile {
  std::filesystem::path file;
  std::string_view mime;
};
std::optional<WebFile> web_local_file(std::string_view path);

namespace detail {
struct EmbeddedWebFile {
  std::string_view path;  // relative to web/, e.g. "kernels/index.html"
  std::string_view body;
  std::string_view mime;
};
std::span<const EmbeddedWebFile> embedded_web_files();  // generated, sorted by path
}  // namespace detail

}  // namespace wgc::server
