// ChatSession: a conversation with a model, shared by `wgc chat` and other front ends (server,
// bindings). Each send() adds the user's message, renders the conversation with the model's chat
// template (or, for a model without one, continues it as plain text), runs only what the KV cache
// does not hold yet (Generator's prefix reuse), streams the reply and keeps it.
//
//   Generator gen(model, tokenizer);
//   ChatSession chat(gen, "You are terse.");
//   GenerateOptions o;  o.max_tokens = 256;
//   auto r = chat.send("Hi", o, [](std::string_view s) { std::cout << s << std::flush; });
//   if (r.dropped_turns) ...;        // the oldest turns were dropped to make room (system kept)
//
// Turn n (from 0) samples with seed o.sampling.seed + n: a fresh stream each turn, reproducible
// from one seed. A reply stopped through GenerateOptions::cancel is kept as far as it got.
#pragma once

#include "llm/chat/chat_template.h"
#include "llm/generate/generator.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

struct ChatReply {
  GenerateResult result;
  int dropped_turns = 0;  // oldest turns dropped before this reply to fit the context
};

class ChatSession {
 public:
  // `gen` must have a tokenizer (wgc::Error otherwise) and outlive the session.
  explicit ChatSession(Generator& gen, std::optional<std::string> system = std::nullopt);

  // True when the model has no chat template: what is typed is continued as plain text.
  bool plain() const { return !tmpl_; }

  // Runs one turn. When the conversation and room for the reply (max_tokens, at most half the
  // context; a quarter when unbounded) no longer fit the context, the oldest turns are dropped;
  // a message that does not fit even alone throws wgc::Error and leaves the session as it was.
  ChatReply send(std::string_view user, const GenerateOptions& o, const TextCallback& on_text = {});

  void reset();  // forgets every turn and empties the KV cache
  int turns() const { return int(turns_.size()); }
  std::vector<ChatMessage> messages() const;  // system (if any), then user/assistant per turn
  int context_tokens() const { return int(gen_.cached().size()); }

 private:
  struct Turn {
    std::string user, reply;
    std::vector<int32_t> reply_ids;
    int32_t end_id = -1;  // the end-of-turn token the reply stopped at, or -1
  };
  // The prompt for turns_[first..] followed by `user`.
  std::vector<int32_t> prompt(size_t first, std::string_view user) const;

  Generator& gen_;
  const Tokenizer& tok_;
  std::optional<std::string> system_;
  std::optional<ChatTemplate> tmpl_;
  std::vector<Turn> turns_;
  uint64_t sent_ = 0;  // turns run since the start (the seed offset)
};

}  // namespace wgc::llm
