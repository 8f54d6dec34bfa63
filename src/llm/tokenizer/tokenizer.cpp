#include "llm/tokenizer/tokenizer.h"

#include "llm/tokenizer/regex.h"
#include "llm/tokenizer/unicode.h"
#include "llm/tokenizer/unigram.h"
#include "llm/tokenizer/wordpiece.h"
#include "util/error.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace wgc::llm {

namespace {

// GPT-2's pre-tokenizer regex (ByteLevel with use_regex).
constexpr const char* kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr size_t kCacheCapacity = 10000;

// A normalizer, pre-tokenizer or decoder step may make a text longer (NFC, "▁" for " ", a
// prefix), but not by more than this: a tokenizer.json whose Replace turns "a" into 100,000 "b"
// would turn kilobytes of input into gigabytes. Such a text is refused before it is grown.
constexpr size_t kMaxGrowth = 4;
constexpr size_t kGrowthSlack = 64;  // bytes, for prefixes of short texts
size_t growth_limit(size_t n) { return kMaxGrowth * n + kGrowthSlack; }

[[noreturn]] void too_long(const std::string& source, std::string_view step, size_t in, size_t limit) {
  throw Error(source + ": the " + std::string(step) + " makes a text of " + std::to_string(in) + " bytes longer than " +
              std::to_string(limit) + " bytes (at most " + std::to_string(kMaxGrowth) + "x its length + " +
              std::to_string(kGrowthSlack) + "): the tokenizer is malformed");
}

// Replaces every `from` by `to`; past `limit` bytes, too_long() (naming `source` and `step`).
void replace_all(std::string& s, std::string_view from, std::string_view to, size_t limit, const std::string& source,
                 std::string_view step) {
  if (from.empty()) return;
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    if (out.size() > limit) too_long(source, step, s.size(), limit);
    pos = hit + from.size();
  }
  if (pos == 0) return;
  out.append(s, pos);
  if (out.size() > limit) too_long(source, step, s.size(), limit);
  s = std::move(out);
}

// A piece of text on its way through the pipeline. `token` >= 0 once it is an added token.
struct Piece {
  std::string text;
  int32_t token = -1;
  bool at_start = false;  // begins at offset 0 of the input (Metaspace "first")
};

struct MergeValue {
  uint32_t rank;
  int32_t new_id;
};

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

}  // namespace

struct Tokenizer::Impl {
  TokenizerSpec spec;
  std::unordered_map<std::string, int32_t> vocab;  // the model's pieces
  std::vector<std::string> pieces;                 // id -> piece (added tokens included)
  std::vector<uint8_t> special;                    // id -> special added token
  std::vector<uint8_t> stop_flag;
  std::unordered_map<std::string, int32_t> added_ids;
  // Added-token matchers: indices into spec.added per first byte, longest first.
  std::array<std::vector<uint32_t>, 256> match_raw, match_norm;
  std::vector<std::string> patterns;  // per added token: the text matched
  bool any_raw = false, any_norm = false;
  std::unordered_map<uint64_t, MergeValue> merges;
  std::vector<Regex> norm_regex, pre_regex;
  std::vector<unigram::Charsmap> charsmaps;  // per normalizer step (Precompiled ones filled)
  unigram::Model ugm;                        // spec.unigram
  Regex gpt2;
  std::vector<int32_t> byte_ids;  // <0xNN> -> id, -1 when absent
  std::string empty;

  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  [[noreturn]] void fail(const std::string& what) const { throw Error(spec.source + ": " + what); }

  void build();
  std::vector<Piece> split_added(std::vector<Piece> in, bool normalized) const;
  void normalize(std::string& s) const;
  std::vector<Piece> pre_tokenize(std::vector<Piece> in) const;
  void bpe(const std::string& word, std::vector<int32_t>& out) const;
  void merge_word(const std::string& word, std::vector<int32_t>& out) const;
  std::vector<int32_t> encode(std::string_view text, bool add_special) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special, bool keep_invalid = false) const;
};

