#include "util/base64.h"

#include "util/error.h"

#include <cstdint>

namespace wgc {

namespace {
constexpr const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

std::string base64(std::span<const std::byte> b) {
  std::string out;
  out.reserve((b.size() + 2) / 3 * 4);
  for (size_t i = 0; i < b.size(); i += 3) {
    uint32_t v = uint32_t(b[i]) << 16;
    if (i + 1 < b.size()) v |= uint32_t(b[i + 1]) << 8;
    if (i + 2 < b.size()) v |= uint32_t(b[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < b.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < b.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string base64_decode(std::string_view s, const std::string& what) {
  std::string out;
  out.reserve(s.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  bool padded = false;
  for (char c : s) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padded = true;
      continue;
    }
    int v = -1;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    if (v < 0 || padded) throw Error(what + ": not base64 (character '" + std::string(1, c) + "')");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xFF);
    }
  }
  if (bits >= 6 || (acc & ((1u << bits) - 1)) != 0) throw Error(what + ": not base64 (a dangling character)");
  return out;
}

}  // namespace wgc
