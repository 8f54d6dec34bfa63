#include "server/api_error.h"

#include "util/json.h"

namespace wgc::server {

std::string error_body(const ApiError& e) {
  using json::Value;
  Value err = Value::object();
  err.set("message", std::string(e.what()));
  err.set("type", e.type);
  err.set("param", e.param.empty() ? Value() : Value(e.param));
  err.set("code", e.code.empty() ? Value() : Value(e.code));
  Value out = Value::object();
  out.set("error", std::move(err));
  return out.dump();
}

}  // namespace wgc::server
