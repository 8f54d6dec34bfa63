// libFuzzer target: reading a tokenizer from tokenizer.json (and tokenizer_config.json after a NUL
// byte), building it, and a round of encode/decode. Any input must give a tokenizer or a
// wgc::Error naming the file: no crash, no sanitizer report, no unbounded allocation.
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace wgc;
using namespace wgc::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  try {
    json::Value doc = json::parse(in.substr(0, nul), "tokenizer.json");
    json::Value config;
    if (nul != std::string_view::npos) config = json::parse(in.substr(nul + 1), "tokenizer_config.json");
    Tokenizer tok(spec_from_hf_json(doc, config, "tokenizer.json"));
    for (std::string_view text : {"Hello world! 123 <s> \xC3\xA9\xE2\x96\x81 x", "", "   \n\t"}) {
      std::vector<int32_t> ids = tok.encode(text, true);
      (void)tok.decode(ids, false);
      (void)tok.decode(ids, true);
    }
  } catch (const Error&) {
  }
  return 0;
}
