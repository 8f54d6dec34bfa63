#include "llm/tokenizer/unicode.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace wgc::llm::unicode {
namespace {

struct CccRange {
  char32_t first, last;
  uint8_t ccc;
};
struct Decomp {
  char32_t cp, a, b;
};
struct Comp {
  char32_t a, b, cp;
};
#include "llm/tokenizer/unicode_data.inc"

constexpr char32_t kReplacement = 0xFFFD;
constexpr char32_t SBase = 0xAC00, LBase = 0x1100, VBase = 0x1161, TBase = 0x11A7;
constexpr char32_t LCount = 19, VCount = 21, TCount = 28, NCount = VCount * TCount, SCount = LCount * NCount;

uint8_t ccc(char32_t c) {
  if (c < 0x300) return 0;
  auto it =
      std::upper_bound(std::begin(kCcc), std::end(kCcc), c, [](char32_t v, const CccRange& r) { return v < r.first; });
  if (it == std::begin(kCcc)) return 0;
  --it;
  return c <= it->last ? it->ccc : 0;
}

const Decomp* find_decomp(char32_t c) {
  auto it =
      std::lower_bound(std::begin(kDecomp), std::end(kDecomp), c, [](const Decomp& d, char32_t v) { return d.cp < v; });
  return it != std::end(kDecomp) && it->cp == c ? it : nullptr;
}

void decompose(char32_t c, std::vector<char32_t>& out) {
  if (c >= SBase && c < SBase + SCount) {
    char32_t s = c - SBase;
    out.push_back(LBase + s / NCount);
    out.push_back(VBase + (s % NCount) / TCount);
    if (s % TCount) out.push_back(TBase + s % TCount);
    return;
  }
  if (c < 0xC0) {
    out.push_back(c);
    return;
  }
  const Decomp* d = find_decomp(c);
  if (!d) {
    out.push_back(c);
    return;
  }
  decompose(d->a, out);
  if (d->b) decompose(d->b, out);
}

char32_t compose(char32_t a, char32_t b) {
  if (a >= LBase && a < LBase + LCount && b >= VBase && b < VBase + VCount)
    return SBase + ((a - LBase) * VCount + (b - VBase)) * TCount;
  if (a >= SBase && a < SBase + SCount && (a - SBase) % TCount == 0 && b > TBase && b < TBase + TCount)
    return a + (b - TBase);
  auto it = std::lower_bound(
      std::begin(kComp), std::end(kComp), std::pair{a, b},
      [](const Comp& x, std::pair<char32_t, char32_t> v) { return x.a != v.first ? x.a < v.first : x.b < v.second; });
  return it != std::end(kComp) && it->a == a && it->b == b ? it->cp : 0;
}

}  // namespace

char32_t next_codepoint(std::string_view s, size_t& i) {
  auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  size_t n = 0;
  char32_t cp = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 1, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 2, cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 3, cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    ++i;
    return kReplacement;
  }
  ++i;
  for (size_t k = 0; k < n; ++k) {
    if (i >= s.size()) return kReplacement;
    auto b = static_cast<unsigned char>(s[i]);
    if (b < lo || b > hi) return kReplacement;
    lo = 0x80, hi = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
    ++i;
  }
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string to_utf8(char32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t start = i;
    char32_t cp = next_codepoint(s, i);
    if (cp == kReplacement && !(i - start == 3 && s.substr(start, 3) == "\xEF\xBF\xBD")) return false;
  }
  return true;
}

std::string sanitize_utf8(std::string_view s) {
  if (valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) append_utf8(out, next_codepoint(s, i));
  return out;
}

size_t complete_utf8_prefix(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence is not finished yet.
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    auto b = static_cast<unsigned char>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation: keep looking for the lead
    size_t need = utf8_len(b);
    if (need > back) {
      // Only hold back when what is there could still become valid.
      size_t i = n - back;
      std::string_view tail = s.substr(i);
      size_t j = 0;
      next_codepoint(tail, j);
      if (j == tail.size()) return n - back;  // consumed everything: a valid, truncated prefix
    }
    return n;
  }
  return n;
}

bool is_whitespace(char32_t c) {
  return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<char32_t> nfd_codepoints(std::string_view s) {
  std::vector<char32_t> cps;
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) decompose(next_codepoint(s, i), cps);
  // Canonical ordering: stable sort of each run of non-starters by combining class.
  for (size_t i = 0; i < cps.size();) {
    if (ccc(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && ccc(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + long(i), cps.begin() + long(j),
                     [](char32_t a, char32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
  return cps;
}

std::string nfc(std::string_view s) {
  // Quick check: text below U+0300 is already in NFC.
  bool quick = true;
  for (size_t i = 0; i < s.size() && quick; ++i) {
    auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0xCC) quick = false;  // lead bytes of U+0300 and above
  }
  if (quick) return std::string(s);

  std::vector<char32_t> cps = nfd_codepoints(s);
  // Canonical composition.
  std::vector<char32_t> out;
  out.reserve(cps.size());
  long starter = -1;
  int last_ccc = -1;  // class of the last character appended after the starter (-1: none)
  for (char32_t c : cps) {
    int cc = ccc(c);
    if (starter >= 0) {
      bool blocked = last_ccc != -1 && (last_ccc == 0 || last_ccc >= cc);
      if (!blocked) {
        if (char32_t comp = compose(out[size_t(starter)], c)) {
          out[size_t(starter)] = comp;
          continue;
        }
      }
    }
    if (cc == 0) {
      starter = long(out.size());
      last_ccc = -1;
    } else {
      last_ccc = cc;
    }
    out.push_back(c);
  }
  std::string r;
  r.reserve(s.size());
  for (char32_t c : out) append_utf8(r, c);
  return r;
}

const std::array<char32_t, 256>& byte_to_unicode() {
  static const std::array<char32_t, 256> map = [] {
    std::array<char32_t, 256> m{};
    char32_t n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      m[size_t(b)] = printable ? char32_t(b) : 256 + n++;
    }
    return m;
  }();
  return map;
}

int unicode_to_byte(char32_t cp) {
  static const std::unordered_map<char32_t, int> inv = [] {
    std::unordered_map<char32_t, int> m;
    const auto& f = byte_to_unicode();
    for (int b = 0; b < 256; ++b) m[f[size_t(b)]] = b;
    return m;
  }();
  auto it = inv.find(cp);
  return it == inv.end() ? -1 : it->second;
}

std::string bytes_to_byte_level(std::string_view s) {
  static const std::array<std::string, 256> enc = [] {
    std::array<std::string, 256> e;
    for (size_t b = 0; b < 256; ++b) e[b] = to_utf8(byte_to_unicode()[b]);
    return e;
  }();
  std::string out;
  out.reserve(s.size() * 2);
  for (char ch : s) out += enc[static_cast<unsigned char>(ch)];
  return out;
}

}  // namespace wgc::llm::unicode
