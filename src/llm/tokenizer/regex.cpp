#include "llm/tokenizer/regex.h"

#include "util/error.h"

#include <memory>

#if WGC_HAVE_PCRE2
#include <pcre2.h>
#endif

namespace wgc::llm {

#if WGC_HAVE_PCRE2

namespace {
// One match-data block per thread, for every pattern: only the whole match's offsets are read, so
// one ovector pair is enough (pcre2_match then returns 0 for patterns with groups).
pcre2_match_data* thread_match_data() {
  thread_local std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> md(pcre2_match_data_create(1, nullptr),
                                                                                 pcre2_match_data_free);
  return md.get();
}
}  // namespace

// Hugging Face compiles these patterns with Oniguruma, whose \s is Unicode White_Space; PCRE2's
// also takes U+180E (and its class differs across versions). Spell \s and \S out as White_Space.
constexpr const char* kWhiteSpace =
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string onig_compatible(const std::string& p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      ++i;
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ] first in the class
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

Regex::Regex(const std::string& pattern_in, const std::string& where) {
  const std::string pattern = onig_compatible(pattern_in);
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                   &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(where + ": regex does not compile at offset " + std::to_string(off) + ": " +
                reinterpret_cast<const char*>(msg) + " (pattern: " + pattern_in + ")");
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
  code_ = std::shared_ptr<void>(code, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  auto* code = static_cast<const pcre2_code*>(code_.get());
  if (!code) return out;
  pcre2_match_data* md = thread_match_data();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  uint32_t opts = PCRE2_NO_UTF_CHECK;
  while (pos <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), pos, opts, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("regex match failed: ") + reinterpret_cast<const char*>(msg));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: step one character on
      if (b >= text.size()) break;
      pos = b + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    out.emplace_back(b, e);
    pos = e;
  }
  return out;
}

#else

Regex::Regex(const std::string& pattern, const std::string& where) {
  throw Error(where + ": this build of wgc has no PCRE2, needed for the regex " + pattern);
}
std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view) const { return {}; }

#endif

}  // namespace wgc::llm
