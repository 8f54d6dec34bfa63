#include "server/request.h"

#include "llm/tokenizer/unicode.h"
#include "server/request_json.h"
#include "util/json.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

namespace wgc::server {
namespace {

using json::Value;

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Typed access to the fields of a request object; absent and null fields are "not given".
class Fields {
 public:
  explicit Fields(const Value& obj) : obj_(obj) {}

  const Value* get(std::string_view key) const {
    const Value* v = obj_.find(key);
    return v && !v->is_null() ? v : nullptr;
  }

  std::optional<bool> boolean(std::string_view key) const {
    const Value* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_bool()) throw wrong(key, "a boolean", *v);
    return v->as_bool();
  }

  // A number in [lo, hi].
  std::optional<double> number(std::string_view key, double lo, double hi) const {
    const Value* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw wrong(key, "a number", *v);
    double d = v->as_double();
    if (!(d >= lo && d <= hi))
      throw bad_request(std::string(key),
                        "'" + std::string(key) + "' must be in [" + num(lo) + ", " + num(hi) + "], got " + num(d));
    return d;
  }

  // An integer in [lo, hi].
  std::optional<int64_t> integer(std::string_view key, int64_t lo, int64_t hi) const {
    const Value* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw wrong(key, "an integer", *v);
    double d = v->as_double();
    std::string name(key);
    if (!(std::trunc(d) == d)) throw bad_request(name, "'" + name + "' must be an integer, got " + num(d));
    auto out_of_range = [&] {
      return bad_request(
          name, "'" + name + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + num(d));
    };
    int64_t i = 0;
    try {
      i = v->as_int();  // throws past int64's range (e.g. 2^63)
    } catch (const Error&) {
      throw out_of_range();
    }
    if (i < lo || i > hi) throw out_of_range();
    return i;
  }

  const std::string* string(std::string_view key) const {
    const Value* v = get(key);
    if (!v) return nullptr;
    if (!v->is_string()) throw wrong(key, "a string", *v);
    return &v->as_string();
  }

  static ApiError wrong(std::string_view key, const char* want, const Value& got) {
    return bad_request(std::string(key), "'" + std::string(key) + "' must be " + want + ", got " + type_name(got));
  }

