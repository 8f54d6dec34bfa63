// libFuzzer target: config.json as a model directory gives it: parsed, read into a ModelConfig
// (every field's type and range), validated, and the rotary frequencies derived from it. Any input
// must give a config or a wgc::Error naming the file, never a crash or a huge allocation.
#include "llm/formats/model_config.h"
#include "util/error.h"
#include "util/json.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace wgc;
using namespace wgc::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    ModelConfig c = config_from_hf(json::parse(text, "config.json"), "config.json");
    c.validate("config.json");
    (void)c.rope_inv_freq();
  } catch (const Error&) {
  }
  return 0;
}
