// libFuzzer target: tokenization of arbitrary text with real tokenizers: the built-in model's
// byte-level BPE (always), and any tokenizer.json / .gguf listed in $WGC_FUZZ_TOKENIZERS
// (colon-separated). Encoding must not crash; ids must be in the vocabulary; for valid UTF-8,
// decoding gives the text back (byte-level BPE without a normalizer is lossless).
#include "llm/formats/gguf.h"
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "llm/tokenizer/unicode.h"
#include "util/error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace wgc;
using namespace wgc::llm;

namespace {

struct Loaded {
  std::unique_ptr<Tokenizer> tok;
  bool lossless;  // decode(encode(text)) == text for valid UTF-8
};

std::vector<Loaded>& tokenizers() {
  static std::vector<Loaded> all = [] {
    std::vector<Loaded> v;
    v.push_back({std::make_unique<Tokenizer>(load_tokenizer(WGC_FUZZ_DEFAULT_TOKENIZER)), true});
    if (const char* list = std::getenv("WGC_FUZZ_TOKENIZERS")) {
      std::stringstream ss(list);
      std::string path;
      while (std::getline(ss, path, ':'))
        if (!path.empty()) v.push_back({std::make_unique<Tokenizer>(load_tokenizer(path)), false});
    }
    return v;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  bool valid = unicode::valid_utf8(text);
  for (const Loaded& l : tokenizers()) {
    std::vector<int32_t> ids = l.tok->encode(text, false);
    for (int32_t id : ids)
      if (id < 0 || size_t(id) >= l.tok->vocab_size()) __builtin_trap();
    std::string back = l.tok->decode(ids, false);
    if (l.lossless && valid && back != text) __builtin_trap();
    (void)l.tok->encode(text, true);
  }
  return 0;
}
