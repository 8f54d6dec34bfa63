// The request fields that shape what a model may write: OpenAI's `tools` and `tool_choice`,
// `response_format` (json_object, json_schema), and llama-server's `grammar` (GBNF). Parsed,
// bounded and turned into the grammar the scheduler samples under (llm/grammar), and into what
// the chat template gets (the tools). Every problem is an ApiError (400) naming the field. No GPU
// and no HTTP here (fuzz/fuzz_server_request.cpp runs it through parse_request).
//
//   Structured s = parse_structured(doc, Api::Chat, llm::detect_tool_call_format(tmpl.source()));
//   request.generation.grammar = s.grammar;   // null: free text
#pragma once

#include "llm/chat/tool_calls.h"
#include "llm/grammar/grammar.h"
#include "util/json.h"

#include <memory>
#include <string>
#include <vector>

namespace wgc::server {

enum class Api;

// Bounds on what a request may send (beside the body's size and nesting).
inline constexpr size_t kMaxTools = 128;              // functions in `tools`
inline constexpr size_t kMaxToolNameBytes = 64;       // OpenAI's: [a-zA-Z0-9_-]{1,64}
inline constexpr size_t kMaxGrammarBytes = 64 << 10;  // of `grammar`'s text (the parser allows more)
inline constexpr size_t kMaxParallelToolCalls = 8;    // calls in one reply under a tool grammar

enum class ToolChoice { Auto, None, Required, Named };

struct Structured {
  json::Value tools;  // the request's `tools` (OpenAI's shape) for the template; null when none
  std::vector<llm::ToolSpec> specs;
  ToolChoice choice = ToolChoice::Auto;
  std::string named;           // ToolChoice::Named: the function
  bool parallel_calls = true;  // parallel_tool_calls
  // The reply is parsed for tool calls (tools given, tool_choice not "none").
  bool parse_tools = false;
  llm::ToolCallFormat format = llm::ToolCallFormat::Generic;
  std::shared_ptr<const llm::Grammar> grammar;  // constrained sampling; null: free text
};

// `tools`, `tool_choice`, `parallel_tool_calls`, `response_format` and `grammar` of a request body
// (an object). `format`: the tool-call format of the model's chat template.
Structured parse_structured(const json::Value& body, Api api, llm::ToolCallFormat format);

// The fields of messages[index] beyond role and content that a tool round trip carries, copied
// into `out` (the template's message), checked: an assistant's `tool_calls` (their `arguments`
// given to the template as objects, as transformers does), a tool result's `tool_call_id` and
// `name`.
void copy_tool_fields(const json::Value& message, size_t index, json::Value& out);

// For a template that does not render tools (no `tools` in its source, or the plain-text
// fallback): a system message saying what the tools are and how to call them (the generic JSON
// format), put in front of the messages (merged into a system message that leads them).
void describe_tools(json::Value& messages, const Structured& s);

}  // namespace wgc::server
