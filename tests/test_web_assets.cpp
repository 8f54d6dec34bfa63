// The web pages embedded in the library (cmake/embed_web.cmake): URL paths to files and MIME types,
// nothing outside the site, folder redirects; and the kernel playground's WGSL bundle
// (cmake/bundle_web_kernels.cmake) holding, for every kernel it lists, exactly the text the library
// compiles (gpu/kernel.cpp's include expansion).
#include "gpu/kernel.h"
#include "server/web_assets.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace wgc;
using namespace wgc::server;

namespace {

// The bundle's entries: lines `  "family/file.wgsl": "<text, escaped: \\ \" \n \t \r>",`.
std::map<std::string, std::string> bundle_entries(std::string_view js) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while ((pos = js.find("\n  \"", pos)) != std::string_view::npos) {
    size_t name_end = js.find("\": \"", pos + 4);
    size_t text_end = js.find("\",\n", name_end);
    EXPECT_NE(name_end, std::string_view::npos);
    EXPECT_NE(text_end, std::string_view::npos);
    if (name_end == std::string_view::npos || text_end == std::string_view::npos) break;
    std::string name(js.substr(pos + 4, name_end - pos - 4));
    std::string_view esc = js.substr(name_end + 4, text_end - name_end - 4);
    std::string text;
    for (size_t i = 0; i < esc.size(); ++i) {
      if (esc[i] != '\\' || i + 1 == esc.size()) {
        text += esc[i];
        continue;
      }
      char e = esc[++i];
      text += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;  // \\ and \" stand for themselves
    }
    out[name] = text;
    pos = text_end;
  }
  return out;
}

}  // namespace

TEST(WebAssets, PathsMapToEmbeddedFilesWithTheirTypes) {
  auto page = web_asset("/kernels/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->mime, "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<title>wgc kernel playground</title>"), std::string_view::npos);
  auto same = web_asset("/kernels/index.html");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->body.data(), page->body.data());
  auto js = web_asset("/kernels/playground.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->mime, "text/javascript; charset=utf-8");
  auto css = web_asset("/style.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->mime, "text/css; charset=utf-8");
}

TEST(WebAssets, NothingOutsideTheSite) {
  for (const char* p :
       {"", "kernels/index.html", "/kernels", "/nope.html", "/../CMakeLists.txt", "/kernels/../style.css",
        "/test/harness.mjs", "/test/package.json", "//style.css", "/kernels/index.html/"})
    EXPECT_FALSE(web_asset(p)) << p;
}

// /local/'s large files come from disk, only by their exact names: the wasm build (when built)
// and the built-in model.
TEST(WebAssets, LocalPageFilesFromDiskByNameOnly) {
  for (const char* p : {"/local/wgc-core.wasm.map", "/local/../wgc-core.wasm", "/local//wgc-core.wasm",
                        "/local/models/../wgc-core.js", "/local/models/other.gguf", "/wgc-core.wasm",
                        "/local/wgc-core.wasm/", "local/wgc-core.js", "/local/models/wgc-tiny-dict-q8_0.gguf/"})
    EXPECT_FALSE(web_local_file(p)) << p;
  auto model = web_local_file("/local/models/wgc-tiny-dict-q8_0.gguf");
  ASSERT_TRUE(model) << "the built-in model is in the source tree";
  EXPECT_EQ(model->mime, "application/octet-stream");
  EXPECT_EQ(model->file.filename(), "wgc-tiny-dict-q8_0.gguf");
  EXPECT_TRUE(std::filesystem::is_regular_file(model->file));
  if (auto wasm = web_local_file("/local/wgc-core.wasm")) {  // present when scripts/build_wasm.sh ran
    EXPECT_EQ(wasm->mime, "application/wasm");
    EXPECT_EQ(wasm->file.filename(), "wgc-core.wasm");
  }
  // The page itself is embedded, like the others.
  auto page = web_asset("/local/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("local.js"), std::string_view::npos);
}

TEST(WebAssets, FoldersRedirectToTheirSlash) {
  EXPECT_EQ(web_redirect("/kernels"), "/kernels/");
  EXPECT_FALSE(web_redirect("/kernels/"));
  EXPECT_FALSE(web_redirect("/"));
  EXPECT_FALSE(web_redirect("/style.css"));
  EXPECT_FALSE(web_redirect("/nope"));
  EXPECT_FALSE(web_redirect("kernels"));
}

TEST(WebAssets, KernelBundleHoldsWhatTheLibraryCompiles) {
  auto js = web_asset("/kernels/wgsl.js");
  ASSERT_TRUE(js);
  auto entries = bundle_entries(js->body);
  for (const char* k :
       {"map/add.wgsl", "map/binary_vec4.wgsl", "matmul/naive.wgsl", "matmul/tiled.wgsl", "matmul/regtile.wgsl",
        "matmul/regtile_vec4.wgsl", "reduce/naive.wgsl", "reduce/vec4.wgsl", "reduce/subgroup.wgsl",
        "stencil/sobel_tiled_vec4.wgsl", "stencil/blur_tiled.wgsl", "conv/direct.wgsl", "conv/direct_tiled.wgsl"})
    EXPECT_TRUE(entries.count(k)) << k << " is not in the bundle";
  // Files that others include are not kernels of their own.
  EXPECT_FALSE(entries.count("matmul/regtile_main.wgsl"));
  EXPECT_FALSE(entries.count("stencil/body/common.wgsl"));
  for (const auto& [name, text] : entries) {
    EXPECT_EQ(text.find("//!include"), std::string::npos) << name << ": an include left unexpanded";
    EXPECT_EQ(text, embedded_kernel(name).wgsl) << name << " differs from the library's expansion";
  }
}
