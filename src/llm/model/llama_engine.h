// The interface of LlamaModel's two engines (internal to src/llm/model): the GPU engine
// (llama.cpp) and the CPU engine (llama_cpu_engine.cpp). LlamaModel's methods forward to it.
#pragma once

#include "llm/model/llama.h"
#include "ops/llm/llm_ops.h"
#include "util/error.h"

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>

namespace wgc::llm {

// The KV cache length for these options (0: the model's context, at most kDefaultMaxCtx;
// ModelConfig::validate bounds the file's to 32 bits).
inline int resolve_max_ctx(const ModelConfig& cfg, const EngineOptions& o) {
  if (o.max_ctx < 0) throw Error("wgc: max_ctx is " + std::to_string(o.max_ctx) + ", expected > 0 (0: default)");
  const int64_t model_ctx = cfg.max_position_embeddings > 0 ? cfg.max_position_embeddings : kDefaultMaxCtx;
  return o.max_ctx > 0 ? o.max_ctx : int(std::min<int64_t>(model_ctx, kDefaultMaxCtx));
}

// The error of a method that the model's engine does not have.
inline Error not_on_this_engine(std::string_view what, Device d) {
  return Error("wgc: " + std::string(what) + " is not available: this model runs on the " +
               std::string(d == Device::Cpu ? "CPU engine" : "GPU engine"));
}

class LlamaEngine {
 public:
  virtual ~LlamaEngine() = default;

  virtual Device device() const = 0;
  virtual const ModelConfig& config() const = 0;
  virtual uint64_t weight_bytes() const = 0;
  virtual uint64_t kv_bytes() const = 0;  // LlamaModel::kv_bytes
  int max_ctx() const { return max_ctx_; }
  KvType cache_type() const { return cache_type_; }
  int max_batch() const { return max_batch_; }
  int n_past() const { return n_past_; }
  void rewind(int n) {
    if (n < 0 || n > n_past_) throw Error("wgc: cannot rewind to position " + std::to_string(n));
    n_past_ = n;
  }

  // New GPU kernel tuning knobs (LlamaModel::set_tuning); the CPU engine has none to change.
  virtual void set_tuning(const LlmTuning&) {}

  // Into the cache in steps of max_batch(), no logits; progress(done, total) after each step.
  virtual void prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress) = 0;
  virtual std::vector<float> logits(std::span<const int32_t> tokens) = 0;
  virtual std::vector<float> all_logits(std::span<const int32_t> tokens) = 0;
  virtual std::vector<float> last_hidden(std::span<const int32_t> tokens) = 0;
  virtual int32_t greedy(std::span<const int32_t> tokens) = 0;
  // Every position's argmax (the first index of the largest logit). Here from all_logits on the
  // host; the GPU engine selects on the device and reads back the ids alone.
  virtual std::vector<int32_t> greedy_all(std::span<const int32_t> tokens) {
    const std::vector<float> all = all_logits(tokens);
    const size_t vocab = size_t(config().vocab_size);
    std::vector<int32_t> out(tokens.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const auto row = all.begin() + std::ptrdiff_t(i * vocab);
      out[i] = int32_t(std::max_element(row, row + std::ptrdiff_t(vocab)) - row);
    }
    return out;
  }
  virtual TopK top_k(std::span<const int32_t> tokens, int k) = 0;
  virtual DecodeStats decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token) = 0;

 protected:
  // Token ids in the vocabulary, the context not overflowing.
  void check_tokens(std::span<const int32_t> tokens) const {
    const int64_t vocab = config().vocab_size;
    if (tokens.empty()) throw Error("wgc: no tokens to run");
    for (int32_t id : tokens)
      if (id < 0 || id >= vocab)
        throw Error("wgc: token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                    std::to_string(vocab - 1) + ")");
    if (n_past_ + int64_t(tokens.size()) > max_ctx_)
      throw Error("wgc: context full: " + std::to_string(n_past_) + " cached + " + std::to_string(tokens.size()) +
                  " new tokens exceed the context length " + std::to_string(max_ctx_) +
                  " (raise EngineOptions::max_ctx, or start a new conversation)");
  }
  // The GPU engines' greedy decode loop: step(token) records and submits the one-token step at
  // position n_past() (which the loop sets) and returns its argmax's readback; up to `ahead` steps
  // are in flight before the oldest one's token is read. `token` is the step's input when ahead is
  // 1 (the token read last); an engine that passes the argmax on the GPU ignores it.
  DecodeStats decode_loop(int32_t first, int max_steps, int ahead, const std::function<Readback(int32_t)>& step,
                          const std::function<bool(int32_t)>& on_token);
  // The token id at position i of an argmax readback, checked against the vocabulary.
  int32_t argmax_token(const Readback& r, size_t i = 0) const;

  void check_top_k(int k) const {
    if (k < 1 || k > 64 || k > config().vocab_size)
      throw Error("wgc: top_k takes 1..64 candidates, got " + std::to_string(k));
  }
  int max_ctx_ = 0, max_batch_ = 1, n_past_ = 0;
  KvType cache_type_ = KvType::F32;
};

// The CPU engines (single stream and serving) keep an f32 KV cache: other types are refused.
inline void check_cpu_cache_type(KvType t) {
  if (t != KvType::F32)
    throw OptionError("cache_type", std::string(to_string(t)) +
                                        " is not available on the CPU engine (its KV cache is f32; f16 and "
                                        "q8_0 run on the GPU engine)");
}

// The CPU engine (llama_cpu_engine.cpp).
std::unique_ptr<LlamaEngine> make_cpu_engine(const ModelFile& file, const EngineOptions& options);

}  // namespace wgc::llm
