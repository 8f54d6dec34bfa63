#include "llm/generate/chat_session.h"

#include "util/error.h"

#include <algorithm>

namespace wgc::llm {

namespace {

const Tokenizer& tokenizer_of(const Generator& gen) {
  if (!gen.tokenizer()) throw Error("wgc: a chat needs the model's tokenizer");
  return *gen.tokenizer();
}

}  // namespace

ChatSession::ChatSession(Generator& gen, std::optional<std::string> system)
    : gen_(gen), tok_(tokenizer_of(gen)), system_(std::move(system)) {
  if (!tok_.chat_template().empty()) tmpl_.emplace(ChatTemplate::for_tokenizer(tok_));
}

std::vector<ChatMessage> ChatSession::messages() const {
  std::vector<ChatMessage> m;
  if (system_) m.push_back({"system", *system_});
  for (const auto& t : turns_) {
    m.push_back({"user", t.user});
    m.push_back({"assistant", t.reply});
  }
  return m;
}

std::vector<int32_t> ChatSession::prompt(size_t first, std::string_view user) const {
  if (tmpl_) {
    std::vector<ChatMessage> m;
    if (system_) m.push_back({"system", *system_});
    for (size_t i = first; i < turns_.size(); ++i) {
      m.push_back({"user", turns_[i].user});
      m.push_back({"assistant", turns_[i].reply});
    }
    m.push_back({"user", std::string(user)});
    return tok_.encode(tmpl_->render(m), false);  // the template writes BOS itself
  }
  // Plain text: the first line (after the system prompt) opens the document with BOS; a line
  // after a reply that ended with an end-of-text token opens a new one; others go on a new line.
  // Replies are kept as the tokens generated, so the same turns give the same tokens (and reuse
  // the KV cache) on every call.
  std::vector<int32_t> ids;
  auto add = [&](std::vector<int32_t> more) { ids.insert(ids.end(), more.begin(), more.end()); };
  auto user_ids = [&](size_t i, std::string_view text) {
    auto after = [&](std::string_view before) {
      std::string t(before);
      t.append(text);
      return t;
    };
    if (i == first) return tok_.encode(system_ ? after(*system_ + "\n") : std::string(text), true);
    const Turn& prev = turns_[i - 1];
    if (prev.end_id >= 0) return tok_.encode(text, true);
    return tok_.encode(after(prev.reply.ends_with('\n') ? "" : "\n"), false);
  };
  for (size_t i = first; i < turns_.size(); ++i) {
    add(user_ids(i, turns_[i].user));
    add(turns_[i].reply_ids);
    if (turns_[i].end_id >= 0) ids.push_back(turns_[i].end_id);
  }
  add(user_ids(turns_.size(), user));
  return ids;
}

ChatReply ChatSession::send(std::string_view user, const GenerateOptions& o, const TextCallback& on_text) {
  validate(o);
  const int max_ctx = gen_.model().max_ctx();
  const int room = o.max_tokens > 0 ? std::min(o.max_tokens, max_ctx / 2) : max_ctx / 4;
  ChatReply out;
  size_t first = 0;
  std::vector<int32_t> ids = prompt(first, user);
  while (int64_t(ids.size()) + room > max_ctx && first < turns_.size()) ids = prompt(++first, user);
  if (int64_t(ids.size()) >= max_ctx)
    throw Error("wgc: the message needs " + std::to_string(ids.size()) + " tokens with the system prompt, but the " +
                std::to_string(max_ctx) + "-token context leaves no room for a reply");
  out.dropped_turns = int(first);

  GenerateOptions turn = o;
  turn.sampling.seed = o.sampling.seed + sent_;
  out.result = gen_.generate(std::span<const int32_t>(ids), turn, on_text);
  ++sent_;
  turns_.erase(turns_.begin(), turns_.begin() + std::ptrdiff_t(first));
  turns_.push_back({std::string(user), out.result.text, out.result.ids, out.result.stop_id});
  return out;
}

void ChatSession::reset() {
  turns_.clear();
  sent_ = 0;
  gen_.reset();
}

}  // namespace wgc::llm
