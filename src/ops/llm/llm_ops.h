// The LLM kernels' host side: LlmOps records dispatches into a wgc::Batch, so a whole forward
// pass (of one token or a prompt) can go into one submit. Pipelines are compiled once per LlmOps
// (lazily, or all up front with precompile()); keep one LlmOps per Context and reuse it.
// An LlmOps is not thread-safe (its pipeline map is filled on first use).
//
// Conventions: activations are f32, row-major, one row per token; "stride" is the number of
// elements between tokens, "offset"/"off" an element offset inside a row (so the engine can
// address Q, K and V inside one fused QKV output, or gate and up inside one gate|up output).
// A tensor that an op writes must not also be one of its inputs (WebGPU forbids a buffer bound
// both read-only and writable in one dispatch); use the accumulate options for in-place updates.
// Every op checks its sizes against the tensors and throws wgc::Error naming the op.
#pragma once

#include "gpu/batch.h"
#include "gpu/context.h"
#include "gpu/kernel.h"
#include "gpu/tensor.h"
#include "ops/llm/kv_type.h"
#include "ops/llm/linear_version.h"
#include "ops/llm/tuning.h"
#include "ops/llm/weights.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wgc::llm {

struct KernelSpec;  // ops/llm/kernel_spec.h (internal)

// ---- RoPE tables ---------------------------------------------------------------------------
// (cos, sin) of angle = f32(pos) * f32(inv_freq[i]) (an f32 product, as transformers), for
// pos < max_pos: tensor [max_pos][inv_freq.size()] of vec2<f32>. inv_freq: the model's
// frequencies (ModelConfig::rope_inv_freq(), with its scaling), at most head_dim / 2 of them;
// cos and sin times `factor` (ModelConfig::rope_attention_factor(): YaRN, LongRoPE). Fewer than
// head_dim / 2 (partial rotary): the other pairs' entries are (1, 0), [max_pos][head_dim / 2] still.
struct RopeTable {
  Tensor cos_sin;
  int head_dim = 0, max_pos = 0;
};
RopeTable make_rope_table(const Context& ctx, std::span<const double> inv_freq, int head_dim, int max_pos,
                          double factor = 1.0);

// ---- KV cache ------------------------------------------------------------------------------
// One layer's cache: k and v tensors holding [n_kv_heads][max_ctx][head_dim] values of `type`
// starting at value `offset` (so several layers may share one tensor: offset = the layers
// before it's words * values per word; offset must be a multiple of 4). Position p of kv head h
// is value offset + (h*max_ctx + p)*hd (for Q8_0 its quant; kv_words gives the layer's extent).
// ring: a sliding-window layer's cache of max_ctx rows that keeps the last max_ctx positions,
// position p at row p % max_ctx (every writer stores there, the attention kernels read there:
// kv_row_ring.wgsl); a pass's window and new tokens must fit (window + tokens - 1 <= max_ctx).
struct KvLayer {
  Tensor k, v;
  int n_kv_heads = 0, max_ctx = 0, head_dim = 0;
  uint32_t offset = 0;
  KvType type = KvType::F32;
  bool ring = false;
  int64_t values() const { return int64_t(n_kv_heads) * max_ctx * head_dim; }  // of the layer
};
// A cache for n_layers layers (one tensor each for K and V); layer(i) views layer i, whose rows
// are rows[i] (max_ctx, or fewer for a ring).
struct KvCache {
  Tensor k, v;
  int n_layers = 0, n_kv_heads = 0, max_ctx = 0, head_dim = 0;
  KvType type = KvType::F32;
  std::vector<int> rows;          // per layer
  std::vector<uint32_t> offsets;  // per layer: KvLayer::offset
  KvLayer layer(int i) const;
};
// layer_rows: each layer's rows (empty: max_ctx for all); a layer of fewer rows than max_ctx is a
// ring (KvLayer::ring).
KvCache make_kv_cache(const Context& ctx, int n_layers, int n_kv_heads, int max_ctx, int head_dim,
                      KvType type = KvType::F32, std::span<const int> layer_rows = {});
// One layer's K and V tensors of n_slots rows (the serving engine's paged pool: offset 0).
KvLayer make_kv_layer(const Context& ctx, int n_kv_heads, int n_slots, int head_dim, KvType type);

// ---- 8-bit activations ---------------------------------------------------------------------
// Activations quantized to 8 bits per block of 32 elements, per token (llama.cpp's q8_1): the
// input of the integer-dot-product kernels (linear_q8) for Q4_0 / Q8_0 / Q4_K / Q6_K weights.
// Block b of token t holds values q_i * d with d = max|x| / 127, q_i = round(x_i / d):
// qs [tokens][cols / 4] words of four int8 quants (the first in the low byte), ds [tokens]
// [cols / 32] pairs (f32 bits of d; the sums of q_0..15 and q_16..31 as two i16, low first).
struct Q8Act {
  Tensor qs, ds;
  int max_tokens = 0;
  int64_t cols = 0;  // a multiple of 32
};
Q8Act make_q8_act(const Context& ctx, int max_tokens, int64_t cols);
// Whether linear_q8 takes weights of this type.
bool supports_q8(TensorType t);

// ---- linear: versions and options ---------------------------------------------------------
// BatchedQ8's quantization of x: invocations per token (rms_norm_q8's wg), fixed so that a
// token's RMSNorm sums in one order whatever the batch.
inline constexpr uint32_t kBatchedQuantWg = 256;

// The problem: n_tokens activations through `rows` rows of a weight of `cols` columns.
struct LinearDims {
  int n_tokens = 1;
  int64_t rows = 0, cols = 0;
  TensorType type = TensorType::F32;
};

