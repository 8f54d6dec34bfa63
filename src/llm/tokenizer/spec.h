// A neutral, in-memory description of a tokenizer: what tokenizer.json and GGUF tokenizer.ggml.*
// metadata both say, in one form. Tokenizer is built from it (see tokenizer.h); hf_json.h and
// gguf_vocab.h fill it from files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wgc::llm {

// A token matched in the raw text before the model sees it (HF "added_tokens").
struct AddedToken {
  // The id as HF assigns it when loading: a vocabulary piece's own id, else, in list order, the next
  // id past the vocabulary (what consistent files say anyway; the value given here is replaced).
  int32_t id = -1;
  std::string content;
  bool special = true;       // skipped by decode(skip_special = true)
  bool single_word = false;  // only matches when not inside a word
  bool lstrip = false;       // swallows whitespace on its left
  bool rstrip = false;       // swallows whitespace on its right
  bool normalized = false;   // matched in the normalized text (else in the raw text)
};

// Normalizer steps, applied in order to each stretch of text between added tokens.
struct NormalizerStep {
  // Bert: HF BertNormalizer (the four flags below); NFD, Lowercase, StripAccents (drops Mn marks);
  // Precompiled: SentencePiece's compiled character map (unigram.h).
  enum class Kind { NFC, Prepend, Replace, ReplaceRegex, Strip, Bert, NFD, Lowercase, StripAccents, Precompiled };
  Kind kind = Kind::NFC;
  std::string a;                     // Prepend: the prefix; Replace: the pattern; Precompiled: the map's bytes
  std::string b;                     // Replace: the replacement
  bool left = false, right = false;  // Strip
  bool clean_text = true, chinese_chars = true, strip_accents = true, lowercase = true;  // Bert
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Pre-tokenizer steps: each splits every piece further.
struct PreTokenizerStep {
  // Bert: HF BertPreTokenizer (whitespace removed, each punctuation character isolated).
  enum class Kind { Split, ByteLevel, Metaspace, Digits, WhitespaceSplit, Bert };
  Kind kind = Kind::Split;
  // Split
  std::string pattern;  // a PCRE2 regex (UTF, UCP) or a literal
  bool regex = true;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  // ByteLevel
  bool add_prefix_space = false;
  bool use_regex = true;  // GPT-2's regex
  // Metaspace
  std::string replacement = "\xE2\x96\x81";  // U+2581
  enum class Prepend { Always, Never, First } prepend = Prepend::Always;
  bool split = true;
  // Digits
  bool individual_digits = false;
};

// Decoder steps (HF decode_chain semantics: each step maps the list of token strings).
struct DecoderStep {
  enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, WordPiece };
  Kind kind = Kind::ByteLevel;
  std::string a, b;         // Replace: pattern -> content; Strip: the character; Metaspace: replacement
  int start = 0, stop = 0;  // Strip
  bool prepend = true;      // Metaspace: the first token's leading space is dropped
  bool cleanup = true;      // WordPiece: " ." -> ".", " n't" -> "n't", ... (a = the subword prefix)
};

// The largest vocabulary a tokenizer file may declare (ids 0..kMaxVocabSize-1): real ones have at
// most a few hundred thousand tokens; the bound keeps a bad id from sizing the tables.
inline constexpr int64_t kMaxVocabSize = int64_t(1) << 24;

struct TokenizerSpec {
  std::string source;  // the file it came from, for messages

  // The model: WordPiece (BERT: the longest vocabulary prefix of each word, then of the rest with
  // continuing_subword_prefix, the whole word unk_id when a part has none or the word is longer
  // than max_input_chars_per_word characters), or a BPE over `vocab` (id -> piece; byte-level pieces for byte-level
  // BPE). Merges by rank when `merges` is non-empty, else by `scores` of the merged piece (SentencePiece BPE: the
  // highest score first; a piece scored -infinity is never a merge target).
  std::vector<std::string> vocab;
  std::vector<float> scores;
  std::vector<std::pair<std::string, std::string>> merges;
  std::optional<int32_t> unk_id;
  bool fuse_unk = false;
  bool byte_fallback = false;  // unknown characters become <0xNN> tokens
  bool ignore_merges = false;  // a word that is a whole vocab entry is that token
  std::string continuing_subword_prefix, end_of_word_suffix;
  bool wordpiece = false;
  int64_t max_input_chars_per_word = 100;
  // Unigram (SentencePiece's model: XLM-RoBERTa, T5): each word's best segmentation by the pieces'
  // log-probabilities (unigram_scores, one per vocab entry; a non-finite score: not a candidate),
  // with unk_id, fuse_unk and byte_fallback as HF's Unigram model.
  bool unigram = false;
  std::vector<double> unigram_scores;

  std::vector<AddedToken> added;
  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::vector<DecoderStep> decoder;
  // Post-processor for encode(add_special = true): ids put before and after the text's ids.
  std::vector<int32_t> prefix, suffix;

  // For generation and chat templates.
  std::optional<int32_t> bos_id, eos_id, pad_id;
  std::vector<int32_t> stop_ids;  // eos and other end-of-turn tokens (eot, eom, im_end)
  std::string bos_token, eos_token;
  std::string chat_template;
};

}  // namespace wgc::llm
