// RFC 4648 base64 (the standard alphabet, with padding): the server's base64 embeddings and the
// binary blobs JSON files carry (a tokenizer.json's precompiled_charsmap).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace wgc {

std::string base64(std::span<const std::byte> bytes);
// The bytes of s (whitespace skipped, padding optional); wgc::Error naming `what` on a character
// outside the alphabet or a dangling bit.
std::string base64_decode(std::string_view s, const std::string& what);

}  // namespace wgc
