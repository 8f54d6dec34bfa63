// BERT's tokenizer pieces, as Hugging Face tokenizers defines them (normalizers/bert.rs,
// pre_tokenizers/bert.rs, models/wordpiece, decoders/wordpiece.rs): the normalizer steps, the
// pre-tokenizer, the WordPiece model and its decoder. Tokenizer (tokenizer.cpp) calls them.
#pragma once

#include "llm/tokenizer/spec.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wgc::llm::wordpiece {

// One normalizer step of kind Bert, NFD, Lowercase or StripAccents on s.
void normalize(const NormalizerStep& step, std::string& s);
// BertPreTokenizer: [begin, end) byte ranges of the words of s (whitespace removed, every
// punctuation character a word of its own).
std::vector<std::pair<size_t, size_t>> pre_tokenize(std::string_view s);
// The WordPiece ids of one word (unk_id for the whole word where it cannot be split; nothing
// when there is no unk token either).
void encode_word(const std::string& word, const std::unordered_map<std::string, int32_t>& vocab,
                 const TokenizerSpec& spec, std::vector<int32_t>& out);
// The WordPiece decoder step on the token strings.
void decode(const DecoderStep& step, std::vector<std::string>& toks);

}  // namespace wgc::llm::wordpiece
