#include "server/structured.h"

#include "llm/grammar/json_schema.h"
#include "server/api_error.h"
#include "server/request.h"
#include "server/request_json.h"

#include <set>

namespace wgc::server {
namespace {

using json::Value;

void check_name(const std::string& name, const std::string& param, const std::string& where) {
  if (name.empty() || name.size() > kMaxToolNameBytes)
    throw bad_request(param, "'" + where + "' must be 1 to " + std::to_string(kMaxToolNameBytes) + " bytes, got " +
                                 std::to_string(name.size()));
  for (unsigned char c : name)
    if (!(std::isalnum(c) || c == '_' || c == '-'))
      throw bad_request(param, "'" + where + "' may hold only letters, digits, '_' and '-', got '" + name + "'");
}

// `tools`: [{"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}].
void parse_tools(const Value& tools, Structured& s) {
  if (!tools.is_array()) throw wrong("tools", "tools", "an array", tools);
  if (tools.size() > kMaxTools)
    throw bad_request("tools", "'tools' holds at most " + std::to_string(kMaxTools) + " functions, got " +
                                   std::to_string(tools.size()));
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Value& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) throw wrong("tools", where, "an object", t);
    const Value* type = field(t, "type");
    if (!type || !type->is_string() || type->as_string() != "function")
      throw bad_request("tools", "'" + where + ".type' must be \"function\"");
    const Value* fn = field(t, "function");
    if (!fn || !fn->is_object()) throw bad_request("tools", "'" + where + ".function' must be an object");
    const Value* name = field(*fn, "name");
    if (!name || !name->is_string()) throw bad_request("tools", "'" + where + ".function.name' must be a string");
    check_name(name->as_string(), "tools", where + ".function.name");
    if (!names.insert(name->as_string()).second)
      throw bad_request("tools", "'" + where + ".function.name': '" + name->as_string() + "' is given twice");
    if (const Value* d = field(*fn, "description"); d && !d->is_string())
      throw wrong("tools", where + ".function.description", "a string", *d);
    llm::ToolSpec spec{name->as_string(), Value()};
    if (const Value* p = field(*fn, "parameters")) {
      if (!p->is_object()) throw wrong("tools", where + ".function.parameters", "an object (a JSON Schema)", *p);
      spec.parameters = *p;
    } else {  // a function without parameters takes an empty object
      spec.parameters = Value::object();
      spec.parameters.set("type", "object");
      spec.parameters.set("properties", Value::object());
    }
    s.specs.push_back(std::move(spec));
  }
  s.tools = tools;
}

