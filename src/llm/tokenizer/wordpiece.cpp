#include "llm/tokenizer/wordpiece.h"

#include "llm/tokenizer/unicode.h"

namespace wgc::llm::wordpiece {

namespace {

// Rust's char::is_whitespace plus the control characters BERT counts as whitespace.
bool bert_space(char32_t c) { return c == '\t' || c == '\n' || c == '\r' || unicode::is_whitespace(c); }
bool bert_control(char32_t c) { return c != '\t' && c != '\n' && c != '\r' && unicode::is_other(c); }
bool chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}
// BertPreTokenizer's punctuation: ASCII punctuation or a Unicode P* character.
bool bert_punct(char32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126) ||
         unicode::is_punctuation(c);
}

std::vector<char32_t> codepoints(std::string_view s) {
  std::vector<char32_t> cps;
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) cps.push_back(unicode::next_codepoint(s, i));
  return cps;
}

std::string utf8(const std::vector<char32_t>& cps) {
  std::string r;
  r.reserve(cps.size());
  for (char32_t c : cps) unicode::append_utf8(r, c);
  return r;
}

std::string lower(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (size_t i = 0; i < s.size();) unicode::append_lower(r, unicode::next_codepoint(s, i));
  return r;
}

// BertNormalizer drops nonspacing marks (Mn); the StripAccents normalizer every combining mark
// (tokenizers' is_combining_mark: Mn, Mc, Me).
std::string strip_marks(const std::vector<char32_t>& cps, bool all_marks) {
  std::string r;
  for (char32_t c : cps)
    if (!(all_marks ? unicode::is_mark(c) : unicode::is_mark_nonspacing(c))) unicode::append_utf8(r, c);
  return r;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out += to;
  }
  if (pos == 0) return;
  out.append(s, pos);
  s = std::move(out);
}

}  // namespace

void normalize(const NormalizerStep& n, std::string& s) {
  using K = NormalizerStep::Kind;
  switch (n.kind) {
    case K::NFD: s = utf8(unicode::nfd_codepoints(s)); return;
    case K::Lowercase: s = lower(s); return;
    case K::StripAccents: s = strip_marks(codepoints(s), true); return;
    case K::Bert: break;
    default: return;
  }
  std::vector<char32_t> cps;
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t c = unicode::next_codepoint(s, i);
    if (n.clean_text) {
      if (c == 0 || c == 0xFFFD || bert_control(c)) continue;
      if (bert_space(c)) c = ' ';
    }
    if (n.chinese_chars && chinese(c)) {
      cps.push_back(' ');
      cps.push_back(c);
      cps.push_back(' ');
    } else {
      cps.push_back(c);
    }
  }
  if (n.strip_accents) {
    s = strip_marks(unicode::nfd_codepoints(utf8(cps)), false);
  } else {
    s = utf8(cps);
  }
  if (n.lowercase) s = lower(s);
}

std::vector<std::pair<size_t, size_t>> pre_tokenize(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t word = std::string_view::npos;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t c = unicode::next_codepoint(s, i);
    const bool space = unicode::is_whitespace(c), punct = !space && bert_punct(c);
    if (space || punct) {
      if (word != std::string_view::npos) out.emplace_back(word, at);
      word = std::string_view::npos;
      if (punct) out.emplace_back(at, i);
    } else if (word == std::string_view::npos) {
      word = at;
    }
  }
  if (word != std::string_view::npos) out.emplace_back(word, s.size());
  return out;
}

void encode_word(const std::string& word, const std::unordered_map<std::string, int32_t>& vocab,
                 const TokenizerSpec& spec, std::vector<int32_t>& out) {
  size_t chars = 0;
  for (size_t i = 0; i < word.size(); i += unicode::utf8_len(static_cast<unsigned char>(word[i]))) ++chars;
  auto unk = [&] {
    if (spec.unk_id) out.push_back(*spec.unk_id);
  };
  if (int64_t(chars) > spec.max_input_chars_per_word) return unk();
  std::vector<int32_t> ids;
  std::string key;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    int32_t found = -1;
    while (start < end) {
      key.assign(start > 0 ? spec.continuing_subword_prefix : std::string());
      key.append(word, start, end - start);
      if (auto it = vocab.find(key); it != vocab.end()) {
        found = it->second;
        break;
      }
      // Back by one character.
      do --end;
      while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (found < 0) return unk();
    ids.push_back(found);
    start = end;
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

void decode(const DecoderStep& st, std::vector<std::string>& toks) {
  for (size_t i = 0; i < toks.size(); ++i) {
    std::string& t = toks[i];
    if (i != 0) {
      if (!st.a.empty() && t.starts_with(st.a))
        t.erase(0, st.a.size());
      else
        t = " " + t;  // (not insert(0, " "): GCC 12 warns, wrongly, -Wrestrict)
    }
    if (st.cleanup) {
      for (auto [from, to] : {std::pair<const char*, const char*>{" .", "."},
                              {" ?", "?"},
                              {" !", "!"},
                              {" ,", ","},
                              {" ' ", "'"},
                              {" n't", "n't"},
                              {" 'm", "'m"},
                              {" do not", " don't"},
                              {" 's", "'s"},
                              {" 've", "'ve"},
                              {" 're", "'re"}})
        replace_all(t, from, to);
    }
  }
}

}  // namespace wgc::llm::wordpiece
