// Generator: prompt -> tokens -> prefill -> decode loop on a LlamaModel, with streaming text.
//
//   auto file = open_model(path);
//   LlamaModel model(ctx, file);
//   Generator gen(model, load_tokenizer(path));
//   GenerateOptions o;  o.max_tokens = 64;  o.stop = {"\n\n"};
//   auto r = gen.generate("The moon", o, [](std::string_view s) { std::cout << s << std::flush; });
//   std::cerr << r.timings.summary();
//
// Stops at the model's end-of-turn ids (Tokenizer::stop_ids and ModelConfig::eos_token_ids), at a
// stop string (the text ends before it; text that may be the start of a stop string is held back
// until it is known not to be), at max_tokens, or when the context is full (StopReason::ContextFull
// with a message; a prompt longer than the context throws wgc::Error).
//
// The KV cache is kept between calls: a prompt that starts with tokens already cached (a chat's
// earlier turns) runs only the tokens after the common prefix.
#pragma once

#include "llm/formats/model_file.h"
#include "llm/generate/sampler.h"
#include "llm/generate/speculative.h"
#include "llm/generate/stop_strings.h"
#include "llm/grammar/grammar.h"
#include "llm/model/llama.h"
#include "llm/tokenizer/tokenizer.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

class Constraint;
struct TokenTexts;

struct GenerateOptions {
  SamplingParams sampling;
  int max_tokens = 128;           // < 0: until a stop or the end of the context
  std::vector<std::string> stop;  // stop strings
  bool ignore_eos = false;        // keep going past end-of-turn ids
  bool add_special = true;        // text prompts: BOS etc. where the tokenizer's post-processor adds them
  // When it turns true (from another thread or a signal handler), generation ends before the next
  // token is kept, with StopReason::Cancelled.
  const std::atomic<bool>* cancel = nullptr;
  // Long prompts run in chunks (EngineOptions::max_batch); this hears the tokens done so far and
  // the total after each chunk (not called for prompts of one chunk).
  std::function<void(int done, int total)> on_prefill;
  // Constrained output (structured output, tool calls): only tokens that keep the text a prefix of
  // a sentence of this grammar (llm/grammar), the end only where it is a whole one.
  std::shared_ptr<const Grammar> grammar;
};

// Throws wgc::OptionError naming the first option out of range: the sampling (validate above),
// max_tokens below -1, the stop strings (validate_stop).
void validate(const GenerateOptions& o);

enum class StopReason { Eos, StopString, MaxTokens, ContextFull, Cancelled };
std::string_view to_string(StopReason r);  // "eos", "stop", "length", "context", "cancelled"

struct Timings {
  double load_ms = 0;          // set by whoever loaded the model (not the Generator)
  int prompt_tokens = 0;       // tokens of the prompt
  int prompt_eval_tokens = 0;  // of them run now (the rest were in the KV cache)
  double prompt_ms = 0;        // prefill, incl. picking the first token
  int generated_tokens = 0;    // tokens produced (the first comes from the prefill)
  int decode_steps = 0;        // target forward passes after the prefill (one token each unless speculative)
  int decode_tokens = 0;       // tokens they gave (an end-of-turn token that stopped it included)
  double decode_ms = 0;
  // Speculative decoding (Generator::set_draft): draft tokens proposed and kept, the draft's time
  // (within decode_ms).
  bool speculative = false;
  int draft_proposed = 0, draft_accepted = 0;
  double draft_ms = 0;

  double prompt_tps() const { return prompt_ms > 0 ? prompt_eval_tokens * 1e3 / prompt_ms : 0; }
  double decode_tps() const { return decode_ms > 0 ? decode_tokens * 1e3 / decode_ms : 0; }
  double acceptance() const { return draft_proposed > 0 ? double(draft_accepted) / draft_proposed : 0; }
  // llama.cpp-style lines: load time, prompt eval, generation.
  std::string summary() const;
};

struct GenerateResult {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> ids;  // generated tokens (not the end-of-turn token; incl. a stop string's)
  std::string text;          // their text, ending before a stop string
  StopReason stop = StopReason::MaxTokens;
  int32_t stop_id = -1;  // the end-of-turn token that stopped it (StopReason::Eos), else -1
  std::string message;   // why it stopped, in words, for ContextFull
  Timings timings;
};

using TextCallback = std::function<void(std::string_view)>;

class Generator {
 public:
  // Without a tokenizer only id prompts work and results carry no text.
  Generator(LlamaModel& model, std::optional<Tokenizer> tokenizer);

  LlamaModel& model() { return model_; }
  const std::optional<Tokenizer>& tokenizer() const { return tok_; }
  // End-of-turn ids: the tokenizer's stop ids and the model config's eos ids.
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  bool is_stop(int32_t id) const;

  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const;

  GenerateResult generate(std::string_view prompt, const GenerateOptions& o, const TextCallback& on_text = {});
  GenerateResult generate(std::span<const int32_t> prompt_ids, const GenerateOptions& o,
                          const TextCallback& on_text = {});

  // Speculative decoding: `draft` (a model of the same tokenizer; check_draft, else wgc::Error)
  // proposes tokens that the model verifies in one pass each round (speculative.h): greedy, or
  // sampling by the speculative sampling rule; penalties and grammars then throw
  // wgc::OptionError. The draft must outlive the Generator; nullptr: off.
  void set_draft(LlamaModel* draft, const SpeculativeOptions& o = {}, const Tokenizer* draft_tokenizer = nullptr,
                 const std::string& draft_name = "draft");
  const SpeculativeDecoder* speculative() const { return spec_.get(); }

  // Tokens in the model's KV cache, as this Generator put them there.
  const std::vector<int32_t>& cached() const { return cached_; }
  void reset();  // empties the KV cache

 private:
  int32_t step(std::span<const int32_t> tokens, Sampler& s, const Constraint* c = nullptr);

  LlamaModel& model_;
  std::optional<Tokenizer> tok_;
  std::shared_ptr<const TokenTexts> texts_;  // made on the first constrained generation
  std::vector<int32_t> stop_ids_;
  std::vector<int32_t> cached_;
  std::unique_ptr<SpeculativeDecoder> spec_;
};

// Ids that end a generated turn: the tokenizer's stop ids (when there is one) and the model
// config's eos ids.
std::vector<int32_t> end_of_turn_ids(const Tokenizer* tokenizer, const ModelConfig& config);

// The tokenizer of a model: `explicit_path` when given (a tokenizer.json, a folder or a .gguf), else
// the GGUF's own vocabulary, else tokenizer.json in the model's folder; nullopt when there is none.
std::optional<Tokenizer> find_tokenizer(const ModelFile& model, const std::filesystem::path& explicit_path = {});

}  // namespace wgc::llm