// rms_norm's versions: the row's sum of squares through workgroup memory or subgroup adds.
enum class RmsNormVersion { Auto, Shared, Subgroup };
std::string_view to_string(RmsNormVersion v);  // "auto", "shared", "subgroup"
// y = W x with extras. Rows row0 .. row0 + rows - 1 of W (rows = -1: to the end) produce
// y[t * y_stride + y_offset + r] (y_stride = -1: rows). bias (f32, indexed by the weight row
// row0 + r) is added when given; accumulate adds the old y (the residual: y += W x).
struct LinearOptions {
  int64_t row0 = 0, rows = -1;
  int64_t x_stride = -1;  // elements between tokens of x (-1: cols)
  int64_t y_stride = -1, y_offset = 0;
  Tensor bias;
  bool accumulate = false;
};

struct RopeArgs {
  int n_tokens = 1, n_heads = 1;
  int64_t stride = -1, offset = 0;  // x[t * stride + offset + h * head_dim + d]; stride -1: n_heads*hd
  int pos0 = 0;                     // position of token t = pos0 + t ...
  Tensor positions;                 // ... or positions[t] (u32) when given
  bool interleaved = false;         // pairs (2i, 2i+1) (GGML norm) vs (i, i + hd/2) (HF / neox)
};

// rope_kv_append: one fused QKV activation, qkv[t * stride + off + h * head_dim + d], holding the
// n_heads query heads at q_offset and the cache's n_kv_heads key and value heads at k_offset and
// v_offset (-1: q|k|v back to back, so k_offset = q_offset + n_heads*hd, v_offset after k).
struct RopeKvArgs {
  int n_tokens = 1, n_heads = 1;  // query heads
  int64_t stride = -1;            // elements between tokens (-1: (n_heads + 2 * n_kv_heads) * hd)
  int64_t q_offset = 0, k_offset = -1, v_offset = -1;
  int pos0 = 0;              // token t goes to cache position pos0 + t, rotated by position pos0 + t ...
  Tensor positions;          // ... or by positions[t] (u32) when given (its cache position stays pos0 + t)
  bool interleaved = false;  // pairs (2i, 2i+1) (GGML norm) vs (i, i + hd/2) (HF / neox)
  // Paged caches: token t goes to cache row positions[n_tokens + t] (positions then holds
  // 2 * n_tokens entries: the positions, then the rows; PagedAttentionPlan::positions).
  bool cache_rows = false;
};

// The most splits decode attention takes (attn_combine_q8.wgsl keeps a weight per split in
// workgroup memory).
inline constexpr uint32_t kMaxDecodeSplits = 4096;
// Keys per split when kv_len keys are split `splits` ways in whole blocks of `block` keys (the
// split count that then fills them: ceil(kv_len / split_keys)).
inline uint32_t split_keys(uint64_t kv_len, uint32_t splits, uint32_t block) {
  return std::max(block, ceil_div(ceil_div(kv_len, splits), block) * block);
}

// One token's flash-decoding partials (LlmOps::attention_decode_partials).
struct DecodePartials {
  Tensor part;  // [n_heads][splits][head_dim + 2] floats, padded to whole vec4s
  uint32_t splits = 0;
  int n_heads = 0, head_dim = 0;
};

struct AttentionArgs {
  int n_tokens = 1;                     // new query tokens (their K/V must already be in the cache)
  int n_heads = 0;                      // query heads; kv head of head h = h / (n_heads / n_kv_heads)
  int start = 0;                        // position of query token 0 (tokens already cached before it)
  int64_t q_stride = -1, q_offset = 0;  // q[t * q_stride + q_offset + h * hd + d] (-1: n_heads*hd)
  int64_t o_stride = -1, o_offset = 0;  // out likewise
  float scale = 0;                      // 0: 1/sqrt(head_dim)
  // Sliding window: the query at position q sees keys q - window + 1 .. q (0: keys 0 .. q).
  int window = 0;
  float softcap = 0;  // scaled scores s -> softcap * tanh(s / softcap) (Gemma 2; 0: none)
  int splits = 0;     // decode: splits over the sequence (0: pick; at most kMaxDecodeSplits)
  // Decode: the position of the query token read from this u32 tensor (element 0) when the batch
  // runs instead of `start`, with a fixed number of splits (`splits`, or the most the cache
  // needs), so that one recorded step serves every position. `start` then only bounds the check.
  Tensor start_from;
};

// Paged attention (serving): the new tokens of several sequences in one batch, each sequence over
// its own blocks of a shared cache. The cache is a KvLayer whose max_ctx is the pool's slot count
// (blocks * block_tokens); position p of a sequence lives in row blocks[p / block] * block +
// p % block. The rows of one batch follow each other: sequence i's tokens are batch rows
// tok0 .. tok0 + n_tokens - 1 (at positions pos0 ..), its K/V appended before attention.
struct PagedSequence {
  int tok0 = 0, n_tokens = 1, pos0 = 0;
  std::vector<int32_t> blocks;  // block table: covers positions 0 .. pos0 + n_tokens - 1
};
struct PagedAttentionArgs {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int block = 16;                       // tokens per cache block
  int split_len = 256;                  // keys per split, a multiple of 16; part of every row's arithmetic
  int64_t q_stride = -1, q_offset = 0;  // q[t * q_stride + q_offset + h * hd + d] (-1: n_heads*hd)
  int64_t o_stride = -1, o_offset = 0;  // out likewise
  float scale = 0;                      // 0: 1/sqrt(head_dim)
  int window = 0;                       // sliding window as AttentionArgs::window (0: none)
  float softcap = 0;                    // score soft-cap as AttentionArgs::softcap (0: none)
};
// What a batch's paged attention needs on the GPU, uploaded once per step and used by every
// layer: the block tables, the sequences, the work items, and the positions (with the cache rows
// after them, for rope_kv_append's cache_rows).
struct PagedAttentionPlan {
  PagedAttentionArgs args;
  int n_tokens = 0, n_seqs = 0;
  uint32_t decode_items = 0, prefill_items = 0, decode_bq = 1, n_splits = 1;
  Tensor tables, seqs, items, positions, partials;
};

