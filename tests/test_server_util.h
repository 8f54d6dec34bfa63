// The server tests' model without a GPU: the built-in model's tokenizer with its own chat template
// and with a small Hermes-style one that shows tools, calls and tool results.
#pragma once

#include "llm/chat/chat_template.h"
#include "server/request.h"
#include "test_llm_util.h"

namespace wgc::test {

inline const char* kHermesTemplate =
    "{%- if tools %}<tools>{% for t in tools %}{{ t.function.name }};{% endfor %}</tools>{% endif -%}"
    "{%- for m in messages %}<|{{ m.role }}|>"
    "{%- if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function.name }} "
    "{{ c.function.arguments | tojson }}</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}"
    "{%- if m.tool_call_id %}[{{ m.tool_call_id }}]{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|assistant|>{% endif %}";

struct ServerModel {
  llm::Tokenizer tok;
  llm::ChatTemplate plain, hermes;
  server::ModelInfo plain_info, hermes_info;
};

// Loaded once per test binary (a 512-token context, default sampling).
inline const ServerModel& server_model() {
  static ServerModel* m = [] {
    auto file = llm::open_model(default_model(), {false, false});
    llm::Tokenizer tok = *llm::find_tokenizer(file);
    auto* out =
        new ServerModel{tok, llm::ChatTemplate::for_tokenizer(tok), llm::ChatTemplate(kHermesTemplate, "", ""), {}, {}};
    out->plain_info = server::ModelInfo{"tiny", &out->tok, &out->plain, 512, {}};
    out->hermes_info = server::ModelInfo{"tiny", &out->tok, &out->hermes, 512, {}};
    return out;
  }();
  return *m;
}

}  // namespace wgc::test
