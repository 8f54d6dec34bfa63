// UTF-8 and Unicode helpers for the tokenizers: decoding, NFC, the GPT-2 byte-to-unicode map.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm::unicode {

// Length of the UTF-8 sequence that starts with `lead` (1 for a stray continuation or invalid byte).
inline size_t utf8_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// Decodes the code point at s[i] and advances i. Invalid or truncated sequences give U+FFFD and
// advance by the maximal invalid prefix (as String::from_utf8_lossy / the WHATWG decoder do).
char32_t next_codepoint(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t cp);
std::string to_utf8(char32_t cp);

// True when s is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool valid_utf8(std::string_view s);
// s with each maximal invalid sequence replaced by U+FFFD (from_utf8_lossy semantics).
std::string sanitize_utf8(std::string_view s);
// Length of the longest prefix of s that ends on a complete character: bytes after it are the start
// of a character that may still be completed by more bytes.
size_t complete_utf8_prefix(std::string_view s);

// Unicode White_Space (Rust's char::is_whitespace).
bool is_whitespace(char32_t c);

// Canonical composition (NFC), from the tables of gen_unicode_data.py.
std::string nfc(std::string_view s);
// Canonical decomposition (NFD), as code points.
std::vector<char32_t> nfd_codepoints(std::string_view s);

// Character properties (unicode_props.cpp, the tables of gen_unicode_props.py), as Rust's char
// methods and the unicode_categories crate answer them for Hugging Face tokenizers.
bool is_mark_nonspacing(char32_t c);  // Mn
bool is_mark(char32_t c);             // M* (Mn, Mc, Me)
bool is_punctuation(char32_t c);      // P*
bool is_other(char32_t c);            // Cc, Cf, Cs, Co (not Cn: as tokenizers' is_other)
// The lowercase mapping of c (one or two characters) appended to out.
void append_lower(std::string& out, char32_t c);

// GPT-2's byte-level alphabet: byte -> code point, and back (-1 for code points outside it).
const std::array<char32_t, 256>& byte_to_unicode();
int unicode_to_byte(char32_t cp);
// Each byte of s mapped to its byte-level character (UTF-8).
std::string bytes_to_byte_level(std::string_view s);

}  // namespace wgc::llm::unicode
