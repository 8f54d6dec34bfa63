// libFuzzer target: the HTTP server's request bodies (src/server/request.cpp) with the built-in
// model's tokenizer and the plain chat template: /v1/completions, /v1/chat/completions, /tokenize
// and /detokenize (and /v1/messages: a chat byte with the high bit, the body translated by
// src/server/anthropic.cpp; /v1/responses: a chat byte with bit 6 and not the high bit, translated by
// src/server/responses.cpp). The first byte picks the endpoint, the rest is the body. A body is either
// refused with an ApiError (HTTP 4xx) or becomes a request the scheduler can run: prompt ids in
// the vocabulary, shorter than the context, sampling that passes validate(), bounded stop strings
// and logprobs. Any other exception or a broken promise traps.
#include "llm/chat/chat_template.h"
#include "llm/tokenizer/loaders.h"
#include "server/anthropic.h"
#include "server/request.h"
#include "server/responses.h"
#include "util/error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace wgc;

namespace {

struct Model {
  llm::Tokenizer tok;
  llm::ChatTemplate chat;
  server::ModelInfo info;
};

Model& model() {
  static Model* m = [] {
    const char* env = std::getenv("WGC_DEFAULT_MODEL");
    llm::Tokenizer tok = llm::load_tokenizer(env ? env : WGC_FUZZ_MODEL);
    auto* out = new Model{tok, llm::ChatTemplate::for_tokenizer(tok), {}};
    out->info = server::ModelInfo{"fuzz", &out->tok, &out->chat, 64, {}};
    return out;
  }();
  return *m;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Model& m = model();
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0:
      case 1: {
        auto api = data[0] % 4 == 0 ? server::Api::Completions : server::Api::Chat;
        // A chat byte with the high bit: an Anthropic Messages body, translated first; with bit 6
        // (and not the high bit): a Responses body.
        const bool chat = api == server::Api::Chat;
        const std::string translated = chat && data[0] >= 128     ? server::anthropic_to_openai(body)
                                       : chat && (data[0] & 0x40) ? server::responses_to_chat(body).chat
                                                                  : std::string(body);
        server::ApiRequest r = server::parse_request(api, translated, m.info);
        const llm::Request& g = r.generation;
        check(!g.prompt.empty() && int64_t(g.prompt.size()) < m.info.max_ctx);
        for (int32_t id : g.prompt) check(id >= 0 && size_t(id) < m.tok.vocab_size());
        llm::validate(g.sampling);  // throws (and so traps below) if a value slipped through
        check(g.max_tokens >= 1 || g.max_tokens == -1);
        check(g.top_logprobs >= -1 && g.top_logprobs <= llm::kMaxTopLogprobs);
        check(r.logprobs == (g.top_logprobs >= 0));
        check(g.stop.size() <= llm::kMaxStopStrings + 1);
        for (const auto& s : g.stop) check(!s.empty() && s.size() <= llm::kMaxStopBytes);
        check(!r.include_usage || r.stream);
        // Constrained output: the grammar parsed within its limits, never with ignore_eos; tools
        // parsed only for chat, within their count.
        check(!g.grammar || (!g.grammar->rules.empty() && !g.ignore_eos));
        check(!r.structured.parse_tools || (api == server::Api::Chat && !r.structured.specs.empty()));
        check(r.structured.specs.size() <= server::kMaxTools);
        break;
      }
      case 2: server::tokenize(body, m.tok); break;
      case 3: server::detokenize(body, m.tok); break;
    }
  } catch (const server::ApiError& e) {
    check(e.status >= 400 && e.status < 500);
  } catch (...) {
    __builtin_trap();
  }
  return 0;
}
