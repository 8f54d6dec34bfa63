// BatchedLlama: the serving forward pass of a LlamaModel's weights. One step runs the new tokens
// of many sequences together (a decode token each, or a chunk of a prompt): the linear layers as
// one batched matmul that reads each weight once for all of them, attention per sequence over its
// own blocks of a paged KV cache (one pool of fixed-size blocks, a block table per sequence),
// then the logits of the sequences that want them, with their top-k, log-sum-exp or full row read
// back in the same submit.
//
// Batch invariance: every kernel's per-row arithmetic is independent of the batch (the batched
// linear kernel, or the naive one on CPU adapters; paged attention with a fixed split length;
// row-wise norms and selections), so a sequence's logits are bit-identical whatever else runs
// and however its prompt was chunked. They differ in the last bits from LlamaModel's own
// single-sequence path, which keeps its faster matvec kernels.
//
// The block tables are the caller's (llm/serve/kv_blocks.h manages them); a step writes the new
// tokens' K/V into the blocks covering their positions.
#pragma once

#include "llm/model/llama.h"
#include "ops/llm/linear_version.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace wgc::llm {

struct BatchedOptions {
  int max_tokens = 320;   // new tokens per step (all sequences together)
  int max_rows = 64;      // sequences with logits per step
  int block_tokens = 16;  // tokens per KV-cache block
  int blocks = 0;         // blocks in the pool (> 0)
  // attention: keys per split (a multiple of 16; fixes the arithmetic). 64: on the H200 one
  // stream decodes 19% faster than with 256 (more workgroups), 64 within 1% (docs/serving.md).
  int split_len = 64;
  // BatchedQ8: 8-bit activations for the Q4_0 / Q8_0 matrices (Batched for the others). Auto:
  // BatchedQ8 on GPUs (twice Batched's decode speed on the H200, docs/serving.md), Naive on CPU
  // adapters; all of them batch-invariant.
  LinearVersion linear = LinearVersion::Auto;
  // Layer-plan rules not to apply (layer_plan.h), for tests and A/B runs.
  std::vector<std::string> plan_off;
  // A model split over several GPUs (layer_split.h): the micro-batches a step's sequences are cut
  // into, run one after the other on each GPU so that the GPUs work at once (0: one per GPU).
  // One GPU runs a step whole unless asked (the logits are the same either way).
  int micro_batches = 0;
  // > 0: the sliding-window layers (Mistral's every layer, Gemma's local ones) keep their K/V in a
  // pool of their own of this many blocks, through each sequence's StepSequence::swa_blocks, so
  // the caller can free a sequence's blocks behind the window for those layers while the global
  // layers keep theirs (0: every layer in the one pool, every position kept). GPU engine only;
  // the model must have sliding-window layers.
  int swa_blocks = 0;
};

// One sequence's part of a step.
struct StepSequence {
  std::span<const int32_t> tokens;  // the new tokens
  int pos0 = 0;                     // position of tokens[0] (positions before it are cached)
  std::span<const int32_t> blocks;  // block table, covering positions 0 .. pos0 + tokens.size() - 1
  // BatchedOptions::swa_blocks > 0: the sliding-window layers' block table (in their pool), covering
  // the same positions; a block that ends before the window of the step's first token (position
  // pos0 - window + 1) may be -1 (freed: never read for a visible key).
  std::span<const int32_t> swa_blocks;
  // Wanted from the logits after the last new token (none: the sequence is only prefilled):
  int top_k = 0;           // the best k (1..64) logits and their ids, best first (ties: lower id)
  bool full = false;       // the whole row
  bool logsumexp = false;  // log(sum(exp(logits))), for log probabilities
  // >= 0: the one new token is the argmax of row feed_row of the step submitted just before this
  // one (which asked that row for top_k >= 1), copied on the GPU: a step can be recorded before
  // the previous one's tokens are back (tokens then holds one placeholder id).
  int feed_row = -1;
  // The logits (what top_k / full / logsumexp ask) after each of the last `rows` new tokens
  // (1 .. tokens.size()), one StepLogits each, in order: a speculative verify chunk's every
  // position. Each row counts against max_rows.
  int rows = 1;
  bool wants_logits() const { return top_k > 0 || full || logsumexp; }
};

// What a sequence with logits gets back.
struct StepLogits {
  std::vector<float> top_logits;  // top_k of them, descending
  std::vector<int32_t> top_ids;
  std::vector<float> logits;  // [vocab] when full
  float logsumexp = 0;
};

class BatchedLlama {
 public:
  BatchedLlama(LlamaModel& model, BatchedOptions o);
  ~BatchedLlama();
  BatchedLlama(const BatchedLlama&) = delete;
  BatchedLlama& operator=(const BatchedLlama&) = delete;

  const BatchedOptions& options() const;
  int max_ctx() const;        // positions the model's RoPE table covers
  uint64_t kv_bytes() const;  // the pool (on the GPU, or in host memory)
  // Whether a submitted step runs while the host records the next one (the GPU engine); the CPU
  // engine runs a step within submit(), so recording ahead only delays the tokens.
  bool overlaps() const;

  // Runs one step (one submit, waits for it). Returns one entry per row of logits wanted (a
  // sequence's `rows`), in order. Throws wgc::Error (naming the sequence) on bad input: token ids
  // outside the vocabulary, positions past max_ctx, block tables too short or outside the pool,
  // more than max_tokens tokens or max_rows rows, rows outside 1 .. tokens, a feed_row the
  // previous step did not compute.
  std::vector<StepLogits> step(std::span<const StepSequence> seqs);

  // The same in two halves, so that the host can record the next step (with feed_row) while the
  // GPU runs this one: submit() records and submits, collect() waits for the results. Steps are
  // collected in the order they were submitted.
  class Pending {
   public:
    Pending();
    ~Pending();
    Pending(Pending&&) noexcept;
    Pending& operator=(Pending&&) noexcept;
    explicit operator bool() const { return bool(impl_); }
    struct Impl;

   private:
    std::unique_ptr<Impl> impl_;
    friend class BatchedLlama;
  };
  Pending submit(std::span<const StepSequence> seqs);
  std::vector<StepLogits> collect(Pending& p);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgc::llm