void Tokenizer::Impl::build() {
  if (spec.vocab.empty()) fail("the vocabulary is empty");
  vocab.reserve(spec.vocab.size() * 2);
  for (size_t i = 0; i < spec.vocab.size(); ++i)
    if (!spec.vocab[i].empty()) vocab.emplace(spec.vocab[i], int32_t(i));
  // Ids of added tokens as HF assigns them (the file's ids only agree when the file is consistent):
  // a vocabulary piece keeps its id, a new text gets the next id past the vocabulary.
  {
    std::unordered_map<std::string, int32_t> assigned;
    int64_t max_id = -1;
    const auto model_size = int64_t(vocab.size());
    for (auto& a : spec.added) {
      if (a.content.empty()) fail("added token " + std::to_string(a.id) + " is empty");
      if (auto it = vocab.find(a.content); it != vocab.end()) {
        a.id = it->second;
      } else if (auto at = assigned.find(a.content); at != assigned.end()) {
        a.id = at->second;
      } else {
        a.id = int32_t(max_id < 0 || max_id < model_size ? model_size : max_id + 1);
      }
      assigned[a.content] = a.id;
      max_id = std::max<int64_t>(max_id, a.id);
    }
  }
  size_t n = spec.vocab.size();
  for (auto& a : spec.added) n = std::max(n, size_t(a.id) + 1);
  pieces.assign(n, std::string());
  special.assign(n, 0);
  for (size_t i = 0; i < spec.vocab.size(); ++i) pieces[i] = spec.vocab[i];
  for (size_t k = 0; k < spec.added.size(); ++k) {
    auto& a = spec.added[k];
    pieces[size_t(a.id)] = a.content;
    special[size_t(a.id)] = a.special;
    added_ids[a.content] = a.id;
  }
  auto check_id = [&](std::optional<int32_t> id, const char* what) {
    if (id && (*id < 0 || size_t(*id) >= n)) fail(std::string(what) + " id " + std::to_string(*id) + " out of range");
  };
  check_id(spec.unk_id, "unk");
  check_id(spec.bos_id, "bos");
  check_id(spec.eos_id, "eos");
  for (int32_t id : spec.prefix) check_id(id, "post-processor");
  for (int32_t id : spec.suffix) check_id(id, "post-processor");
  stop_flag.assign(n, 0);
  for (int32_t id : spec.stop_ids) {
    check_id(id, "stop token");
    stop_flag[size_t(id)] = 1;
  }

  // Merges: by rank, or derived from the scores of the merged pieces (SentencePiece).
  if (!spec.merges.empty()) {
    merges.reserve(spec.merges.size() * 2);
    std::string ab;
    for (size_t i = 0; i < spec.merges.size(); ++i) {
      auto& [a, b] = spec.merges[i];
      ab.assign(a);
      ab += b;
      auto ia = vocab.find(a), ib = vocab.find(b), ic = vocab.find(ab);
      if (ia == vocab.end() || ib == vocab.end() || ic == vocab.end())
        fail("merges[" + std::to_string(i) + "] ('" + a + " " + b + "') names a piece that is not in the vocabulary");
      merges[pair_key(ia->second, ib->second)] = MergeValue{uint32_t(i), ic->second};
    }
  } else if (spec.unigram) {
    ugm = unigram::Model(spec);
  } else if (!spec.scores.empty()) {
    if (spec.scores.size() != spec.vocab.size())
      fail("scores has " + std::to_string(spec.scores.size()) + " entries for " + std::to_string(spec.vocab.size()) +
           " tokens");
    // As Hugging Face's SentencePiece converter: every split of a piece into two pieces is a merge,
    // ranked by the piece's score (highest first), then by the ids of the two parts. Files whose
    // scores carry no order (all equal, e.g. GGUFs converted from a tokenizer.json) rank by piece id,
    // pieces made only of U+2581 last: the order those conversions had.
    struct Triple {
      int32_t a, b, t;
    };
    std::vector<Triple> triples;
    std::optional<float> first_score;
    bool degenerate = true;
    for (size_t t = 0; t < spec.vocab.size(); ++t) {
      const std::string& p = spec.vocab[t];
      if (p.size() < 2 || std::isinf(spec.scores[t]) || vocab.find(p)->second != int32_t(t)) continue;
      if (!first_score) first_score = spec.scores[t];
      degenerate = degenerate && spec.scores[t] == *first_score;
      for (size_t k = unicode::utf8_len(static_cast<unsigned char>(p[0])); k < p.size();
           k += unicode::utf8_len(static_cast<unsigned char>(p[k]))) {
        auto ia = vocab.find(p.substr(0, k)), ib = vocab.find(p.substr(k));
        if (ia != vocab.end() && ib != vocab.end()) triples.push_back({ia->second, ib->second, int32_t(t)});
      }
    }
    auto only_spaces = [&](int32_t t) {
      const std::string& p = spec.vocab[size_t(t)];
      for (size_t i = 0; i + 3 <= p.size(); i += 3)
        if (p.compare(i, 3, "\xE2\x96\x81") != 0) return false;
      return p.size() % 3 == 0;
    };
    std::stable_sort(triples.begin(), triples.end(), [&](const Triple& x, const Triple& y) {
      if (degenerate) {
        bool sx = only_spaces(x.t), sy = only_spaces(y.t);
        if (sx != sy) return sy;
      } else if (spec.scores[size_t(x.t)] != spec.scores[size_t(y.t)]) {
        return spec.scores[size_t(x.t)] > spec.scores[size_t(y.t)];
      }
      if (x.t != y.t) return x.t < y.t;
      return x.a != y.a ? x.a < y.a : x.b < y.b;
    });
    merges.reserve(triples.size() * 2);
    for (size_t i = 0; i < triples.size(); ++i)
      merges.emplace(pair_key(triples[i].a, triples[i].b), MergeValue{uint32_t(i), triples[i].t});
  }
  byte_ids.assign(256, -1);
  if (spec.byte_fallback)
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = vocab.find(name);
      if (it != vocab.end()) byte_ids[size_t(b)] = it->second;
    }

  for (size_t i = 0; i < spec.normalizer.size(); ++i) {
    auto& s = spec.normalizer[i];
    norm_regex.push_back(s.kind == NormalizerStep::Kind::ReplaceRegex
                             ? Regex(s.a, spec.source + ": normalizer " + std::to_string(i))
                             : Regex());
    charsmaps.push_back(s.kind == NormalizerStep::Kind::Precompiled ? unigram::Charsmap(s.a, spec.source)
                                                                    : unigram::Charsmap());
  }
  // Added-token matchers. Tokens matched in normalized text are looked for as the normalizer
  // writes them (HF normalizes their content too: with a Prepend normalizer, "▁" + content).
  patterns.resize(spec.added.size());
  for (size_t k = 0; k < spec.added.size(); ++k) {
    const auto& a = spec.added[k];
    patterns[k] = a.content;
    if (a.normalized) normalize(patterns[k]);
    if (patterns[k].empty()) continue;
    auto& m = a.normalized ? match_norm : match_raw;
    m[static_cast<unsigned char>(patterns[k][0])].push_back(uint32_t(k));
    (a.normalized ? any_norm : any_raw) = true;
  }
  for (auto* m : {&match_raw, &match_norm})
    for (auto& v : *m)
      std::stable_sort(v.begin(), v.end(),
                       [&](uint32_t x, uint32_t y) { return patterns[x].size() > patterns[y].size(); });
  bool need_gpt2 = false;
  for (size_t i = 0; i < spec.pre_tokenizer.size(); ++i) {
    auto& s = spec.pre_tokenizer[i];
    using K = PreTokenizerStep::Kind;
    Regex r;
    if (s.kind == K::Split && s.regex) r = Regex(s.pattern, spec.source + ": pre_tokenizer " + std::to_string(i));
    if (s.kind == K::Digits) r = Regex(s.individual_digits ? "\\p{N}" : "\\p{N}+", "Digits");
    if (s.kind == K::WhitespaceSplit) r = Regex("\\s+", "WhitespaceSplit");
    if (s.kind == K::ByteLevel && s.use_regex) need_gpt2 = true;
    pre_regex.push_back(std::move(r));
  }
  if (need_gpt2) gpt2 = Regex(kGpt2Regex, "ByteLevel");
}

