// The CPU engine's forward pass of a Llama-family model (the kernels of src/cpu/llm): the same
// model description as the GPU engine (llama_weights.h), the weights read in place from the
// ModelFile's mapping in their file's type (types the kernels do not read are converted once to
// f16, as on the GPU), f32 activations (8-bit per block of 32 for the quantized weights), an f32
// KV cache in blocks of slots, worker threads.
//
// One step runs the new tokens of any number of sequences, each with its own positions and block
// table (the single-sequence LlamaModel is one sequence whose one block spans its context). Every
// kernel is batch-invariant (cpu/llm/kernels.h), and so is each step: a sequence's logits are the
// same bits whatever else runs and however its prompt was chunked.
#pragma once

#include "cpu/llm/kernels.h"
#include "cpu/llm/q8_buffer.h"
#include "cpu/llm/thread_pool.h"
#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"
#include "llm/model/layer_plan.h"
#include "llm/model/layer_tensors.h"

#include <array>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace wgc::llm {

// Matrices one input feeds (Q|K|V, gate|up), whose outputs land side by side.
struct CpuGroup {
  std::vector<cpu::Weight> parts;
  std::vector<std::vector<float>> bias;    // per part (empty: none)
  int64_t rows = 0;                        // of all parts
  bool quantized = false, floats = false;  // some part takes 8-bit / f32 activations
};

// A mixture-of-experts layer's experts (Op::Moe): the router in f32 (so the top-k is not decided by
// 8-bit activations), with the shared expert's gate row after the experts' where the model has one;
// each routed expert's gate|up and down. The shared expert is the layer's GateUp and Down.
struct CpuMoe : MoeShape {
  CpuGroup router;
  std::vector<CpuGroup> gate_up, down;  // per expert
};

// A layer's weights by the plan's roles (layer_plan.h).
struct CpuLayer {
  std::array<CpuGroup, std::size(kLayerMats)> mats;              // Qkv, O, GateUp, Down (MoE: the shared expert)
  std::array<std::vector<float>, std::size(kLayerNorms)> norms;  // Attn, Mlp, Q, K (empty: none)
  std::optional<CpuMoe> moe;                                     // a mixture-of-experts layer
  const CpuGroup& mat(Mat m) const { return mats[size_t(m)]; }
  const std::vector<float>& norm(NormW n) const { return norms[size_t(n)]; }
};

struct CpuWeights {
  ModelConfig cfg;  // with the RoPE overrides applied
  int64_t hidden = 0, nh = 0, nkv = 0, hd = 0, ffn = 0, vocab = 0, qkv_dim = 0;
  float eps = 1e-5f;
  const ModelTensor* embed = nullptr;  // rows dequantized on use (any type)
  TensorType embed_type = TensorType::F32;
  std::span<const std::byte> embed_bytes;
  CpuGroup output;  // lm_head, or the embeddings when tied
  std::vector<float> norm;
  std::vector<CpuLayer> layers;
  uint64_t bytes = 0;  // of the matrices
  int64_t max_cols = 0;
  std::shared_ptr<const void> file;                 // keeps the mapped tensors alive
  std::vector<std::unique_ptr<std::byte[]>> owned;  // converted copies
};

// The model's weights for the CPU engine (the RoPE overrides as in EngineOptions).
std::shared_ptr<const CpuWeights> load_cpu_weights(const ModelFile& file, std::optional<double> rope_theta,
                                                   std::optional<RopeScaling> rope_scaling);

// K and V of `slots` positions per layer ([slot][n_kv * head_dim] f32), allocated untouched (pages
// are committed as they are written). ring_rows (one sequence, LlamaModel's CPU engine): each
// layer's slots (kv_layer_rows); a layer of fewer than `slots` is a ring that keeps its last
// positions, position p in slot p % its slots, whatever the block table says.
struct CpuKvCache {
  CpuKvCache(const CpuWeights& w, int64_t slots, std::span<const int> ring_rows = {});
  int64_t slots = 0, row = 0;        // row: floats per slot
  std::vector<int64_t> layer_slots;  // per layer
  std::vector<int32_t> ring_table;   // zeros: a ring's block table of blocks of its slots
  std::vector<std::unique_ptr<float[]>> k, v;
  bool ring(size_t li) const { return layer_slots[li] < slots; }
  uint64_t bytes() const {
    uint64_t b = 0;
    for (int64_t s : layer_slots) b += 2 * uint64_t(s) * uint64_t(row) * 4;
    return b;
  }
};

