#include "llm/chat/chat_template.h"

#include "llm/tokenizer/tokenizer.h"

namespace wgc::llm {

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token, std::string name)
    : source_(std::move(source)), bos_(std::move(bos_token)), eos_(std::move(eos_token)), name_(std::move(name)) {
  tmpl_ = std::make_shared<const jinja::Template>(source_, name_);
}

const char* ChatTemplate::fallback_source() {
  return "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: {{ message['content'] | trim }}\n\n"
         "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";
}

ChatTemplate ChatTemplate::for_tokenizer(const Tokenizer& tok) {
  bool none = tok.chat_template().empty();
  ChatTemplate t(none ? fallback_source() : tok.chat_template(), tok.bos_token(), tok.eos_token(),
                 tok.source() + (none ? " (fallback chat template)" : " chat_template"));
  t.fallback_ = none;
  return t;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, const ChatOptions& opt) const {
  json::Value arr = json::Value::array();
  for (auto& m : messages) {
    json::Value o = json::Value::object();
    o.set("role", m.role);
    o.set("content", m.content);
    arr.push_back(std::move(o));
  }
  return render_json(arr, opt);
}

std::string ChatTemplate::render_json(const json::Value& messages, const ChatOptions& opt) const {
  jinja::Value ctx = jinja::Value::object();
  ctx.set("messages", jinja::Value::from_json(messages));
  ctx.set("add_generation_prompt", jinja::Value(opt.add_generation_prompt));
  ctx.set("bos_token", jinja::Value(bos_));
  ctx.set("eos_token", jinja::Value(eos_));
  if (opt.date_string) ctx.set("date_string", jinja::Value(*opt.date_string));
  if (opt.extra.is_object())
    for (auto& [k, v] : opt.extra.members()) ctx.set(k, jinja::Value::from_json(v));
  return tmpl_->render(ctx);
}

}  // namespace wgc::llm