// Splits the pieces that are still text on the added tokens (HF AddedVocabulary::find_matches).
std::vector<Piece> Tokenizer::Impl::split_added(std::vector<Piece> in, bool normalized) const {
  if (!(normalized ? any_norm : any_raw)) return in;
  const auto& table = normalized ? match_norm : match_raw;
  std::vector<Piece> out;
  for (auto& p : in) {
    if (p.token >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    const std::string& s = p.text;
    size_t start_offset = 0;
    for (size_t i = 0; i < s.size();) {
      const AddedToken* hit = nullptr;
      size_t hit_len = 0;
      for (uint32_t k : table[static_cast<unsigned char>(s[i])]) {
        if (s.compare(i, patterns[k].size(), patterns[k]) == 0) {
          hit = &spec.added[k];
          hit_len = patterns[k].size();
          break;
        }
      }
      if (!hit) {
        ++i;
        continue;
      }
      size_t start = i, stop = i + hit_len;
      i = stop;
      if (hit->single_word) {
        auto is_word = [](char32_t c) {
          return c == '_' || (c < 0x80 ? std::isalnum(int(c)) != 0 : !unicode::is_whitespace(c));
        };
        bool start_ok = true, stop_ok = true;
        if (start > 0) {
          size_t j = start - 1;
          while (j > 0 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
          size_t q = j;
          start_ok = !is_word(unicode::next_codepoint(s, q));
        }
        if (stop < s.size()) {
          size_t q = stop;
          stop_ok = !is_word(unicode::next_codepoint(s, q));
        }
        if (!start_ok || !stop_ok) continue;
      }
      if (hit->lstrip) {
        size_t ns = start;
        while (ns > 0) {
          size_t j = ns - 1;
          while (j > 0 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
          size_t q = j;
          if (!unicode::is_whitespace(unicode::next_codepoint(s, q))) break;
          ns = j;
        }
        start = std::max(ns, start_offset);
      }
      if (hit->rstrip) {
        while (stop < s.size()) {
          size_t q = stop;
          if (!unicode::is_whitespace(unicode::next_codepoint(s, q))) break;
          stop = q;
        }
        i = stop;
      }
      if (start_offset < start)
        out.push_back(Piece{s.substr(start_offset, start - start_offset), -1, p.at_start && start_offset == 0});
      out.push_back(Piece{std::string(), hit->id, false});
      start_offset = stop;
    }
    if (start_offset == 0) {
      out.push_back(std::move(p));
    } else if (start_offset < s.size()) {
      out.push_back(Piece{s.substr(start_offset), -1, false});
    }
  }
  return out;
}

void Tokenizer::Impl::normalize(std::string& s) const {
  using K = NormalizerStep::Kind;
  // The whole chain of steps together grows the text at most growth_limit().
  const size_t in = s.size(), limit = growth_limit(in);
  for (size_t i = 0; i < spec.normalizer.size(); ++i) {
    const auto& n = spec.normalizer[i];
    switch (n.kind) {
      case K::NFC: s = unicode::nfc(s); break;
      case K::Prepend:
        if (!s.empty()) {
          if (s.size() + n.a.size() > limit) too_long(spec.source, "normalizer's Prepend", in, limit);
          s.insert(0, n.a);
        }
        break;
      case K::Replace: replace_all(s, n.a, n.b, limit, spec.source, "normalizer's Replace"); break;
      case K::ReplaceRegex: {
        auto m = norm_regex[i].find_all(s);
        if (m.empty()) break;
        std::string out;
        size_t pos = 0;
        for (auto [b, e] : m) {
          out.append(s, pos, b - pos);
          out += n.b;
          if (out.size() > limit) too_long(spec.source, "normalizer's Replace", in, limit);
          pos = e;
        }
        out.append(s, pos);
        s = std::move(out);
        break;
      }
      case K::Strip: {
        size_t b = 0, e = s.size();
        if (n.left)
          while (b < e) {
            size_t q = b;
            if (!unicode::is_whitespace(unicode::next_codepoint(s, q))) break;
            b = q;
          }
        if (n.right)
          while (e > b) {
            size_t j = e - 1;
            while (j > b && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
            size_t q = j;
            if (!unicode::is_whitespace(unicode::next_codepoint(s, q))) break;
            e = j;
          }
        s = s.substr(b, e - b);
        break;
      }
      case K::Bert:
      case K::NFD:
      case K::Lowercase:
      case K::StripAccents: wordpiece::normalize(n, s); break;
      case K::Precompiled: s = charsmaps[i].normalize(s); break;
    }
    if (s.size() > limit) too_long(spec.source, "normalizer", in, limit);
  }
}

namespace {

// HF NormalizedString::split: (range, is_match) pieces -> kept ranges.
std::vector<std::pair<size_t, size_t>> split_ranges(size_t len, const std::vector<std::pair<size_t, size_t>>& hits,
                                                    SplitBehavior behavior, bool invert) {
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> m;
  size_t prev = 0;
  for (auto [b, e] : hits) {
    if (prev != b) m.push_back({{prev, b}, false});
    m.push_back({{b, e}, true});
    prev = e;
  }
  if (prev != len) m.push_back({{prev, len}, false});
  if (invert)
    for (auto& x : m) x.second = !x.second;
  std::vector<std::pair<size_t, size_t>> out;
  bool previous = false;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (auto& x : m) out.push_back(x.first);
      break;
    case SplitBehavior::Removed:
      for (auto& x : m)
        if (!x.second) out.push_back(x.first);
      break;
    case SplitBehavior::Contiguous:
      for (auto& x : m) {
        if (x.second == previous && !out.empty())
          out.back().second = x.first.second;
        else
          out.push_back(x.first);
        previous = x.second;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (auto& x : m) {
        if (x.second && !previous && !out.empty())
          out.back().second = x.first.second;
        else
          out.push_back(x.first);
        previous = x.second;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = m.rbegin(); it != m.rend(); ++it) {
        if (it->second && !previous && !out.empty())
          out.back().first = it->first.first;
        else
          out.push_back(it->first);
        previous = it->second;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  return out;
}

std::vector<std::pair<size_t, size_t>> find_literal(std::string_view s, std::string_view pat) {
  std::vector<std::pair<size_t, size_t>> out;
  if (pat.empty()) return out;
  for (size_t pos = s.find(pat); pos != std::string_view::npos; pos = s.find(pat, pos + pat.size()))
    out.emplace_back(pos, pos + pat.size());
  return out;
}

}  // namespace

std::vector<Piece> Tokenizer::Impl::pre_tokenize(std::vector<Piece> pieces_in) const {
  using K = PreTokenizerStep::Kind;
  std::vector<Piece> cur = std::move(pieces_in);
  for (size_t i = 0; i < spec.pre_tokenizer.size(); ++i) {
    const auto& st = spec.pre_tokenizer[i];
    std::vector<Piece> next;
    for (auto& p : cur) {
      auto emit = [&](std::string_view s, const std::vector<std::pair<size_t, size_t>>& ranges) {
        for (auto [b, e] : ranges)
          if (e > b) next.push_back(Piece{std::string(s.substr(b, e - b)), -1, p.at_start && b == 0});
      };
      switch (st.kind) {
        case K::Split: {
          auto hits = st.regex ? pre_regex[i].find_all(p.text) : find_literal(p.text, st.pattern);
          emit(p.text, split_ranges(p.text.size(), hits, st.behavior, st.invert));
          break;
        }
        case K::Digits:
          emit(p.text, split_ranges(p.text.size(), pre_regex[i].find_all(p.text),
                                    st.individual_digits ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false));
          break;
        case K::WhitespaceSplit:
          emit(p.text, split_ranges(p.text.size(), pre_regex[i].find_all(p.text), SplitBehavior::Removed, false));
          break;
        case K::Bert: emit(p.text, wordpiece::pre_tokenize(p.text)); break;
        case K::ByteLevel: {
          std::string s = std::move(p.text);
          if (st.add_prefix_space && !s.starts_with(' ')) s.insert(0, " ");
          if (st.use_regex) {
            for (auto [b, e] : split_ranges(s.size(), gpt2.find_all(s), SplitBehavior::Isolated, false))
              if (e > b)
                next.push_back(Piece{unicode::bytes_to_byte_level(std::string_view(s).substr(b, e - b)), -1,
                                     p.at_start && b == 0});
          } else if (!s.empty()) {
            next.push_back(Piece{unicode::bytes_to_byte_level(s), -1, p.at_start});
          }
          break;
        }
        case K::Metaspace: {
          std::string s = std::move(p.text);
          const size_t in = s.size(), limit = growth_limit(in);
          replace_all(s, " ", st.replacement, limit, spec.source, "pre-tokenizer's Metaspace");
          bool pre = st.prepend == PreTokenizerStep::Prepend::Always ||
                     (st.prepend == PreTokenizerStep::Prepend::First && p.at_start);
          if (pre && !s.starts_with(st.replacement)) {
            if (s.size() + st.replacement.size() > limit) too_long(spec.source, "pre-tokenizer's Metaspace", in, limit);
            s.insert(0, st.replacement);
          }
          if (st.split)
            emit(s, split_ranges(s.size(), find_literal(s, st.replacement), SplitBehavior::MergedWithNext, false));
          else if (!s.empty())
            next.push_back(Piece{std::move(s), -1, p.at_start});
          break;
        }
      }
    }
    cur = std::move(next);
  }
  return cur;
}

// HF BPE::merge_word + Word::merge_all: characters (or byte fallback / unk), then merges by rank,
// the leftmost first among equal ranks.
void Tokenizer::Impl::merge_word(const std::string& w, std::vector<int32_t>& out) const {
  struct Sym {
    int32_t id;
    int32_t prev, next;
    uint32_t len;
  };
  std::vector<Sym> syms;
  syms.reserve(w.size());
  auto add = [&](int32_t id, size_t len) {
    int32_t idx = int32_t(syms.size());
    syms.push_back(Sym{id, idx - 1, idx + 1, uint32_t(len)});
  };
  int32_t unk_id = -1;  // a pending unknown run
  size_t unk_len = 0;
  const bool has_prefix = !spec.continuing_subword_prefix.empty(), has_suffix = !spec.end_of_word_suffix.empty();
  std::string tmp;
  for (size_t i = 0; i < w.size();) {
    size_t len = unicode::utf8_len(static_cast<unsigned char>(w[i]));
    len = std::min(len, w.size() - i);
    bool first = i == 0, last = i + len == w.size();
    std::string_view ch(w.data() + i, len);
    i += len;
    const std::string* key;
    std::string s;
    if ((has_prefix && !first) || (has_suffix && last)) {
      s = std::string(has_prefix && !first ? spec.continuing_subword_prefix : "") + std::string(ch) +
          (has_suffix && last ? spec.end_of_word_suffix : "");
      key = &s;
    } else {
      tmp.assign(ch);
      key = &tmp;
    }
    auto it = vocab.find(*key);
    if (it != vocab.end()) {
      if (unk_id >= 0) {
        add(unk_id, unk_len);
        unk_id = -1;
      }
      add(it->second, len);
      continue;
    }
    if (spec.byte_fallback) {
      bool ok = true;
      for (char c : *key) ok = ok && byte_ids[static_cast<unsigned char>(c)] >= 0;
      if (ok) {
        for (char c : *key) add(byte_ids[static_cast<unsigned char>(c)], 1);
        continue;
      }
    }
    if (spec.unk_id) {
      if (unk_id >= 0 && spec.fuse_unk) {
        unk_len += len;
      } else {
        if (unk_id >= 0) add(unk_id, unk_len);
        unk_id = *spec.unk_id;
        unk_len = len;
      }
    }
  }
  if (unk_id >= 0) add(unk_id, unk_len);
  if (syms.empty()) return;
  syms.back().next = -1;

  struct Cand {
    uint32_t rank;
    uint32_t pos;
    int32_t new_id;
    bool operator<(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  auto lookup = [&](int32_t a, int32_t b) -> const MergeValue* {
    auto it = merges.find(pair_key(a, b));
    return it == merges.end() ? nullptr : &it->second;
  };
  std::priority_queue<Cand> q;
  for (size_t k = 0; k + 1 < syms.size(); ++k)
    if (auto* m = lookup(syms[k].id, syms[k + 1].id)) q.push(Cand{m->rank, uint32_t(k), m->new_id});
  while (!q.empty()) {
    Cand top = q.top();
    q.pop();
    Sym& cur = syms[top.pos];
    if (cur.len == 0 || cur.next == -1) continue;
    const auto right_pos = size_t(cur.next);
    const Sym right = syms[right_pos];
    auto* m = lookup(cur.id, right.id);
    if (!m || m->new_id != top.new_id) continue;
    cur.id = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    syms[right_pos].len = 0;
    if (right.next >= 0) syms[size_t(right.next)].prev = int32_t(top.pos);
    if (cur.prev >= 0)
      if (auto* pm = lookup(syms[size_t(cur.prev)].id, cur.id)) q.push(Cand{pm->rank, uint32_t(cur.prev), pm->new_id});
    if (cur.next >= 0)
      if (auto* nm = lookup(cur.id, syms[size_t(cur.next)].id)) q.push(Cand{nm->rank, top.pos, nm->new_id});
  }
  for (auto& s : syms)
    if (s.len != 0) out.push_back(s.id);
}

void Tokenizer::Impl::bpe(const std::string& word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (spec.wordpiece) return wordpiece::encode_word(word, vocab, spec, out);
  if (spec.unigram) return ugm.encode_word(word, out);
  if (spec.ignore_merges) {
    auto it = vocab.find(word);
    if (it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  {
    std::lock_guard lock(cache_mu);
    auto it = cache.find(word);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merge_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard lock(cache_mu);
  if (cache.size() < kCacheCapacity) cache.emplace(word, std::move(ids));
}

std::vector<int32_t> Tokenizer::Impl::encode(std::string_view text_in, bool add_special) const {
  std::string text = unicode::sanitize_utf8(text_in);
  std::vector<Piece> pieces_v;
  pieces_v.push_back(Piece{std::move(text), -1, true});
  pieces_v = split_added(std::move(pieces_v), false);
  for (auto& p : pieces_v)
    if (p.token < 0) normalize(p.text);
  pieces_v = split_added(std::move(pieces_v), true);

  std::vector<int32_t> ids;
  if (add_special) ids = spec.prefix;
  for (auto& p : pieces_v) {
    if (p.token >= 0) {
      ids.push_back(p.token);
      continue;
    }
    if (p.text.empty()) continue;
    std::vector<Piece> one;
    one.push_back(std::move(p));
    for (auto& w : pre_tokenize(std::move(one))) bpe(w.text, ids);
  }
  if (add_special) ids.insert(ids.end(), spec.suffix.begin(), spec.suffix.end());
  return ids;
}

std::string Tokenizer::Impl::decode(std::span<const int32_t> ids, bool skip_special, bool keep_invalid) const {
  std::vector<std::string> toks;
  toks.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= pieces.size())
      throw Error(spec.source + ": token id " + std::to_string(id) + " is outside the vocabulary (" +
                  std::to_string(pieces.size()) + ")");
    if (skip_special && special[size_t(id)]) continue;
    toks.push_back(pieces[size_t(id)]);
  }
  if (spec.decoder.empty()) {
    std::string r;
    for (size_t i = 0; i < toks.size(); ++i) r += (i ? " " : "") + toks[i];
    return r;
  }
  using K = DecoderStep::Kind;
  for (const auto& st : spec.decoder) {
    switch (st.kind) {
      case K::ByteLevel: {
        std::string bytes;
        for (auto& t : toks) {
          std::string b;
          bool ok = true;
          for (size_t i = 0; i < t.size() && ok;) {
            int v = unicode::unicode_to_byte(unicode::next_codepoint(t, i));
            if (v < 0) ok = false;
            b += char(v);
          }
          bytes += ok ? b : t;
        }
        toks.assign(1, keep_invalid ? std::move(bytes) : unicode::sanitize_utf8(bytes));
        break;
      }
      case K::Replace:
        for (auto& t : toks) replace_all(t, st.a, st.b, growth_limit(t.size()), spec.source, "decoder's Replace");
        break;
      case K::ByteFallback: {
        std::vector<std::string> out;
        std::string pending;
        auto flush = [&] {
          if (pending.empty()) return;
          if (keep_invalid || unicode::valid_utf8(pending))
            out.push_back(pending);
          else
            for (size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
          pending.clear();
        };
        for (auto& t : toks) {
          auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
          if (t.size() == 6 && t.starts_with("<0x") && t[5] == '>' && hex(t[3]) && hex(t[4])) {
            pending += char(std::stoi(t.substr(3, 2), nullptr, 16));
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        toks = std::move(out);
        break;
      }
      case K::Fuse: {
        std::string all;
        for (auto& t : toks) all += t;
        toks.assign(1, std::move(all));
        break;
      }
      case K::Strip: {
        char32_t c = st.a.empty() ? U' ' : [&] {
          size_t z = 0;
          return unicode::next_codepoint(st.a, z);
        }();
        for (auto& t : toks) {
          std::vector<std::pair<size_t, char32_t>> cps;  // byte offset, code point
          for (size_t i = 0; i < t.size();) {
            size_t at = i;
            cps.emplace_back(at, unicode::next_codepoint(t, i));
          }
          size_t start_cut = 0, stop_cut = cps.size();
          for (size_t k = 0; k < size_t(st.start) && k < cps.size() && cps[k].second == c; ++k) start_cut = k + 1;
          for (size_t k = 0; k < size_t(st.stop) && k < cps.size(); ++k) {
            size_t idx = cps.size() - k - 1;
            if (cps[idx].second != c) break;
            stop_cut = idx;
          }
          if (stop_cut < start_cut) stop_cut = start_cut;
          size_t b = start_cut < cps.size() ? cps[start_cut].first : t.size();
          size_t e = stop_cut < cps.size() ? cps[stop_cut].first : t.size();
          t = t.substr(b, e - b);
        }
        break;
      }
      case K::WordPiece: wordpiece::decode(st, toks); break;
      case K::Metaspace:
        for (size_t i = 0; i < toks.size(); ++i) {
          std::string r = toks[i];
          replace_all(r, st.a, i == 0 && st.prepend ? "" : " ", growth_limit(r.size()), spec.source,
                      "decoder's Metaspace");
          toks[i] = std::move(r);
        }
        break;
    }
  }
  std::string r;
  for (auto& t : toks) r += t;
  return r;
}

Tokenizer::Tokenizer(TokenizerSpec spec) {
  auto impl = std::make_shared<Impl>();
  impl->spec = std::move(spec);
  impl->build();
  impl_ = std::move(impl);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  return impl_->encode(text, add_special);
}
std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return impl_->decode(ids, skip_special);
}
std::string Tokenizer::decode_bytes(std::span<const int32_t> ids, bool skip_special) const {
  return impl_->decode(ids, skip_special, true);
}
size_t Tokenizer::vocab_size() const { return impl_->pieces.size(); }
const std::string& Tokenizer::token(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->pieces.size() ? impl_->pieces[size_t(id)] : impl_->empty;
}
std::optional<int32_t> Tokenizer::token_id(std::string_view piece) const {
  std::string p(piece);
  if (auto it = impl_->added_ids.find(p); it != impl_->added_ids.end()) return it->second;
  if (auto it = impl_->vocab.find(p); it != impl_->vocab.end()) return it->second;
  return std::nullopt;
}
bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->special.size() && impl_->special[size_t(id)];
}
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->spec.bos_id; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->spec.eos_id; }
const std::vector<int32_t>& Tokenizer::stop_ids() const { return impl_->spec.stop_ids; }
bool Tokenizer::is_stop(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->stop_flag.size() && impl_->stop_flag[size_t(id)];
}
const std::string& Tokenizer::bos_token() const { return impl_->spec.bos_token; }
const std::string& Tokenizer::eos_token() const { return impl_->spec.eos_token; }
const std::string& Tokenizer::chat_template() const { return impl_->spec.chat_template; }
const std::string& Tokenizer::source() const { return impl_->spec.source; }
const TokenizerSpec& Tokenizer::spec() const { return impl_->spec; }

// HF DecodeStream: decode a window of ids, emit what grew unless it ends in U+FFFD.
StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special) : tok_(tok), skip_(skip_special) {}

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  std::string s = tok_.decode(ids_, skip_);
  if (s.size() > prefix_.size() && !s.ends_with("\xEF\xBF\xBD")) {
    std::string fresh = s.starts_with(prefix_) ? s.substr(prefix_.size()) : s;
    size_t new_prefix_index = ids_.size() - prefix_index_;
    ids_.erase(ids_.begin(), ids_.begin() + long(prefix_index_));
    prefix_ = tok_.decode(ids_, skip_);
    prefix_index_ = new_prefix_index;
    return fresh;
  }
  return {};
}

std::string StreamDecoder::flush() {
  std::string rest;
  if (!ids_.empty()) {
    std::string s = tok_.decode(ids_, skip_);
    if (s.size() > prefix_.size() && s.starts_with(prefix_)) rest = s.substr(prefix_.size());
  }
  reset();
  return rest;
}

void StreamDecoder::reset() {
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
}

}  // namespace wgc::llm