 private:
  const Value& obj_;
};

// Fields of OpenAI's API that this server does not implement: a request that uses one is refused
// rather than answered as if it had not asked.
void refuse_unsupported(const Fields& f, Api api) {
  if (auto n = f.integer("n", 1, 1 << 30); n && *n != 1)
    throw bad_request("n", "'n' must be 1 (one choice per request), got " + std::to_string(*n));
  if (const Value* b = f.get("logit_bias"); b && !(b->is_object() && b->size() == 0))
    throw bad_request("logit_bias", "'logit_bias' is not supported");
  if (api == Api::Completions) {
    if (f.boolean("echo").value_or(false)) throw bad_request("echo", "'echo' is not supported");
    if (const std::string* s = f.string("suffix"); s && !s->empty())
      throw bad_request("suffix", "'suffix' is not supported");
    if (auto b = f.integer("best_of", 1, 1 << 30); b && *b != 1)
      throw bad_request("best_of", "'best_of' must be 1, got " + std::to_string(*b));
  }
}

// The sampling fields (OpenAI's, and llama.cpp's top_k, min_p, repeat_penalty), over the model's
// defaults, checked by the library's validate().
llm::SamplingParams parse_sampling(const Fields& f, const llm::SamplingParams& defaults, bool* seeded) {
  llm::SamplingParams p = defaults;
  if (auto t = f.number("temperature", 0, 2)) p.temperature = float(*t);
  if (auto t = f.number("top_p", 0, 1)) p.top_p = float(*t);
  if (auto t = f.number("presence_penalty", -2, 2)) p.presence_penalty = float(*t);
  if (auto t = f.number("frequency_penalty", -2, 2)) p.frequency_penalty = float(*t);
  if (auto t = f.integer("top_k", -1, 1 << 30)) p.top_k = int(*t);
  if (auto t = f.number("min_p", 0, 1)) p.min_p = float(*t);
  if (auto t = f.number("repeat_penalty", 0, 10)) p.repeat_penalty = float(*t);
  if (auto t = f.integer("seed", INT64_MIN, INT64_MAX)) {
    p.seed = uint64_t(*t);
    *seeded = true;
  } else {
    std::random_device rd;
    p.seed = (uint64_t(rd()) << 32) ^ rd();
    *seeded = false;
  }
  try {
    validate(p);
  } catch (const OptionError& e) {  // the library's field names are the API's
    throw bad_request(e.option, "'" + e.option + "' " + e.problem);
  }
  return p;
}

// "stop": a string or an array of strings, within the library's limits (llm::validate_stop).
std::vector<std::string> parse_stop(const Fields& f) {
  std::vector<std::string> stop;
  const Value* v = f.get("stop");
  if (!v) return stop;
  if (v->is_string()) {
    stop.push_back(v->as_string());
  } else if (v->is_array()) {
    for (const Value& s : v->items()) {  // bounded by the body's size; the count is checked below
      if (!s.is_string())
        throw bad_request("stop",
                          "'stop' must be a string or an array of strings, got an array holding a " + type_name(s));
      stop.push_back(s.as_string());
    }
  } else {
    throw Fields::wrong("stop", "a string or an array of strings", *v);
  }
  try {
    llm::validate_stop(stop);
  } catch (const OptionError& e) {
    throw bad_request("stop", "'stop' " + e.problem);
  }
  return stop;
}

// A chat message's content as text: a string, null, or an array of {"type": "text", "text": ...}.
std::string message_text(const Value& content, size_t index) {
  std::string where = "messages[" + std::to_string(index) + "].content";
  if (content.is_null()) return {};
  if (content.is_string()) return content.as_string();
  if (!content.is_array()) throw Fields::wrong(where, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Value& part = content[i];
    std::string pw = where + "[" + std::to_string(i) + "]";
    if (!part.is_object()) throw Fields::wrong(pw, "an object", part);
    std::string type = part.get_string("type");
    if (type != "text")
      throw bad_request(where, "'" + pw + "': only text content parts are supported, got type '" + type + "'");
    const Value* t = part.find("text");
    if (!t || !t->is_string()) throw bad_request(where, "'" + pw + ".text' must be a string");
    text += t->as_string();
  }
  return text;
}

// The chat's messages as the template's {role, content} objects ("developer" is OpenAI's newer
// name for "system").
Value chat_messages(const Fields& f) {
  const Value* msgs = f.get("messages");
  if (!msgs) throw bad_request("messages", "'messages' is required");
  if (!msgs->is_array()) throw Fields::wrong("messages", "an array", *msgs);
  if (msgs->size() == 0) throw bad_request("messages", "'messages' must not be empty");
  if (msgs->size() > kMaxChatMessages)
    throw bad_request("messages", "'messages' holds at most " + std::to_string(kMaxChatMessages) + " messages, got " +
                                      std::to_string(msgs->size()));
  Value out = Value::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    const Value& m = (*msgs)[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw Fields::wrong(where, "an object", m);
    const Value* role = m.find("role");
    if (!role || !role->is_string()) throw bad_request("messages", "'" + where + ".role' must be a string");
    std::string r = role->as_string();
    if (r == "developer") r = "system";
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      throw bad_request("messages",
                        "'" + where + ".role' must be system, developer, user, assistant or tool, got '" + r + "'");
    const Value* content = m.find("content");
    Value o = Value::object();
    o.set("role", r);
    o.set("content", message_text(content ? *content : Value(), i));
    copy_tool_fields(m, i, o);
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<int32_t> token_ids(const Value& arr, std::string_view param, size_t vocab) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const Value& v : arr.items()) {
    if (!v.is_int() || v.as_int() < 0 || uint64_t(v.as_int()) >= vocab)
      throw bad_request(std::string(param), "'" + std::string(param) + "' token ids must be integers in [0, " +
                                                std::to_string(vocab) + ")");
    ids.push_back(int32_t(v.as_int()));
  }
  return ids;
}

// The completions prompt: a string, an array of one string, or an array of token ids.
std::vector<int32_t> completion_prompt(const Fields& f, const llm::Tokenizer& tok) {
  const Value* p = f.get("prompt");
  if (!p) throw bad_request("prompt", "'prompt' is required");
  if (p->is_string()) return tok.encode(p->as_string(), true);
  if (!p->is_array()) throw Fields::wrong("prompt", "a string, an array of strings or an array of token ids", *p);
  if (p->size() == 0) throw bad_request("prompt", "'prompt' must not be empty");
  if ((*p)[0].is_string()) {
    if (p->size() != 1)
      throw bad_request("prompt",
                        "'prompt' may hold one string (one completion per request), got " + std::to_string(p->size()));
    return tok.encode((*p)[0].as_string(), true);
  }
  if ((*p)[0].is_array()) {
    if (p->size() != 1)
      throw bad_request(
          "prompt", "'prompt' may hold one token list (one completion per request), got " + std::to_string(p->size()));
    return token_ids((*p)[0], "prompt", tok.vocab_size());
  }
  return token_ids(*p, "prompt", tok.vocab_size());
}

std::vector<int32_t> chat_prompt(const Fields& f, const ModelInfo& m, const Structured& s) {
  Value messages = chat_messages(f);
  llm::ChatOptions opt;
  if (s.parse_tools) {
    // Tools go to a template that renders them (as transformers passes them); the others get
    // them described in a system message, with the generic JSON call format.
    if (!m.chat_template->is_fallback() && m.chat_template->source().find("tools") != std::string::npos) {
      opt.extra = Value::object();
      opt.extra.set("tools", s.tools);
    } else {
      describe_tools(messages, s);
    }
  }
  std::string text;
  try {
    text = m.chat_template->render_json(messages, opt);
  } catch (const Error& e) {
    throw bad_request("messages", "the model's chat template refused the messages: " + plain_message(e));
  }
  return m.tokenizer->encode(text, false);  // the template writes BOS itself
}

}  // namespace