// ---- mixture of experts ------------------------------------------------------------------
// A step's routing (LlmOps::moe_route), all on the GPU: for each (token, slot) pair q = t * k + j,
// the expert (ids, u32) and its weight (wts, f32); the pairs grouped by expert (order: pair
// indices, expert by expert) and one run per expert that has pairs (runs: u32 count, then per run
// expert, first index into order, pairs). moe_linear takes a run per workgroup (and a block of
// rows), kMoeChunk pairs at a time, so each expert's weights are read once per step, not once
// per token.
inline constexpr uint32_t kMoeChunk = 8;
inline constexpr int kMoeMaxExperts = 1024;  // moe_route.wgsl's workgroup arrays
struct MoeRouting {
  Tensor ids, wts, order, runs;
  int max_tokens = 0, n_experts = 0, k = 0;
};
MoeRouting make_moe_routing(const Context& ctx, int max_tokens, int n_experts, int k);
// The most runs n tokens' pairs can make: min(experts, n * k) (the grid of moe_linear).
uint64_t moe_max_runs(int n_tokens, int n_experts, int k);

// A kernel version, for tests and benchmarks.
struct KernelVersion {
  std::string op, version, note;
};

// What the LLM kernels may use of an adapter: their choices (which kernel, which schedule, which
// fusion) follow these, never the adapter directly, so that a test can run a weaker adapter's
// fallbacks by passing less than the adapter has.
struct LlmCaps {
  bool subgroups = false;          // usable: the feature and one fixed subgroup size
  uint32_t subgroup_size = 0;      // 0 without subgroups
  uint32_t max_invocations = 64;   // per workgroup
  uint32_t workgroup_storage = 0;  // bytes of workgroup memory
  uint32_t storage_buffers = 0;    // per shader stage
};
LlmCaps llm_caps(const Context& ctx);  // what the context's adapter offers

class LlmOps {
 public:
  explicit LlmOps(Context ctx);
  // caps: at most what llm_caps(ctx) says (wgc::Error otherwise).
  LlmOps(Context ctx, const LlmCaps& caps);
  LlmTuning tuning;
  const Context& context() const { return ctx_; }
  const LlmCaps& caps() const { return caps_; }

  // Compiles every pipeline the given types (and head dims) may use, one after another (so that the
  // first token does not pay for them); ring: the attention kernels' ring forms too (KvLayer::ring).
  void precompile(const std::vector<TensorType>& types, const std::vector<int>& head_dims, bool ring = false);

