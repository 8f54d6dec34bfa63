#include "llm/tokenizer/unicode.h"

#include <algorithm>
#include <iterator>

namespace wgc::llm::unicode {
namespace {

struct Range {
  char32_t first, last;
};
struct Lower {
  char32_t cp, a, b;
};
#include "llm/tokenizer/unicode_props.inc"

template <size_t N>
bool in(const Range (&table)[N], char32_t c) {
  auto it =
      std::upper_bound(std::begin(table), std::end(table), c, [](char32_t v, const Range& r) { return v < r.first; });
  if (it == std::begin(table)) return false;
  --it;
  return c <= it->last;
}

}  // namespace

bool is_mark_nonspacing(char32_t c) { return c >= 0x300 && in(kMn, c); }
bool is_mark(char32_t c) { return c >= 0x300 && in(kMark, c); }
bool is_punctuation(char32_t c) { return in(kPunct, c); }
bool is_other(char32_t c) { return in(kOther, c); }

void append_lower(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  auto it =
      std::lower_bound(std::begin(kLower), std::end(kLower), c, [](const Lower& l, char32_t v) { return l.cp < v; });
  if (it == std::end(kLower) || it->cp != c) {
    append_utf8(out, c);
    return;
  }
  append_utf8(out, it->a);
  if (it->b) append_utf8(out, it->b);
}

}  // namespace wgc::llm::unicode
