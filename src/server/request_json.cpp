#include "server/request_json.h"

#include "server/request.h"

namespace wgc::server {

std::string type_name(const json::Value& v) { return std::string(json::to_string(v.type())); }

json::Value parse_body(std::string_view body) {
  json::Value doc;
  try {
    doc = json::parse(body, "the request body", {kMaxJsonDepth});
  } catch (const json::ParseError& e) {
    throw ApiError(400, std::string("malformed JSON: ") + e.what());
  }
  if (!doc.is_object()) throw ApiError(400, "the request body must be a JSON object, got " + type_name(doc));
  return doc;
}

ApiError wrong(const std::string& param, const std::string& where, const char* want, const json::Value& got) {
  return bad_request(param, "'" + where + "' must be " + want + ", got " + type_name(got));
}

const json::Value* field(const json::Value& obj, std::string_view key) {
  const json::Value* v = obj.find(key);
  return v && !v->is_null() ? v : nullptr;
}

}  // namespace wgc::server
