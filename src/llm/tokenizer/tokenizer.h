// Tokenizers of the Llama family: byte-level BPE (GPT-2 / Llama 3 / Qwen) and SentencePiece-style
// BPE with byte fallback (Llama 2 / Mistral), with added/special tokens, normalizers,
// pre-tokenizers, the post-processor and the decoder as Hugging Face `tokenizers` applies them.
//
//   auto tok = wgc::llm::load_tokenizer("model.gguf");        // or a folder, or tokenizer.json
//   std::vector<int32_t> ids = tok.encode("Hello");           // with BOS where the model wants it
//   std::string text = tok.decode(ids, /*skip_special=*/true);
//   wgc::llm::StreamDecoder sd(tok);                          // for generation
//   for (int32_t id : generated) std::cout << sd.push(id);
//   std::cout << sd.flush();
//
// A Tokenizer is cheap to copy (shared, immutable state) and safe to use from several threads.
#pragma once

#include "llm/tokenizer/spec.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

class Tokenizer {
 public:
  // Checks the description; wgc::Error naming spec.source and the field when it is inconsistent.
  explicit Tokenizer(TokenizerSpec spec);

  // Token ids of `text` (UTF-8; invalid bytes count as U+FFFD). Added tokens in the text ("</s>",
  // "<|eot_id|>") are always recognised; add_special applies the post-processor (BOS/EOS).
  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const;
  // The text of `ids`. skip_special drops special added tokens. Ids outside the vocabulary throw.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // As decode(), but bytes that are not valid UTF-8 are kept instead of becoming U+FFFD: the
  // bytes of one token that holds part of a character (for logprobs and token listings).
  std::string decode_bytes(std::span<const int32_t> ids, bool skip_special = false) const;

  size_t vocab_size() const;  // one past the largest id
  // The piece of an id as stored in the vocabulary ("▁Hello", "Ġworld", "<s>"); "" when unknown.
  const std::string& token(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view piece) const;  // vocabulary or added token
  bool is_special(int32_t id) const;

  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  // Ids that end a generated turn (eos, eot, eom, im_end, ...).
  const std::vector<int32_t>& stop_ids() const;
  bool is_stop(int32_t id) const;
  const std::string& bos_token() const;  // text of BOS ("" when none), for chat templates
  const std::string& eos_token() const;
  const std::string& chat_template() const;  // "" when the model has none
  const std::string& source() const;         // the file it was read from
  const TokenizerSpec& spec() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

// Turns generated ids into text as they come, never emitting half a UTF-8 character, with the same
// result as decode() of all ids (incl. SentencePiece's leading-space rule). Not thread-safe.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false);
  // The text that `id` completes ("" while a character is still incomplete).
  std::string push(int32_t id);
  // What is left (an incomplete character becomes U+FFFD); the decoder starts afresh.
  std::string flush();
  void reset();

 private:
  Tokenizer tok_;
  bool skip_;
  std::vector<int32_t> ids_;
  std::string prefix_;
  size_t prefix_index_ = 0;
};

}  // namespace wgc::llm
