// Chat templates: the Jinja template of tokenizer_config.json (chat_template) or GGUF
// (tokenizer.chat_template), rendered as transformers' apply_chat_template does.
//
//   auto tmpl = wgc::llm::ChatTemplate::for_tokenizer(tok);
//   std::string prompt = tmpl.render({{"system", "You are terse."}, {"user", "Hi"}});
//   auto ids = tok.encode(prompt, /*add_special=*/false);  // the template wrote BOS itself
#pragma once

#include "llm/chat/jinja.h"
#include "util/json.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wgc::llm {

class Tokenizer;

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  // Llama 3.1-style templates print "Today Date: <date_string>" and default it themselves when
  // unset (as transformers leaves it); set it (e.g. from strftime_now) to override.
  std::optional<std::string> date_string;
  // More template variables (tools, documents, enable_thinking, ...), an object.
  json::Value extra;
};

class ChatTemplate {
 public:
  // Parses `source` (jinja::Error naming `name` and the line on bad syntax).
  ChatTemplate(std::string source, std::string bos_token, std::string eos_token, std::string name = "chat_template");
  // The tokenizer's template; a plain fallback (role: content lines) when it has none.
  static ChatTemplate for_tokenizer(const Tokenizer& tok);
  // The fallback used by for_tokenizer for models without a template.
  static const char* fallback_source();

  // Messages as role/content pairs.
  std::string render(const std::vector<ChatMessage>& messages, const ChatOptions& opt = {}) const;
  // Messages as JSON objects (may carry tool_calls, reasoning_content, ...).
  std::string render_json(const json::Value& messages, const ChatOptions& opt = {}) const;

  const std::string& source() const { return source_; }
  bool is_fallback() const { return fallback_; }

 private:
  std::string source_, bos_, eos_, name_;
  std::shared_ptr<const jinja::Template> tmpl_;
  bool fallback_ = false;
};

}  // namespace wgc::llm
