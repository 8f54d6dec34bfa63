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
#include <vector>

namespace wgc::llm {

// The KV cache length for these options (0: the model's context, at most kDefaultMaxCtx;
// ModelConfig::validate bounds the file's to 32 bits).
inline int resolve_max_ctx(const ModelConfig& cfg, const EngineOptions& o) {
  if (o.max_ctx < 0) throw Error("wgc: max_ctx is " + std::to_string(o.max_ctx) + ", expected > 0 (0: default)");
  const int64_t model_ctx = cfg.max_position_embeddings > 0 ? cfg.max_position_embeddings : kDefaultMaxCtx;
  return o.max_ctx > 0 ? o.max_ctx : int(std::min<int64_t>(model_ctx, kDefaultMaxCtx));
}

// Each layer's KV-cache rows (KvLayer::ring): max_ctx for a global layer, and with swa_full for
// every layer; a sliding-window layer's ring holds its window and the largest chunk the engine
// appends at once (max_batch), so that a chunk's first query still sees its whole window after
// the chunk's own rows went in: min(max_ctx, window + max_batch).
inline std::vector<int> kv_layer_rows(const ModelConfig& c, int max_ctx, int max_batch, bool swa_full) {
  std::vector<int> rows;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    int64_t r = max_ctx;
    if (!swa_full && c.layer_is_sliding(l) && *c.sliding_window > 0)
      r = std::min<int64_t>(max_ctx, *c.sliding_window + int64_t(max_batch));
    rows.push_back(int(r));
  }
  return rows;
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
  // Whether the cache still holds what a token at position n needs (LlamaModel::can_rewind): a
  // ring's layer has overwritten positions more than its rows before the highest one written.
  bool can_rewind(int n) const {
    if (n < 0 || n > n_past_) return false;
    if (n == 0) return true;
    const int64_t written = std::max(written_, n_past_);
    for (size_t l = 0; l < layer_rows_.size(); ++l) {
      if (layer_rows_[l] >= max_ctx_) continue;
      const int64_t window = *config().sliding_window;  // a ring is a sliding layer's
      // keys n - window + 1 .. n - 1 (from 0 where the window reaches back past it) still held
      if (std::max<int64_t>(0, n - window + 1) < written - layer_rows_[l]) return false;
    }
    return true;
  }
  void rewind(int n) {
    if (n < 0 || n > n_past_) throw Error("wgc: cannot rewind to position " + std::to_string(n));
    if (!can_rewind(n))
      throw Error("wgc: cannot rewind to position " + std::to_string(n) + " of " + std::to_string(n_past_) +
                  ": the sliding-window layers keep only their last positions (a ring of " +
                  std::to_string(ring_rows()) +
                  "); run the prompt again from 0, or keep every position (EngineOptions::swa_full)");
    written_ = n == 0 ? 0 : std::max(written_, n_past_);
    n_past_ = n;
  }
  // Each layer's cache rows (kv_layer_rows) and the bytes they come to: the rings' (fixed) and the
  // full layers' per position (LlamaModel::kv_footprint).
  const std::vector<int>& layer_rows() const { return layer_rows_; }
  int ring_rows() const {
    int r = 0;
    for (int x : layer_rows_)
      if (x < max_ctx_) r = std::max(r, x);
    return r;
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
  // One past the highest position whose K/V went into the cache since it was last emptied (steps
  // recorded ahead and dropped included): what a ring has overwritten (can_rewind).
  int written_ = 0;
  std::vector<int> layer_rows_;  // per layer: kv_layer_rows (empty: max_ctx_ each)
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