// One sequence's part of a step.
struct CpuSequence {
  std::span<const int32_t> tokens;  // new tokens at positions pos0 ..
  int pos0 = 0;
  std::span<const int32_t> blocks;  // block table (slots blocks[p / block] * block + p % block)
  bool logits = false;              // the logits of its last token are wanted
  int rows = 1;                     // with logits: of its last `rows` tokens (1 .. tokens.size())
};

class CpuForward {
 public:
  // Up to max_tokens tokens per step, positions below max_pos, on `pool`'s threads (a pool runs
  // one job at a time: forwards that share one must not step at the same time), with the kernels
  // of `isa` (none: cpu::kernels()).
  CpuForward(std::shared_ptr<const CpuWeights> w, std::shared_ptr<cpu::ThreadPool> pool, int max_tokens, int max_pos,
             std::optional<cpu::Isa> isa = {});

  const CpuWeights& weights() const { return *w_; }
  int threads() const { return pool_->size(); }
  int max_pos() const { return max_pos_; }

  // One step: every sequence's tokens (ids and positions checked by the caller), their K/V into
  // kv; then the logits of the last `rows` tokens of each sequence with `logits` set, in order (all_rows:
  // of every token, in order) into out [rows][vocab]. Returns the number of rows.
  int64_t step(std::span<const CpuSequence> seqs, CpuKvCache& kv, int64_t block, bool all_rows,
               std::vector<float>& out);
  // When set, step() writes those rows' hidden states after the final norm ([rows][hidden])
  // instead of their logits (decoder embedding models).
  void set_output_hidden(bool on) { output_hidden_ = on; }

 private:
  // y (+)= group(in) for n rows of `in` (in_stride apart): parts side by side, y_stride apart.
  void linear(const CpuGroup& g, const float* in, int64_t in_stride, int64_t n, float* y, int64_t y_stride,
              bool accumulate);
  void rms_norm(const float* x, const std::vector<float>& w, float* y, int64_t n, int64_t dim, int64_t stride);

  // Op::Moe: x[t] += the routed experts' (and shared expert's) MLPs of h[t] for n rows; the tokens
  // grouped by expert, so each expert's weights are read once per step (llama_cpu_moe.cpp).
  void moe(const CpuLayer& L, const float* h, float* x, int64_t n);

  // The steps of one layer (the plan of the CPU engine: its kernels take no fused steps) and of
  // the output.
  void run_layer(size_t li, int64_t n, std::span<const CpuSequence> seqs, const std::vector<int32_t>& seq_of,
                 const std::vector<int32_t>& pos, CpuKvCache& kv, int64_t block);

  std::shared_ptr<const CpuWeights> w_;
  std::vector<LayerPlan> plans_;  // per layer (mixture-of-experts layers differ); the output's in each
  const cpu::Kernels& k_;
  std::shared_ptr<cpu::ThreadPool> pool_;
  int max_tokens_ = 0, max_pos_ = 0;
  bool output_hidden_ = false;
  std::vector<float> rope_;          // [max_pos][hd/2] (cos, sin)
  std::vector<float> sliding_rope_;  // the sliding layers' where it differs (Gemma 3; empty: none)
  std::vector<float> x_, h_, qkv_, attn_, gu_, act_, last_;
  // Op::Moe: router logits, the tokens of one expert gathered, their gate|up, activation and
  // output, every pair's output, the shared expert's gate|up, activation and output.
  std::vector<float> moe_logits_, moe_x_, moe_gu_, moe_act_, moe_out_, moe_y_, moe_sgu_, moe_sact_, moe_ys_;
  cpu::Q8Buffer xq_;
  std::vector<std::vector<std::byte>> scratch_;  // per thread: linear scratch, attention scores
  std::vector<std::vector<float>> scores_;
};

}  // namespace wgc::llm
