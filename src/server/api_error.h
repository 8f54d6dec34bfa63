// Errors of the HTTP API, answered with an HTTP status and OpenAI's error body:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}
#pragma once

#include "util/error.h"

#include <exception>
#include <string>
#include <string_view>

namespace wgc::server {

struct ApiError : Error {
  ApiError(int http_status, std::string message, std::string error_type = "invalid_request_error",
           std::string error_param = {}, std::string error_code = {})
      : Error(std::move(message)),
        status(http_status),
        type(std::move(error_type)),
        param(std::move(error_param)),
        code(std::move(error_code)) {}
  int status;
  std::string type;   // "invalid_request_error", "authentication_error", ...
  std::string param;  // the request field at fault ("" when none)
  std::string code;   // a machine-readable code ("" when none)
};

// A 400 naming the request field at fault.
inline ApiError bad_request(std::string param, std::string message) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param));
}

// A library error's message for an API client: without the "wgc: " that the command line shows.
inline std::string plain_message(const std::exception& e) {
  std::string_view m = e.what();
  return std::string(m.starts_with("wgc: ") ? m.substr(5) : m);
}

// OpenAI's error body for `e` (compact JSON).
std::string error_body(const ApiError& e);

}  // namespace wgc::server
