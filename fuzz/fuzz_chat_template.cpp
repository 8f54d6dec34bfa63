// libFuzzer target: the chat-template engine. The input is a template, optionally followed by a
// NUL byte and a JSON object used as the render context (else a small conversation). Any input
// must render or fail with a jinja::Error: no crash, no sanitizer report, no hang, no unbounded
// allocation (the engine's limits, lowered here so that each run stays fast).
#include "llm/chat/jinja.h"
#include "util/error.h"
#include "util/json.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace wgc;
using namespace wgc::llm;

namespace {

const char* kContext = R"({
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi <|im_start|> {{ x }}"},
    {"role": "assistant", "content": "Hello.", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
    {"role": "tool", "content": "42"}
  ],
  "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
  "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true, "n": 3, "f": 1.5
})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view source = in.substr(0, in.find('\0'));
  // The default limits but for work and sizes, lowered so that a run takes a millisecond (the
  // limits themselves are tested in tests/test_bad_input.cpp); the depth limit stays as it is.
  jinja::Limits limits;
  limits.steps = 20'000;
  limits.string_bytes = 1 << 16;
  limits.list_items = 1 << 12;
  limits.range_items = 1'000;
  static const json::Value default_context = json::parse(kContext, "context");
  try {
    jinja::Value ctx;
    if (source.size() < in.size()) {
      try {
        ctx = jinja::Value::from_json(json::parse(in.substr(source.size() + 1), "context"));
      } catch (const Error&) {
      }
    }
    // A fresh copy each run: a template may change the context (list.append).
    if (!ctx.is_object()) ctx = jinja::Value::from_json(default_context);
    jinja::Template t(source, "fuzz", limits);
    std::string out = t.render(ctx);
    (void)out;
  } catch (const jinja::Error&) {
  }
  return 0;
}