ApiRequest parse_request(Api api, std::string_view body, const ModelInfo& m) {
  Value doc = parse_body(body);
  Fields f(doc);
  ApiRequest r;
  r.api = api;
  if (const Value* model = f.get("model"); model && !model->is_string())
    throw Fields::wrong("model", "a string", *model);
  refuse_unsupported(f, api);
  const llm::ToolCallFormat format = api == Api::Chat && m.chat_template && !m.chat_template->is_fallback()
                                         ? llm::detect_tool_call_format(m.chat_template->source())
                                         : llm::ToolCallFormat::Generic;
  r.structured = parse_structured(doc, api, format);

  llm::Request& g = r.generation;
  g.sampling = parse_sampling(f, m.default_sampling, &r.seeded);
  g.stop = parse_stop(f);
  g.ignore_eos = f.boolean("ignore_eos").value_or(false);
  g.grammar = r.structured.grammar;
  if (g.grammar && g.ignore_eos)
    throw bad_request("ignore_eos",
                      "'ignore_eos' cannot be combined with constrained output (the output ends where "
                      "the grammar's does)");
  r.stream = f.boolean("stream").value_or(false);
  if (const Value* so = f.get("stream_options")) {
    if (!r.stream) throw bad_request("stream_options", "'stream_options' is only allowed with 'stream': true");
    if (!so->is_object()) throw Fields::wrong("stream_options", "an object", *so);
    r.include_usage = Fields(*so).boolean("include_usage").value_or(false);
  }

  // max_tokens (max_completion_tokens is the chat API's newer name; both may not differ).
  auto max_tokens = f.integer("max_tokens", 1, INT32_MAX);
  if (auto mct = f.integer("max_completion_tokens", 1, INT32_MAX)) {
    if (max_tokens && *max_tokens != *mct)
      throw bad_request("max_completion_tokens", "'max_tokens' and 'max_completion_tokens' differ");
    max_tokens = mct;
  }
  g.max_tokens = max_tokens ? int(*max_tokens) : api == Api::Completions ? kDefaultCompletionsMaxTokens : -1;

  if (api == Api::Chat) {
    r.logprobs = f.boolean("logprobs").value_or(false);
    auto top = f.integer("top_logprobs", 0, llm::kMaxTopLogprobs);
    if (top && !r.logprobs) throw bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (r.logprobs) g.top_logprobs = int(top.value_or(0));
    g.prompt = chat_prompt(f, m, r.structured);
    // The plain-text rendering of a model without a template ("user: ...\n\nassistant:"): the
    // reply ends where the model starts writing the user's next turn (not under a grammar, which
    // says where it ends).
    if (m.chat_template->is_fallback() && !g.grammar) g.stop.push_back("\nuser:");
  } else {
    if (auto lp = f.integer("logprobs", 0, llm::kMaxTopLogprobs)) {
      r.logprobs = true;
      g.top_logprobs = int(*lp);
    }
    g.prompt = completion_prompt(f, *m.tokenizer);
  }
  if (g.prompt.empty()) throw bad_request(api == Api::Chat ? "messages" : "prompt", "the prompt has no tokens");
  if (int64_t(g.prompt.size()) >= m.max_ctx)
    throw ApiError(400,
                   "the prompt has " + std::to_string(g.prompt.size()) + " tokens but the context holds " +
                       std::to_string(m.max_ctx) + " (and at least one token must be generated): shorten the prompt",
                   "invalid_request_error", api == Api::Chat ? "messages" : "prompt", "context_length_exceeded");
  return r;
}

