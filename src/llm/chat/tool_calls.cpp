#include "llm/chat/tool_calls.h"

#include "llm/grammar/grammar.h"
#include "llm/grammar/json_schema.h"
#include "util/error.h"

#include <algorithm>

namespace wgc::llm {

namespace {

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistral = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The end (one past) of the JSON value that starts at s[0] ('{' or '['), strings and escapes
// respected; npos when it does not close.
size_t json_end(std::string_view s) {
  int depth = 0;
  bool in_str = false, esc = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      if (esc)
        esc = false;
      else if (c == '\\')
        esc = true;
      else if (c == '"')
        in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// One call object: {"name": ..., "arguments" | "parameters": {...} or a JSON string of one}.
std::optional<ToolCall> call_of(const json::Value& v) {
  if (!v.is_object()) return std::nullopt;
  const json::Value* name = v.find("name");
  const json::Value* args = v.find("arguments");
  if (!args) args = v.find("parameters");
  if (!name || !name->is_string() || name->as_string().empty()) return std::nullopt;
  ToolCall c;
  c.name = name->as_string();
  if (!args) {
    c.arguments = "{}";
  } else if (args->is_object()) {
    c.arguments = args->dump();
  } else if (args->is_string()) {
    try {
      const json::Value inner = json::parse(args->as_string(), "tool call arguments");
      if (!inner.is_object()) return std::nullopt;
      c.arguments = inner.dump();
    } catch (const Error&) {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  return c;
}

// Calls from a JSON value: one call, or an array of calls (all must be calls).
std::optional<std::vector<ToolCall>> calls_of(std::string_view text) {
  json::Value v;
  try {
    v = json::parse(text, "tool call");
  } catch (const Error&) {
    return std::nullopt;
  }
  std::vector<ToolCall> out;
  if (v.is_array()) {
    for (const auto& x : v.items()) {
      auto c = call_of(x);
      if (!c) return std::nullopt;
      out.push_back(*c);
    }
    if (out.empty()) return std::nullopt;
    return out;
  }
  auto c = call_of(v);
  if (!c) return std::nullopt;
  return std::vector<ToolCall>{*c};
}

// A sequence of JSON values separated by ';', ',' or whitespace (Llama 3's several calls).
std::optional<std::vector<ToolCall>> call_sequence(std::string_view s) {
  std::vector<ToolCall> out;
  s = trim(s);
  while (!s.empty()) {
    if (s.front() != '{' && s.front() != '[') return std::nullopt;
    const size_t end = json_end(s);
    if (end == std::string_view::npos) return std::nullopt;
    auto c = calls_of(s.substr(0, end));
    if (!c) return std::nullopt;
    out.insert(out.end(), c->begin(), c->end());
    s = s.substr(end);
    while (!s.empty() && (s.front() == ';' || s.front() == ',' || std::isspace(static_cast<unsigned char>(s.front()))))
      s.remove_prefix(1);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// Bytes at the end of text that begin `tag` (a tag that may be arriving).
size_t partial_tag(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

std::string_view to_string(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::Hermes: return "hermes";
    case ToolCallFormat::Llama3: return "llama3";
    case ToolCallFormat::Mistral: return "mistral";
    case ToolCallFormat::Generic: break;
  }
  return "generic";
}

ToolCallFormat detect_tool_call_format(std::string_view src) {
  if (src.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::Hermes;
  if (src.find(kMistral) != std::string_view::npos) return ToolCallFormat::Mistral;
  if (src.find(kPythonTag) != std::string_view::npos || src.find("ipython") != std::string_view::npos)
    return ToolCallFormat::Llama3;
  return ToolCallFormat::Generic;
}

ParsedReply parse_tool_calls(std::string_view text, ToolCallFormat f) {
  ParsedReply r;
  switch (f) {
    case ToolCallFormat::Hermes: {
      std::string content;
      size_t at = 0;
      while (at < text.size()) {
        const size_t open = text.find(kHermesOpen, at);
        if (open == std::string_view::npos) break;
        size_t close = text.find(kHermesClose, open);
        const size_t body = open + kHermesOpen.size();
        const std::string_view inner = text.substr(body, close == std::string_view::npos ? text.npos : close - body);
        auto calls = calls_of(trim(inner));
        if (!calls) break;  // not a call: the rest stays content
        content += text.substr(at, open - at);
        r.calls.insert(r.calls.end(), calls->begin(), calls->end());
        at = close == std::string_view::npos ? text.size() : close + kHermesClose.size();
      }
      content += text.substr(at);
      r.content = std::string(trim(content));
      return r;
    }
    case ToolCallFormat::Mistral: {
      const size_t tag = text.find(kMistral);
      if (tag != std::string_view::npos) {
        if (auto calls = call_sequence(text.substr(tag + kMistral.size()))) {
          r.calls = *calls;
          r.content = std::string(trim(text.substr(0, tag)));
          return r;
        }
      }
      break;
    }
    case ToolCallFormat::Llama3: {
      std::string_view t = trim(text);
      if (t.starts_with(kPythonTag)) t = t.substr(kPythonTag.size());
      if (auto calls = call_sequence(t)) {
        r.calls = *calls;
        return r;
      }
      break;
    }
    case ToolCallFormat::Generic: {
      std::string_view t = trim(text);
      if (t.starts_with("```")) {  // a fenced block: ```json ... ```
        const size_t nl = t.find('\n'), close = t.rfind("```");
        if (nl != std::string_view::npos && close > nl) t = trim(t.substr(nl + 1, close - nl - 1));
      }
      if (auto calls = (t.starts_with("{") || t.starts_with("[")) ? call_sequence(t) : std::nullopt) {
        r.calls = *calls;
        return r;
      }
      break;
    }
  }
  r.content = std::string(trim(text));
  return r;
}

size_t tool_call_safe_prefix(std::string_view text, ToolCallFormat f) {
  auto before_tag = [&](std::string_view tag) {
    const size_t at = text.find(tag);
    return at != std::string_view::npos ? at : text.size() - partial_tag(text, tag);
  };
  switch (f) {
    case ToolCallFormat::Hermes: return before_tag(kHermesOpen);
    case ToolCallFormat::Mistral: return before_tag(kMistral);
    case ToolCallFormat::Llama3:
    case ToolCallFormat::Generic: {
      // Calls are whole replies: hold everything while the reply may still become one.
      const std::string_view t = trim(text);
      if (t.empty()) return 0;
      if (t.front() == '{' || t.front() == '[' || t.front() == '`') return 0;
      if (f == ToolCallFormat::Llama3 && kPythonTag.starts_with(t.substr(0, kPythonTag.size()))) return 0;
      return text.size();
    }
  }
  return text.size();
}

std::string tool_call_grammar(ToolCallFormat f, const std::vector<ToolSpec>& tools,
                              const std::optional<std::string>& only, size_t max_calls) {
  if (tools.empty()) throw Error("tool calls: no tools to call");
  if (max_calls < 1) max_calls = 1;
  const char* args_key = f == ToolCallFormat::Llama3 ? "parameters" : "arguments";
  std::string rules, alts;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec& t = tools[i];
    if (only && t.name != *only) continue;
    const std::string args = "tool" + std::to_string(i) + "-args";
    rules += json_schema_rules(t.parameters, args);
    const std::string head = "{\"name\": " + json::Value(t.name).dump() + ", \"" + args_key + "\": ";
    alts += (alts.empty() ? "" : " | ") + ("(" + gbnf_literal(head) + " " + args + " \"}\")");
  }
  if (alts.empty()) throw Error("tool calls: tool_choice names '" + *only + "', which is not among the tools");
  rules += "call ::= " + alts + "\n";
  const std::string more = max_calls > 1 ? "{0," + std::to_string(max_calls - 1) + "}" : "{0,0}";
  std::string root;
  switch (f) {
    case ToolCallFormat::Hermes:
      rules += "hermes ::= " + gbnf_literal("<tool_call>\n") + " call " + gbnf_literal("\n</tool_call>") + "\n";
      root = "hermes (\"\\n\" hermes)" + more;
      break;
    case ToolCallFormat::Llama3: root = "call (\"; \" call)" + more; break;
    case ToolCallFormat::Mistral: root = gbnf_literal("[TOOL_CALLS][") + " call (\", \" call)" + more + " \"]\""; break;
    case ToolCallFormat::Generic:
      root = max_calls > 1 ? "call | \"[\" call (\", \" call)" + more + " \"]\"" : "call";
      break;
  }
  return "root ::= " + root + "\n" + rules + json_grammar_common();
}

}  // namespace wgc::llm
