#include "llm/tokenizer/unigram.h"

#include "llm/tokenizer/unicode.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

namespace wgc::llm::unigram {

namespace {

// Darts-clone's double-array unit (SentencePiece's trie): a child's index is the parent's index
// xor its offset xor the byte; the label check confirms the byte; a leaf child holds the value.
uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xFFu); }
bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1u; }
uint32_t unit_value(uint32_t u) { return u & ((1u << 31) - 1); }

// tokenizers' K_UNK_PENALTY.
constexpr double kUnkPenalty = 10.0;

}  // namespace

Charsmap::Charsmap(std::string_view blob, const std::string& source) {
  auto fail = [&](const std::string& what) { throw Error(source + ": precompiled_charsmap: " + what); };
  if (blob.size() < 4) fail("shorter than its 4-byte header");
  uint32_t trie_bytes = 0;
  std::memcpy(&trie_bytes, blob.data(), 4);
  if (trie_bytes % 4 || uint64_t(trie_bytes) + 4 > blob.size())
    fail("the trie size " + std::to_string(trie_bytes) + " does not fit the " + std::to_string(blob.size()) + " bytes");
  units_.resize(trie_bytes / 4);
  if (!units_.empty()) std::memcpy(units_.data(), blob.data() + 4, trie_bytes);
  repl_.assign(blob.substr(4 + size_t(trie_bytes)));
}

std::pair<size_t, uint32_t> Charsmap::longest(std::string_view s, size_t at) const {
  std::pair<size_t, uint32_t> best{0, 0};
  if (units_.empty()) return best;
  uint64_t node = unit_offset(units_[0]);
  for (size_t i = at; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) break;
    node ^= c;
    if (node >= units_.size()) break;
    const uint32_t u = units_[size_t(node)];
    if (unit_label(u) != c) break;
    node ^= unit_offset(u);
    if (node >= units_.size()) break;
    if (unit_has_leaf(u)) best = {i - at + 1, unit_value(units_[size_t(node)])};
  }
  return best;
}

std::string Charsmap::normalize(std::string_view s) const {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto [len, off] = longest(s, i);
    if (len > 0) {
      if (off >= repl_.size())
        throw Error("precompiled_charsmap: replacement offset " + std::to_string(off) + " is past its " +
                    std::to_string(repl_.size()) + " bytes");
      const size_t end = repl_.find('\0', off);
      out.append(repl_, off, (end == std::string::npos ? repl_.size() : end) - off);
      i += len;
      continue;
    }
    // No match: the character as it is (s is valid UTF-8: the tokenizer sanitised it).
    const size_t n = std::min(unicode::utf8_len(static_cast<unsigned char>(s[i])), s.size() - i);
    out.append(s, i, std::max<size_t>(n, 1));
    i += std::max<size_t>(n, 1);
  }
  return out;
}

Model::Model(const TokenizerSpec& spec) {
  if (spec.unigram_scores.size() != spec.vocab.size())
    throw Error(spec.source + ": the Unigram model has " + std::to_string(spec.unigram_scores.size()) + " scores for " +
                std::to_string(spec.vocab.size()) + " pieces");
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < spec.vocab.size(); ++i) {
    const double s = spec.unigram_scores[i];
    if (spec.vocab[i].empty() || !std::isfinite(s)) continue;  // not a candidate (GGUF control / unused)
    pieces_.emplace(spec.vocab[i], Entry{int32_t(i), s});
    max_len_ = std::max(max_len_, spec.vocab[i].size());
    min_score = std::min(min_score, s);
  }
  if (pieces_.empty()) throw Error(spec.source + ": the Unigram model has no scored pieces");
  unk_score_ = min_score - kUnkPenalty;
  unk_id_ = spec.unk_id ? *spec.unk_id : -1;
  fuse_unk_ = spec.fuse_unk;
  byte_fallback_ = spec.byte_fallback;
  if (byte_fallback_) {
    byte_ids_.assign(256, -1);
    char name[8];
    for (size_t i = 0; i < spec.vocab.size(); ++i) {
      const std::string& v = spec.vocab[i];
      if (v.size() != 6 || !v.starts_with("<0x") || v[5] != '>') continue;
      for (int b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        if (v == name && byte_ids_[size_t(b)] < 0) byte_ids_[size_t(b)] = int32_t(i);
      }
    }
  }
}

void Model::encode_word(std::string_view w, std::vector<int32_t>& out) const {
  const size_t n = w.size();
  if (n == 0) return;
  // best[e]: the best segmentation of w[0, e): its score, where its last piece starts, that piece.
  struct Node {
    double score = 0;
    std::optional<size_t> start;
    int32_t id = -1;
  };
  std::vector<Node> best(n + 1);
  std::string key;
  for (size_t s = 0; s < n;) {
    const size_t ch = std::min(std::max<size_t>(unicode::utf8_len(static_cast<unsigned char>(w[s])), 1), n - s);
    const double here = best[s].score;
    bool single = false;
    for (size_t len = 1; len <= max_len_ && s + len <= n; ++len) {
      key.assign(w.substr(s, len));
      auto it = pieces_.find(key);
      if (it == pieces_.end()) continue;
      Node& t = best[s + len];
      const double cand = here + it->second.score;
      // Strictly better, or the first path to reach this end (tokenizers' encode_optimized).
      if (!t.start || cand > t.score) t = Node{cand, s, it->second.id};
      if (len == ch) single = true;
    }
    if (!single) {
      if (unk_id_ < 0) throw Error("wgc: Unigram: a character has no piece and the model has no unk token");
      Node& t = best[s + ch];
      const double cand = here + unk_score_;
      if (!t.start || cand > t.score) t = Node{cand, s, unk_id_};
    }
    s += ch;
  }
  // Back from the end: the pieces, consecutive unknowns fused into one string.
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of each resulting string, last first
  std::vector<bool> is_unk;
  for (size_t e = n; e > 0;) {
    const Node& nd = best[e];
    const size_t b = *nd.start;
    const bool unk = nd.id == unk_id_;
    if (unk && fuse_unk_ && !is_unk.empty() && is_unk.back())
      spans.back().first = b;
    else {
      spans.emplace_back(b, e);
      is_unk.push_back(unk);
    }
    e = b;
  }
  for (size_t k = spans.size(); k-- > 0;) {
    const std::string_view piece = w.substr(spans[k].first, spans[k].second - spans[k].first);
    key.assign(piece);
    if (auto it = pieces_.find(key); it != pieces_.end()) {
      out.push_back(it->second.id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : piece) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : piece) out.push_back(byte_ids_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    out.push_back(unk_id_);
  }
}

}  // namespace wgc::llm::unigram