std::string requested_model(std::string_view body) {
  Value doc = parse_body(body);
  Fields f(doc);
  const std::string* m = f.string("model");
  return m ? *m : std::string();
}

TokenizeAnswer tokenize_request(std::string_view body, const llm::Tokenizer& tok) {
  Value doc = parse_body(body);
  Fields f(doc);
  const std::string* content = f.string("content");
  if (!content) throw bad_request("content", "'content' is required");
  bool add_special = f.boolean("add_special").value_or(false);
  TokenizeAnswer t;
  t.with_pieces = f.boolean("with_pieces").value_or(false);
  t.ids = tok.encode(*content, add_special);
  return t;
}

std::string tokenize_answer_part(const TokenizeAnswer& t, size_t begin, size_t end, const llm::Tokenizer& tok) {
  std::string out = begin == 0 ? "{\"tokens\":[" : "";
  for (size_t i = begin; i < end && i < t.ids.size(); ++i) {
    if (i > 0) out += ',';
    int32_t id = t.ids[i];
    if (!t.with_pieces) {
      out += std::to_string(id);
      continue;
    }
    // llama-server: the piece as a string when it is valid UTF-8, else its bytes.
    std::string piece = tok.decode_bytes(std::span<const int32_t>(&id, 1));
    out += "{\"id\":" + std::to_string(id) + ",\"piece\":";
    if (llm::unicode::valid_utf8(piece)) {
      out += json::quote(piece);
    } else {
      out += '[';
      for (size_t k = 0; k < piece.size(); ++k) {
        if (k) out += ',';
        out += std::to_string(int(uint8_t(piece[k])));
      }
      out += ']';
    }
    out += '}';
  }
  if (end >= t.ids.size()) out += "]}";
  return out;
}

std::string tokenize(std::string_view body, const llm::Tokenizer& tok) {
  TokenizeAnswer t = tokenize_request(body, tok);
  return tokenize_answer_part(t, 0, t.ids.size(), tok);
}

std::string detokenize(std::string_view body, const llm::Tokenizer& tok) {
  Value doc = parse_body(body);
  Fields f(doc);
  const Value* tokens = f.get("tokens");
  if (!tokens) throw bad_request("tokens", "'tokens' is required");
  if (!tokens->is_array()) throw Fields::wrong("tokens", "an array of token ids", *tokens);
  std::vector<int32_t> ids = token_ids(*tokens, "tokens", tok.vocab_size());
  Value out = Value::object();
  out.set("content", tok.decode(ids));
  return out.dump();
}

}  // namespace wgc::server
