// SentencePiece's Unigram model (XLM-RoBERTa, multilingual-e5, bge-m3, T5) as Hugging Face
// tokenizers runs it (models/unigram: the best-scoring segmentation of each word, unknown
// characters scored min_score - 10 and consecutive ones fused into one unk token), and its
// Precompiled normalizer (SentencePiece's compiled character map: a double-array trie of source
// byte strings and their NUL-terminated replacements). Tokenizer (tokenizer.cpp) calls them.
#pragma once

#include "llm/tokenizer/spec.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace wgc::llm::unigram {

// The compiled map: [u32 trie bytes][trie units][replacements]. wgc::Error naming `source` when
// the blob is malformed (sizes, a trie offset or replacement past the end).
class Charsmap {
 public:
  Charsmap() = default;
  Charsmap(std::string_view blob, const std::string& source);
  // s with each position's longest source match replaced (as SentencePiece and llama.cpp apply it;
  // Hugging Face tries each grapheme cluster of < 6 bytes whole first, which differs only where a
  // mapped character is followed by a combining mark).
  std::string normalize(std::string_view s) const;

 private:
  // The length of the longest match at s[at..] and its replacement's offset (0 length: none).
  std::pair<size_t, uint32_t> longest(std::string_view s, size_t at) const;
  std::vector<uint32_t> units_;
  std::string repl_;
};

// The Unigram model of spec (vocab, unigram_scores, unk_id, byte_fallback, fuse_unk).
class Model {
 public:
  Model() = default;
  explicit Model(const TokenizerSpec& spec);
  // The ids of one pre-tokenized word, appended to out.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  struct Entry {
    int32_t id;
    double score;
  };
  std::unordered_map<std::string, Entry> pieces_;
  std::vector<int32_t> byte_ids_;  // <0xNN> -> id (byte fallback), -1 when absent
  size_t max_len_ = 0;             // the longest piece in bytes
  double unk_score_ = 0;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = true, byte_fallback_ = false;
};

}  // namespace wgc::llm::unigram
