// Reading an API request's JSON (chat, completions, Messages, Responses, structured output): the
// body parsed within kMaxJsonDepth, and typed access to fields with 400s that name them.
#pragma once

#include "server/api_error.h"
#include "util/json.h"

#include <string>
#include <string_view>

namespace wgc::server {

// A JSON value's type as errors name it ("string", "object", ...).
std::string type_name(const json::Value& v);

// The request body as a JSON object; a 400 for malformed JSON, too deep a nesting or another type.
json::Value parse_body(std::string_view body);

// A 400 for request field `param`: "'where' must be `want`, got <type of got>".
ApiError wrong(const std::string& param, const std::string& where, const char* want, const json::Value& got);

// obj[key], or nullptr where it is absent or null (both mean "not given").
const json::Value* field(const json::Value& obj, std::string_view key);

}  // namespace wgc::server