  // ---- 8-bit activations (Q8Act) ----
  // x (f32, token t at x[t * x_stride + x_offset ..], x_stride -1: out.cols) quantized into out.
  void quantize_q8(Batch& b, const Tensor& x, const Q8Act& out, int n_tokens, int64_t x_stride = -1,
                   int64_t x_offset = 0) const;
  // rms_norm then quantize_q8, in one dispatch: out[t] = q(x[t] / sqrt(mean(x[t]^2) + eps) * w).
  // wg: invocations per token (0: tuning.quant_wg, more for one token); a fixed wg gives a token
  // the same result in any batch (the serving engine's batch invariance).
  void rms_norm_q8(Batch& b, const Tensor& x, const Tensor& w, const Q8Act& out, int n_tokens, float eps,
                   int64_t x_stride = -1, int64_t x_offset = 0, uint32_t wg = 0) const;
  // swiglu then quantize_q8, in one dispatch: out[t][i] = q(silu(g) * u), g = gu[t * stride + i],
  // u = gu[t * stride + up_offset + i], i < out.cols.
  void swiglu_q8(Batch& b, const Tensor& gu, int64_t stride, int64_t up_offset, const Q8Act& out, int n_tokens) const;
  // y = W x with x quantized (supports_q8(w.type), w.cols == x.cols): integer dot products,
  // scaled per block (results differ from linear's by x's rounding). LinearOptions' row range,
  // y stride and offset, bias and accumulate apply (x_stride and version do not). One token runs
  // the matvec (matvec_q8.wgsl), more the register-tiled matmul (matmul_q8.wgsl).
  void linear_q8(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& y, int n_tokens,
                 const LinearOptions& o = {}) const;
  // LinearVersion::BatchedQ8 (Q4_0 / Q8_0 weights) with x already quantized (the serving engine's
  // rms_norm_q8 / swiglu_q8 / quantize_q8 output): bit-identical to linear's BatchedQ8 on the f32 x
  // that quantize_q8 gives these quants. LinearOptions as for linear_q8.
  void linear_batched_q8(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& y, int n_tokens,
                         const LinearOptions& o = {}) const;
  // linear_batched_q8 through a fused QKV weight (rows: a.n_heads query heads, then the cache's
  // key and value heads, back to back; qkv one row per token) and rope_kv_append(qkv, table,
  // cache, a) on its output, in one dispatch: the same results as the two. bias: of the QKV rows,
  // or none. Needs serving_fusions(head_dim).rope.
  void linear_batched_q8_rope(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& qkv, int n_tokens,
                              const RopeTable& table, const KvLayer& cache, const RopeKvArgs& a,
                              const Tensor& bias = {}) const;
  // What the serving engine's kernels can fold in for heads of head_dim: RoPE and the KV append in
  // the QKV linear (linear_batched_q8_rope: even, ten storage buffers) and the paged combine's
  // quantization (paged_attention_q8: a multiple of 32, a workgroup per head).
  struct ServingFusions {
    bool rope = false, paged_q8 = false;
  };
  ServingFusions serving_fusions(int head_dim) const;
  // One token through a gate|up weight (rows [0, n) gate, [n, 2n) up, n = out.cols): silu(gate) *
  // up quantized into out, in one dispatch (n % 32 == 0).
  void linear_swiglu_q8(Batch& b, const GpuWeight& gate_up, const Q8Act& x, const Q8Act& out) const;
  // One token: rms_norm_q8 of x (f32, elements 0 .. w.cols - 1) with norm_w, then linear_q8 (or
  // linear_swiglu_q8) of it, in one dispatch: every workgroup normalises and quantizes x into its
  // workgroup memory (the same values as rms_norm_q8 but for a sum of squares added in another
  // order), so no pass and no barrier come between. Needs matvec_q8_fusions(w.cols).norm.
  void rms_norm_linear_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                          const Tensor& y, const LinearOptions& o = {}) const;
  void rms_norm_swiglu_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& gate_up,
                          const Q8Act& out) const;
  // What the one-token matvecs of 8-bit activations can fold in for x of `cols` columns: the
  // RMSNorm and quantization (rms_norm_linear_q8, rms_norm_swiglu_q8: a multiple of 32 whose quants
  // fit in a workgroup's memory), and RoPE with the KV append (rms_norm_qkv_rope_q8: ten storage
  // buffers).
  struct Q8Fusions {
    bool norm = false, rope = false;
  };
  Q8Fusions matvec_q8_fusions(int64_t cols) const;
  // One token: rms_norm_linear_q8 through a fused QKV weight (rows: a.n_heads query heads, then
  // the cache's key and value heads, back to back) and rope_kv_append(qkv, table, cache, a) on its
  // output, in one dispatch (the same results as the two). Needs matvec_q8_fusions(w.cols).rope (ten
  // storage buffers: adapters allowing that many per shader stage). A QKV weight in parts (of
  // different types) takes one call per part: w holds rows row0 .. row0 + w.rows - 1 of the fused
  // weight (whole heads), written to qkv from row0 on.
  void rms_norm_qkv_rope_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                            const Tensor& qkv, const RopeTable& table, const KvLayer& cache, const RopeKvArgs& a,
                            int64_t row0 = 0) const;
  // attention_decode's split-K pass alone: one token's flash-decoding partials (attn_partial.wgsl's
  // layout, [n_heads][splits][head_dim + 2]) for combine_linear or attention_combine.
  DecodePartials attention_decode_partials(Batch& b, const KvLayer& cache, const Tensor& q,
                                           const AttentionArgs& a) const;
  // attention_decode's second pass: the partials combined into out[o_offset + h * head_dim + d].
  void attention_combine(Batch& b, const DecodePartials& p, const Tensor& out, int64_t o_offset = 0) const;
  // One token: y = W x (+ y) with x the attention output combined from p, in one dispatch (each
  // workgroup merges the partials into its staged x: attention_combine's values with combine_sp
  // 1). LinearOptions' row range, y offset and accumulate apply (no bias, no x_stride). Needs
  // fuses_combine(w.type, p).
  void combine_linear(Batch& b, const DecodePartials& p, const GpuWeight& w, const Tensor& y,
                      const LinearOptions& o = {}) const;
  // What the one-token matvecs with f32 activations can fold in for weights of type t and x of
  // `cols` columns: the RMSNorm (rms_norm_linear, rms_norm_swiglu: a multiple of 4), RoPE and the
  // KV append (rms_norm_qkv_rope: nine storage buffers), and with decode partials p the attention's
  // combine (combine_linear: float weights, x and the splits' weights in workgroup memory;
  // combine_prefix: walking only the keyed splits, from 8 splits).
  // With glu_rows (a gate|up weight's rows), also whether linear_swiglu / rms_norm_swiglu take it
  // under this tuning (glu).
  struct MatvecFusions {
    bool norm = false, rope = false, combine = false, combine_prefix = false, glu = false;
  };
  MatvecFusions matvec_fusions(TensorType t, int64_t cols, const DecodePartials* p = nullptr,
                               int64_t glu_rows = 0) const;
  // The combine's facts alone (the layer plan asks them per step, once its partials are known).
  bool combine_prefix(const DecodePartials& p) const;
  bool fuses_combine(TensorType t, const DecodePartials& p) const;
  // attention_decode with the output quantized into out (heads back to back: out.cols = n_heads *
  // head_dim, head_dim % 32 == 0; o_stride/o_offset unused): the o projection's input.
  void attention_decode_q8(Batch& b, const KvLayer& cache, const Tensor& q, const Q8Act& out,
                           const AttentionArgs& a) const;

  // All op/version pairs this adapter runs (for the benchmark listing).
  std::vector<KernelVersion> versions() const;

  // Whether linear version v can run on this adapter (Subgroup needs usable subgroups).
  bool supports(LinearVersion v, const LinearDims& d) const;
  // What LinearVersion::Auto runs: tuning.matmul for n_tokens > 1 when set; else Naive on CPU
  // adapters (a workgroup costs ~0.5 ms there whatever it does: an lm_head of 32000 x 16 went from
  // 2.2 s to tens of ms), and on GPUs the subgroup (else shared) matvec for one token, the
  // register-tiled matmul for products of 256 tiles and more, the tiled matmul for smaller ones
  // (docs/benchmarks.md).
  LinearVersion choose_linear(const LinearDims& d) const;

  // out[t * out_stride + k] = table[ids[t]][k] (f32), ids u32 [n_tokens]; out_stride -1: cols.
  // Ids >= table.rows give zero rows.
  void embedding(Batch& b, const GpuWeight& table, const Tensor& ids, const Tensor& out, int n_tokens,
                 int64_t out_stride = -1) const;

  // y[r * n + i] = x[r * n + i] / sqrt(mean(x[r]^2) + eps) * w[i] (x, w, y f32; y != x).
  void rms_norm(Batch& b, const Tensor& x, const Tensor& w, const Tensor& y, int rows, int n, float eps,
                RmsNormVersion v = RmsNormVersion::Auto) const;
  // The same added to y: y[r * n + i] += ... (Gemma's norms of the attention and MLP outputs).
  void rms_norm_add(Batch& b, const Tensor& x, const Tensor& w, const Tensor& y, int rows, int n, float eps) const;

  // In place: each head vector x[t * stride + offset + h * head_dim + i] (h < n_heads) is
  // RMS-normalised and scaled by w[i] (Qwen 3's q_norm / k_norm inside a fused QKV row).
  void head_rms_norm(Batch& b, const Tensor& x, const Tensor& w, int n_tokens, int n_heads, int head_dim,
                     int64_t stride, int64_t offset, float eps) const;

  // RoPE in place on x (f32) with the table's positions (< table.max_pos).
  void rope(Batch& b, const Tensor& x, const RopeTable& table, const RopeArgs& a) const;

  // y = W x (+ bias) (+ y): x f32 [n_tokens][x_stride]. n_tokens == 1 runs the matvec kernels,
  // more a matmul (LinearVersion::Naive: one invocation per output for both; see LinearVersion).
  void linear(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& y, int n_tokens, const LinearOptions& o = {},
              LinearVersion v = LinearVersion::Auto) const;

  // One token through a gate|up weight (rows [0, n) gate, [n, 2n) up, n % 32 == 0): out[i] =
  // silu(gate) * up, in one dispatch (the matvec with f32 x; v: Subgroup or Shared, Auto picks).
  void linear_swiglu(Batch& b, const GpuWeight& gate_up, const Tensor& x, const Tensor& out,
                     LinearVersion v = LinearVersion::Auto) const;

  // One token: rms_norm of x (elements 0 .. w.cols - 1) with norm_w, then linear (or
  // linear_swiglu) of it in one dispatch, the matvec's workgroups each normalising x as they read
  // it (the sum of squares added in another order than rms_norm's). No bias (LinearOptions' row
  // range, y offset and accumulate apply); needs matvec_fusions(F32, w.cols).norm.
  void rms_norm_linear(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w, const Tensor& y,
                       const LinearOptions& o = {}) const;
  void rms_norm_swiglu(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& gate_up,
                       const Tensor& out) const;
  // The column ranges of a one-token linear() of weight type t and cols columns (tuning.matvec_split,
  // matvec_split_cols; 1: not split). rows: unused (kept for callers until the layer plan).
  uint32_t matvec_splits(TensorType t, int64_t cols, int64_t rows = 0) const;
  // Whether a one-token matvec of this kind (a bit of tuning.matvec_kx) computing `rows` rows of
  // a weight of type t and `cols` columns runs the kx schedule (matvec_kx.wgsl) under version v.
  static constexpr uint32_t kKxSwiglu = 1, kKxPlain = 2, kKxRope = 4;
  bool kx_runs(uint32_t kind, TensorType t, int64_t rows, int64_t cols, LinearVersion v) const;
  // The kx schedule's invocations per workgroup for a weight of `cols` columns, and the weight
  // chunks of a row each of them takes (CPL) for weights of type t.
  uint32_t kx_workgroup(int64_t cols) const;
  uint64_t kx_chunks(TensorType t, int64_t cols) const;
  // One token: rms_norm_linear through a fused QKV weight (rows: a.n_heads query heads, then the
  // cache's key and value heads, back to back) and rope_kv_append(qkv, table, cache, a) on its
  // output, in one dispatch (bit-identical to the two). Needs matvec_fusions(F32, w.cols).rope (nine storage
  // buffers: adapters allowing that many per shader stage).
  void rms_norm_qkv_rope(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                         const Tensor& qkv, const RopeTable& table, const KvLayer& cache, const RopeKvArgs& a) const;

  // out[t * out_stride + i] = silu(g) * u, g = gate[t * g_stride + g_off + i],
  // u = up[t * u_stride + u_off + i], i < n (gate and up may be one gate|up tensor); gelu: GELU-tanh
  // instead of silu (GeGLU: Gemma), with exact_gelu the erf form (ModernBERT's GeGLU).
  void swiglu(Batch& b, const Tensor& gate, int64_t g_stride, int64_t g_off, const Tensor& up, int64_t u_stride,
              int64_t u_off, const Tensor& out, int n_tokens, int n, int64_t out_stride = -1, bool gelu = false,
              bool exact_gelu = false) const;
  // y += x (n elements).
  void add(Batch& b, const Tensor& x, const Tensor& y, int64_t n) const;
  // y *= s (n elements).
  void scale(Batch& b, const Tensor& y, int64_t n, float s) const;
  // y = cap * tanh(y / cap) (n elements; Gemma 2's final logit soft-cap).
  void softcap(Batch& b, const Tensor& y, int64_t n, float cap) const;

  // Writes the K and V rows of n_tokens new tokens, k_src[t * src_stride + k_off + h * hd + d]
  // (and v_src with v_off), into the cache at positions pos0 .. pos0 + n_tokens - 1.
  void kv_append(Batch& b, const KvLayer& cache, const Tensor& k_src, int64_t k_off, const Tensor& v_src, int64_t v_off,
                 int64_t src_stride, int pos0, int n_tokens) const;

  // rope + rope + kv_append in one dispatch, with the same arithmetic (bit-identical results):
  // RoPE in place on the query heads of qkv; the key heads rotated and the value heads copied
  // into the cache at positions pos0 .. pos0 + n_tokens - 1. The key and value heads in qkv are
  // left as they were (unlike rope on them, which rotates the keys in place).
  void rope_kv_append(Batch& b, const Tensor& qkv, const RopeTable& table, const KvLayer& cache,
                      const RopeKvArgs& a) const;

  // Causal GQA attention of n_tokens queries at positions start .. start + n_tokens - 1 over the
  // cache's keys 0 .. start + n_tokens - 1 (append them first). n_tokens == 1 uses split-K flash
  // decoding (partials + combine); more the tiled flash-attention kernel. head_dim % 4 == 0,
  // q/out strides and offsets multiples of 4.
  void attention(Batch& b, const KvLayer& cache, const Tensor& q, const Tensor& out, const AttentionArgs& a) const;
  // The two paths directly (prefill also works for one token; decode for n_tokens == 1 only).
  void attention_prefill(Batch& b, const KvLayer& cache, const Tensor& q, const Tensor& out,
                         const AttentionArgs& a) const;
  void attention_decode(Batch& b, const KvLayer& cache, const Tensor& q, const Tensor& out,
                        const AttentionArgs& a) const;

  // Uploads a batch's sequences for paged_attention (checks them against the args: tokens back to
  // back, block tables long enough, every block < n_blocks).
  PagedAttentionPlan plan_paged_attention(const std::vector<PagedSequence>& seqs, const PagedAttentionArgs& a,
                                          int n_blocks) const;
  // Attention of every new token of the plan's sequences over its own cache blocks (prefill rows
  // and decode rows alike: a row's result depends only on its position and data, not on the
  // batch). cache.max_ctx = the pool's slots.
  void paged_attention(Batch& b, const KvLayer& cache, const Tensor& q, const Tensor& out,
                       const PagedAttentionPlan& plan) const;
  // The same with the output quantized (quantize_q8's bits, one pass fewer: the combine writes the
  // 8-bit activations) into out (heads back to back: out.cols = n_heads * head_dim, head_dim % 32
  // == 0, no o_stride / o_offset): the o projection's input.
  void paged_attention_q8(Batch& b, const KvLayer& cache, const Tensor& q, const Q8Act& out,
                          const PagedAttentionPlan& plan) const;

  // The decode attention's splits of the cache unless told: tuning.attn_dec_wgs workgroups' worth
  // over the KV heads.
  uint32_t decode_splits(int n_kv_heads) const;

  // ---- mixture of experts (MoeRouting) ----
  // Routes n tokens: for each, the softmax of its r.n_experts logits (logits[t * stride + e]),
  // the top r.k (ties: the lower expert), their weights (renormalised to sum 1 with norm_topk);
  // then the pairs grouped by expert into r's order and runs. One workgroup; a token's result
  // depends on its logits alone.
  void moe_route(Batch& b, const Tensor& logits, int64_t stride, int n_tokens, bool norm_topk,
                 const MoeRouting& r) const;
  // Each routed pair q through its expert's rows of a stacked weight w (experts' matrices of
  // `rows` rows each, back to back): y[q * y_stride + y_off + i] = W[e * rows + i] . x_q, where
  // x_q is x's row q / k (x_per_pair false: one row per token) or q (true), x_stride apart. Any
  // weight type the kernels read; f32 activations; batch-invariant (linear_batched's arithmetic).
  void moe_linear(Batch& b, const GpuWeight& w, int64_t rows, const Tensor& x, int64_t x_stride, bool x_per_pair,
                  const Tensor& y, int64_t y_stride, int64_t y_off, int n_tokens, const MoeRouting& r) const;
  // x[t] += sum_j wts[t k + j] * yd[t k + j] (rows of `hidden`), plus, where ys is given, the shared
  // expert's output ys[t] scaled by sigmoid(gate[t * g_stride + g_col]).
  void moe_combine(Batch& b, const Tensor& yd, const MoeRouting& r, int n_tokens, int64_t hidden, const Tensor& ys,
                   const Tensor& gate, int64_t g_stride, int64_t g_col, const Tensor& x) const;

  // out[0] = the first index of the largest of logits[0 .. n) (u32 tensor of >= 1 element).
  void argmax(Batch& b, const Tensor& logits, int64_t n, const Tensor& out) const;
  // The same, and what the next one-token step reads, in the argmax's last pass: x[0 ..
  // table.cols) = that token's embedding row (embedding()) and pos (u32 [2]: position, cache
  // row) up by one. A decode step then needs neither an embedding dispatch nor a position upload.
  void next_token(Batch& b, const Tensor& logits, int64_t n, const Tensor& out, const GpuWeight& table, const Tensor& x,
                  const Tensor& pos) const;
  // The k (<= 64, <= n) largest: out_vals f32 [k] descending, out_ids u32 [k] (ties: lower id).
  void topk(Batch& b, const Tensor& logits, int64_t n, int k, const Tensor& out_vals, const Tensor& out_ids) const;
  // The same for each of `rows` rows of n logits: out_vals/out_ids [rows][k].
  void topk_rows(Batch& b, const Tensor& logits, int rows, int64_t n, int k, const Tensor& out_vals,
                 const Tensor& out_ids) const;
  // out[r] = log(sum_i exp(logits[r][i])) of each of `rows` rows of n (the softmax's normaliser,
  // for log probabilities).
  void row_logsumexp(Batch& b, const Tensor& logits, int rows, int64_t n, const Tensor& out) const;

 private:
  // rms_norm and rms_norm_add (accumulate: y +=).
  void rms_norm_pass(Batch& b, const Tensor& x, const Tensor& w, const Tensor& y, int rows, int n, float eps,
                     RmsNormVersion v, bool accumulate) const;
  // The pipeline of a kernel variant (KernelSpec: every family's variant struct makes one),
  // compiled once per LlmOps.
  Kernel kernel(const KernelSpec& s) const;
  void linear_batched(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& y, int n_tokens, const Params& prm,
                      const Tensor& bias, int64_t rows) const;
  void linear_batched_q8(Batch& b, const GpuWeight& w, const Tensor& x, int64_t x_stride, const Tensor& y, int n_tokens,
                         const Params& prm, const Tensor& bias, int64_t rows) const;

  // The batched kernels' workgroup size: the largest that still gives kBatchedMinGroups workgroups.
  uint32_t batched_wg(uint64_t token_tiles, int64_t rows, uint32_t rows_per_group) const;
  uint32_t batched_tt(int n_tokens) const;  // tuning.batched_tt or _large for n_tokens, checked
  // kind: "naive", "matmul" (tiled) or "regtile".
  Kernel linear_kernel(const std::string& kind, TensorType t) const;
  // matvec.wgsl for weights of `cols` columns (0: unknown, taken as whole chunks without staging).
  // swiglu_rows: the SWIGLU variant with that many rows per group (0: the plain kernel); norm_eps:
  // x RMS-normalised inside (matvec_x_norm.wgsl) with this epsilon; rope: the ROPE epilogue.
  // splits: the columns in that many ranges (matvec.wgsl's KS; plain rows only).
  // xc: x combined from decode partials (matvec_x_combine.wgsl; plain rows only).
  // groups: the grid's workgroups (fewer than kMatvecFewGroups: kMatvecFewUnroll loads in flight; 0: unknown).
  Kernel matvec_kernel(TensorType t, LinearVersion v, int64_t cols, uint32_t swiglu_rows = 0,
                       const float* norm_eps = nullptr, bool rope = false, uint32_t splits = 1,
                       const DecodePartials* xc = nullptr, uint64_t groups = 0) const;
  // Whether the matvec stages the whole of x (of a range of cols columns) in workgroup memory
  // (where it fits beside extra_bytes of the x file's own).
  bool stages_x(TensorType t, int64_t cols, uint64_t extra_bytes = 0) const;
  // The one-token plain matvec (linear's, combine_linear's): y = W x over rows rows from o.row0,
  // with its columns split (matvec_splits) into partial sums and matvec_sum.wgsl where they are.
  void matvec(Batch& b, const GpuWeight& w, const Arg& x, const Tensor& bias, const Tensor& y, int64_t rows,
              const LinearOptions& o, uint32_t flags, LinearVersion v, const DecodePartials* xc = nullptr) const;
  // The chunks (weight vec4s) in each of `splits` column ranges.
  static int64_t split_chunks(TensorType t, int64_t cols, uint32_t splits);
  // matvec.wgsl's parameters for one token without ROPE.
  Params matvec_params(int64_t rows, int64_t cols, int64_t row0, int64_t y_off, uint32_t flags) const;
  // The gate|up + SwiGLU matvec, x RMS-normalised with norm_w first when eps is given.
  void swiglu_matvec(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& norm_w, const float* eps,
                     const Tensor& out, LinearVersion v, const std::string& op) const;
  void check_norm(const Tensor& x, const Tensor& norm_w, int64_t cols, const std::string& op) const;
  // The matvec schedule: tuning clamped to the adapter and the kernel. The pipeline and the grid
  // must agree on it.
  struct MatvecShape {
    uint32_t wg, tpr, rows, unroll;  // invocations per workgroup and per row group; rows per group; unroll
  };
  MatvecShape matvec_shape(bool swiglu = false) const;  // (swiglu: the same schedule)
  // Why the gate|up + GLU matvec cannot take a weight of type t, rows x cols, under version v
  // ("" where it can): the one answer for swiglu_matvec's checks and matvec_fusions' glu.
  std::string swiglu_problem(TensorType t, int64_t rows, int64_t cols, LinearVersion v) const;
  // m with kMatvecFewUnroll for a grid of `groups` workgroups (0: unknown, as it is).
  MatvecShape few_unroll(MatvecShape m, uint64_t groups) const;
  // The kx schedule (tuning.matvec_kx, matvec_kx.wgsl): its kernel, and its workgroups for a
  // weight of `rows` rows (SWIGLU / ROPE: their row pairs, two rows per tile row).
  Kernel matvec_kx_kernel(TensorType t, int64_t cols, uint32_t kind, const float* norm_eps = nullptr,
                          const DecodePartials* xc = nullptr) const;
  uint64_t kx_grid(uint32_t kind, int64_t rows, TensorType t, int64_t cols) const;
  Kernel attn_kernel(int head_dim, int bq, KvType kv = KvType::F32, bool ring = false) const;
  // flash_attn_tiled_pf.wgsl for this head_dim, or an empty Kernel where it cannot run.
  Kernel attn_tiled_pf_kernel(int head_dim, KvType kv = KvType::F32, bool ring = false) const;
  // attn_combine.wgsl: partials [n_tokens][n_heads][splits][head_dim + 2] into out's rows.
  void combine_partials(Batch& b, const Tensor& part, const Tensor& out, int n_tokens, int n_heads, uint32_t splits,
                        int head_dim, int64_t o_stride, int64_t o_offset) const;
  // flash_decode.wgsl's schedule for this head_dim and GQA group (tuning clamped to the adapter).
  struct DecodeShape {
    uint32_t wg, bk, nj;  // wg 0: the kernel cannot take this shape
  };
  DecodeShape decode_shape(int head_dim, int G) const;
  // flash_decode_sg.wgsl's schedule (tuning clamped to the adapter); wg 0: it cannot run here.
  struct DecodeSgShape {
    uint32_t wg, tpk, u;
    bool pf;
  };
  DecodeSgShape decode_sg_shape(int head_dim, int G) const;
  // The split-K pass of attention_decode: partials (made here), or with one split at a fixed
  // position and an output given, the output itself. Returns the number of splits.
  uint32_t attention_decode_pass(Batch& b, const KvLayer& cache, const Tensor& q, const Tensor* out,
                                 const AttentionArgs& a, Tensor& partials) const;
  void quant_act(Batch& b, const Tensor& x, const Tensor& w, const Q8Act& out, int n_tokens, int64_t x_stride,
                 int64_t x_offset, uint32_t mode, int64_t up_offset, float eps, const std::string& op,
                 uint32_t fixed_wg = 0) const;
  // matvec_q8.wgsl's ROPE epilogue: rope_kv_append's table, cache and arguments.
  struct RopeKv {
    const RopeTable* table;
    const KvLayer* cache;
    const RopeKvArgs* args;
    int64_t row0;  // the weight's first row among the q, k and v rows
  };
  // linear_batched_q8.wgsl; with rope, its ROPE epilogue (prm then holds the ROPE fields).
  void linear_batched_q8_kernel(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& y, int n_tokens,
                                const Params& prm, const Tensor& bias, int64_t rows,
                                const RopeKv* rope = nullptr) const;
  // linear_batched_q8_mv.wgsl (steps of at most tuning.batched_mv_n tokens): the kernel above's
  // bits, with its bindings and parameters (the ROPE fields included).
  void linear_batched_q8_mv(Batch& b, const GpuWeight& w, int n_tokens, int64_t rows, bool rope, std::vector<Arg> args,
                            const Params& prm) const;
  // The one-token matvec_q8 schedule from tuning for weight w, checked: group_rows rows per group
  // (0: tuning.mvq_rows), or wg_rows rows per workgroup (SWIGLU); tpr invocations per group (0:
  // tuning.mvq_tpr); pf units per row loaded ahead (tuning.mvq_pf within a register budget); cols
  // w's columns built into the kernel.
  struct MatvecQ8Shape {
    uint32_t wg, tpr, rows, unroll, pf, cols;
  };
  MatvecQ8Shape matvec_q8_shape(const std::string& op, const GpuWeight& w, uint32_t group_rows = 0,
                                uint32_t wg_rows = 0, uint32_t tpr = 0) const;
  // matvec_q8.wgsl for one token, plain or SWIGLU: bindings 2 and 3 are x's quants and scales, or
  // with norm_x the f32 x and the norm weight (q8_act_norm.wgsl).
  void matvec_q8(Batch& b, const GpuWeight& w, const Tensor& x2, const Tensor& x3, float eps, bool norm_x,
                 const Tensor& y, const LinearOptions& o, const std::string& op, const RopeKv* rope = nullptr) const;
  void swiglu_matvec_q8(Batch& b, const GpuWeight& w, const Tensor& x2, const Tensor& x3, float eps, bool norm_x,
                        const Q8Act& out, const std::string& op) const;
  void check_norm_q8(const Tensor& x, const Tensor& norm_w, int64_t cols, const std::string& op) const;
  // paged_attention's first pass: the plan's partials (decode and prefill rows).
  void paged_attention_partials(Batch& b, const KvLayer& cache, const Tensor& q, const PagedAttentionPlan& plan,
                                const std::string& op) const;
  void select_pass(Batch& b, const Tensor& vals, const Tensor& ids, bool have_ids, int64_t count, int k, int rows,
                   int64_t in_stride, int64_t out_stride, const Tensor& out_v, const Tensor& out_i) const;
  // Selection passes (k best per CH entries) until each row's candidates fit one workgroup: what
  // the last pass reads (the logits themselves when they already fit).
  struct SelectCandidates {
    Tensor vals, ids;
    bool have_ids = false;  // ids from `ids` (else each candidate's index)
    int64_t count = 0;      // per row
  };
  SelectCandidates select_candidates(Batch& b, const Tensor& logits, int rows, int64_t n, int k) const;

  Context ctx_;
  LlmCaps caps_;
  bool subgroups_ = false;  // caps_.subgroups
  uint32_t sg_size_ = 0;
  uint32_t max_wg_ = 256;
  Tensor dummy_;
  mutable std::unordered_map<std::string, Kernel> kernels_;
};

}  // namespace wgc::llm
