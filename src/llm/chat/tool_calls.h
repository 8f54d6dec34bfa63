// Tool calls in a model's reply, in the formats the chat templates people use ship:
//
//   Hermes / Qwen 2.5 / Qwen 3   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   Llama 3.1+ (JSON tools)      <|python_tag|>? {"name": "f", "parameters": {...}}   (several: ';')
//   Mistral                      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//   generic                      a reply that is only {"name": ..., "arguments": ...} (or a list of them)
//
// The format is read off the chat template (detect_tool_call_format). parse_tool_calls splits a
// finished reply into content and calls; for streaming, tool_call_safe_prefix says how much of the
// text so far is surely content. tool_call_grammar builds the grammar (grammar.h) that makes a
// model write calls in its format with arguments valid under each function's JSON schema, for
// tool_choice "required" or a named function.
#pragma once

#include "util/json.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

enum class ToolCallFormat { Hermes, Llama3, Mistral, Generic };
std::string_view to_string(ToolCallFormat f);  // "hermes", "llama3", "mistral", "generic"

// The format a chat template's tool calls take (Generic when it shows none).
ToolCallFormat detect_tool_call_format(std::string_view template_source);

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object
};

struct ParsedReply {
  std::string content;  // the text outside the calls (trimmed)
  std::vector<ToolCall> calls;
};

// A reply's calls. Text that looks like a call but does not parse (bad JSON, no name) stays content.
ParsedReply parse_tool_calls(std::string_view text, ToolCallFormat f);

// Bytes at the start of `text` (a reply being streamed) that are content whatever follows: text
// before anything that is, or may become, the start of a call.
size_t tool_call_safe_prefix(std::string_view text, ToolCallFormat f);

// A function the model may call: its name and its parameters' JSON Schema (an object schema).
struct ToolSpec {
  std::string name;
  json::Value parameters;
};

// The grammar of one or more calls (at most max_calls) of these tools (only `only` where given) in
// the format, each call's arguments valid under its schema. Throws wgc::Error naming a schema
// the grammar cannot express (json_schema.h) or an unknown `only`.
std::string tool_call_grammar(ToolCallFormat f, const std::vector<ToolSpec>& tools,
                              const std::optional<std::string>& only = std::nullopt, size_t max_calls = 4);

}  // namespace wgc::llm