// `tool_choice`: "auto" | "none" | "required" | {"type": "function", "function": {"name": ...}}.
void parse_choice(const Value& c, Structured& s) {
  if (c.is_string()) {
    const std::string& v = c.as_string();
    if (v == "auto")
      s.choice = ToolChoice::Auto;
    else if (v == "none")
      s.choice = ToolChoice::None;
    else if (v == "required")
      s.choice = ToolChoice::Required;
    else
      throw bad_request("tool_choice", "'tool_choice' must be auto, none, required or a function, got '" + v + "'");
    return;
  }
  if (!c.is_object()) throw wrong("tool_choice", "tool_choice", "a string or an object", c);
  const Value* type = field(c, "type");
  const Value* fn = field(c, "function");
  const Value* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
  if (!type || !type->is_string() || type->as_string() != "function" || !name || !name->is_string())
    throw bad_request("tool_choice",
                      "'tool_choice' as an object must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
  s.choice = ToolChoice::Named;
  s.named = name->as_string();
  check_name(s.named, "tool_choice", "tool_choice.function.name");
}

// The grammar text that response_format asks for ("" for text).
std::string response_format_grammar(const Value& rf) {
  if (!rf.is_object()) throw wrong("response_format", "response_format", "an object", rf);
  const Value* type = field(rf, "type");
  if (!type || !type->is_string()) throw bad_request("response_format", "'response_format.type' must be a string");
  const std::string& t = type->as_string();
  try {
    if (t == "text") return {};
    if (t == "json_object") {
      // llama-server's extension: {"type": "json_object", "schema": {...}}.
      if (const Value* schema = field(rf, "schema")) {
        if (!schema->is_object()) throw wrong("response_format", "response_format.schema", "an object", *schema);
        return llm::json_schema_to_grammar(*schema);
      }
      return llm::json_object_grammar();
    }
    if (t == "json_schema") {
      const Value* js = field(rf, "json_schema");
      if (!js || !js->is_object())
        throw bad_request("response_format", "'response_format.json_schema' must be an object {name, schema, strict}");
      if (const Value* n = field(*js, "name"); n && !n->is_string())
        throw wrong("response_format", "response_format.json_schema.name", "a string", *n);
      if (const Value* st = field(*js, "strict"); st && !st->is_bool())
        throw wrong("response_format", "response_format.json_schema.strict", "a boolean", *st);
      // strict or not, the output is made to validate: a schema is followed exactly or refused.
      const Value* schema = field(*js, "schema");
      if (!schema) return llm::json_object_grammar();  // OpenAI: no schema, any JSON object
      if (!schema->is_object())
        throw wrong("response_format", "response_format.json_schema.schema", "an object", *schema);
      return llm::json_schema_to_grammar(*schema);
    }
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw bad_request("response_format", "'response_format': the schema cannot be followed: " + plain_message(e));
  }
  throw bad_request("response_format",
                    "'response_format.type' must be text, json_object or json_schema, got '" + t + "'");
}

std::shared_ptr<const llm::Grammar> compile(const std::string& text, const std::string& param) {
  try {
    return std::make_shared<const llm::Grammar>(llm::parse_grammar(text));
  } catch (const Error& e) {
    throw bad_request(param, "'" + param + "': " + plain_message(e));
  }
}

}  // namespace

Structured parse_structured(const Value& body, Api api, llm::ToolCallFormat format) {
  Structured s;
  s.format = format;
  const Value* tools = field(body, "tools");
  if (tools && tools->is_array() && tools->size() == 0) tools = nullptr;  // [] is no tools
  if (const Value* f = field(body, "functions"); f && !(f->is_array() && f->size() == 0))
    throw bad_request("functions", "'functions' (OpenAI's older tool calling) is not supported: give 'tools'");
  const Value* choice = field(body, "tool_choice");
  const Value* parallel = field(body, "parallel_tool_calls");
  if (api == Api::Completions) {
    for (const char* k : {"tools", "tool_choice", "parallel_tool_calls"})
      if (field(body, k)) throw bad_request(k, "'" + std::string(k) + "' is for /v1/chat/completions");
  }
  if (tools) parse_tools(*tools, s);
  if (choice) parse_choice(*choice, s);
  if (parallel) {
    if (!parallel->is_bool()) throw wrong("parallel_tool_calls", "parallel_tool_calls", "a boolean", *parallel);
    s.parallel_calls = parallel->as_bool();
  }
  if (!tools && choice && s.choice != ToolChoice::None && s.choice != ToolChoice::Auto)
    throw bad_request("tool_choice", "'tool_choice' asks for a tool call but 'tools' gives none");
  if (s.choice == ToolChoice::Named) {
    bool known = false;
    for (const auto& t : s.specs) known |= t.name == s.named;
    if (!known) throw bad_request("tool_choice", "'tool_choice' names '" + s.named + "', which is not in 'tools'");
  }
  s.parse_tools = tools && s.choice != ToolChoice::None;

  const Value* rf = field(body, "response_format");
  const Value* grammar = field(body, "grammar");
  const bool forced = tools && (s.choice == ToolChoice::Required || s.choice == ToolChoice::Named);
  std::string text, param;
  if (forced) {
    param = "tools";
    try {
      text = llm::tool_call_grammar(s.format, s.specs,
                                    s.choice == ToolChoice::Named ? std::optional(s.named) : std::nullopt,
                                    s.parallel_calls ? kMaxParallelToolCalls : 1);
    } catch (const Error& e) {
      throw bad_request("tools", "'tools': a function's parameters cannot be followed: " + plain_message(e));
    }
  }
  if (rf) {
    std::string g = response_format_grammar(*rf);
    if (!g.empty()) {
      if (forced)
        throw bad_request("response_format",
                          "'response_format' cannot be combined with a tool_choice that forces a call");
      text = std::move(g);
      param = "response_format";
    }
  }
  if (grammar) {
    if (!grammar->is_string()) throw wrong("grammar", "grammar", "a string (GBNF)", *grammar);
    if (!param.empty())
      throw bad_request("grammar", "'grammar' cannot be combined with '" + param + "' (both constrain the output)");
    if (grammar->as_string().size() > kMaxGrammarBytes)
      throw bad_request("grammar", "'grammar' holds at most " + std::to_string(kMaxGrammarBytes) + " bytes, got " +
                                       std::to_string(grammar->as_string().size()));
    text = grammar->as_string();
    param = "grammar";
  }
  if (!param.empty()) s.grammar = compile(text, param);
  return s;
}

void copy_tool_fields(const Value& m, size_t index, Value& out) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  const std::string role = out.get_string("role");
  if (const Value* calls = field(m, "tool_calls")) {
    if (role != "assistant") throw bad_request("messages", "'" + where + ".tool_calls' is for assistant messages");
    if (!calls->is_array()) throw wrong("messages", where + ".tool_calls", "an array", *calls);
    if (calls->size() > kMaxTools)
      throw bad_request("messages", "'" + where + ".tool_calls' holds at most " + std::to_string(kMaxTools) + " calls");
    Value list = Value::array();
    for (size_t i = 0; i < calls->size(); ++i) {
      const Value& c = (*calls)[i];
      const std::string cw = where + ".tool_calls[" + std::to_string(i) + "]";
      const Value* fn = c.is_object() ? field(c, "function") : nullptr;
      const Value* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
      if (!name || !name->is_string())
        throw bad_request("messages",
                          "'" + cw + "' must be {\"id\", \"type\": \"function\", \"function\": {name, arguments}}");
      Value args = Value::object();
      if (const Value* a = field(*fn, "arguments")) {
        if (a->is_string()) {
          // JSON text (OpenAI's shape); the templates print it as an object (tojson). Text that
          // is not JSON stays a string.
          try {
            args = json::parse(a->as_string(), "arguments", {kMaxJsonDepth});
          } catch (const std::exception&) {
            args = *a;
          }
        } else if (a->is_object()) {
          args = *a;
        } else {
          throw wrong("messages", cw + ".function.arguments", "a string (JSON) or an object", *a);
        }
      }
      Value f = Value::object();
      f.set("name", name->as_string());
      f.set("arguments", std::move(args));
      Value call = Value::object();
      if (const Value* id = field(c, "id")) {
        if (!id->is_string()) throw wrong("messages", cw + ".id", "a string", *id);
        call.set("id", *id);
      }
      call.set("type", "function");
      call.set("function", std::move(f));
      list.push_back(std::move(call));
    }
    out.set("tool_calls", std::move(list));
  }
  for (const char* k : {"tool_call_id", "name"})
    if (const Value* v = field(m, k)) {
      if (!v->is_string()) throw wrong("messages", where + "." + k, "a string", *v);
      out.set(k, *v);
    }
}

void describe_tools(Value& messages, const Structured& s) {
  Value fns = Value::array();
  for (const Value& t : s.tools.items()) fns.push_back(t["function"]);
  std::string text =
      "You can call these functions (JSON Schema of their parameters given). To call one, reply with only a JSON "
      "object {\"name\": <function name>, \"arguments\": <an object of its parameters>}; for several, a JSON array "
      "of such objects. Otherwise reply in plain text.\nFunctions: " +
      fns.dump();
  auto& items = messages.items();
  if (!items.empty() && items[0].get_string("role") == "system") {
    items[0].set("content", items[0].get_string("content") + "\n\n" + text);
    return;
  }
  Value sys = Value::object();
  sys.set("role", "system");
  sys.set("content", text);
  items.insert(items.begin(), std::move(sys));
}

}  // namespace wgc::server
