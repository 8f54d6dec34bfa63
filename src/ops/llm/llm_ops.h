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
#include "ops/llm/decode_layer.h"
#include "ops/llm/linear_version.h"
#include "ops/llm/weights.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wgc::llm {

// ---- RoPE tables ---------------------------------------------------------------------------
// (cos, sin) of angle = f32(pos) * f32(inv_freq[i]) (an f32 product, as transformers), for
// pos < max_pos: tensor [max_pos][inv_freq.size()] of vec2<f32>. inv_freq: the model's
// frequencies (ModelConfig::rope_inv_freq(), with its scaling), at most head_dim / 2 of them.
struct RopeTable {
  Tensor cos_sin;
  int head_dim = 0, max_pos = 0;
};
RopeTable make_rope_table(const Context& ctx, std::span<const double> inv_freq, int head_dim, int max_pos);

// ---- KV cache ------------------------------------------------------------------------------
// One layer's cache: k and v f32 tensors holding [n_kv_heads][max_ctx][head_dim] starting at
// element `offset` (so several layers may share one tensor: offset = layer * n_kv*max_ctx*hd;
// offset must be a multiple of 4). Position p of kv head h is at offset + (h*max_ctx + p)*hd.
struct KvLayer {
  Tensor k, v;
  int n_kv_heads = 0, max_ctx = 0, head_dim = 0;
  uint32_t offset = 0;
};
// A cache for n_layers layers (one tensor each for K and V); layer(i) views layer i.
struct KvCache {
  Tensor k, v;
  int n_layers = 0, n_kv_heads = 0, max_ctx = 0, head_dim = 0;
  KvLayer layer(int i) const;
};
KvCache make_kv_cache(const Context& ctx, int n_layers, int n_kv_heads, int max_ctx, int head_dim);

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
// The most bytes of partial results a split prefill attention takes (attn_pf_split).
inline constexpr uint64_t kMaxPrefillPartialBytes = uint64_t(256) << 20;

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
  int splits = 0;                       // decode: splits over the sequence (0: pick; at most kMaxDecodeSplits)
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

// A kernel version, for tests and benchmarks.
struct KernelVersion {
  std::string op, version, note;
};

// Tuning knobs of the fast kernels (override constants); the defaults suit the H200 and work
// everywhere. Changing them after kernels were used compiles new pipelines on next use.
struct LlmTuning {
  uint32_t matvec_wg = 256;  // invocations per matvec workgroup (rows per workgroup = wg / tpr)
  uint32_t matvec_tpr = 32;  // invocations per row (a power of two)
  // Weight loads in flight per invocation. H200: 4 beat 2 by 1% (8B F16 tg); session 8, with the
  // combine and output norm folded: 8 gained 1.8% on 1B F16 (978.7 vs 960-963 t/s) and lost 1.2%
  // on 8B F16 (201.0 vs 203.4).
  uint32_t matvec_unroll = 4;
  // The one-token f32-activation matvecs (plain, QKV + RoPE, gate|up + SwiGLU) of fewer than
  // matvec_few_groups workgroups (0: none) take matvec_few_unroll (1..8) instead of matvec_unroll
  // / swiglu_unroll: more loads in flight per invocation where the grid does not fill the GPU.
  // H200, session 9 run B (docs/benchmarks.md): 256 (the 1B model's o and down projections, 128
  // workgroups on 132 SMs, and its QKV, 192; no 8B matvec has fewer than 256) took 1B F16 tg128
  // from 956-957 to 971.2 t/s (160, o and down only: 967.3; 600, gate|up too: 972.6; unroll 8
  // everywhere: 971.0) and leaves the 8B step's kernels as they were (300, its o projection too,
  // lost: 201.4 vs 202.2-202.5).
  uint32_t matvec_few_groups = 256;
  uint32_t matvec_few_unroll = 8;
  uint32_t matvec_rows = 2;  // rows per group of matvec_tpr invocations (1..8), sharing x loads
  // One token through a gate|up weight with f32 activations: 1 runs gate|up and SwiGLU as one
  // matvec dispatch (linear_swiglu), 0 as two (for A/B measurements).
  uint32_t matvec_swiglu = 1;
  // One-token steps with f32 activations on GPUs: 1 RMS-normalises x inside the matvecs that read
  // it (rms_norm_linear, rms_norm_swiglu), 0 in an rms_norm pass before them (one more dispatch).
  // H200 (docs/benchmarks.md): with matvec_rope, 8B F16 tg 165 -> 180.5 t/s, 1B F16 662 -> 780.
  uint32_t matvec_norm = 1;
  // One-token steps with f32 activations (needs matvec_norm): 1 does RoPE and the KV-cache append
  // in the QKV matvec's epilogue (rms_norm_qkv_rope), 0 in a rope_kv_append pass after it (H200,
  // 8B F16 tg: 180.5 vs 178.2 t/s).
  uint32_t matvec_rope = 1;
  // The matvec's x: 0 read from global memory (L1) by every row group; 1 staged whole in workgroup
  // memory once per workgroup where x is RMS-normalised in the matvec (matvec_norm); 2 wherever it
  // fits (F32/F16/BF16 weights; an 8B model's 14336-column down projection does not). H200: 2
  // beat 1 by 0.6% (8B F16 tg) and 7.8% (1B F16 tg: 841 vs 780 t/s); 0 lost 1% on 8B.
  uint32_t matvec_xs = 2;
  // The gate|up + SwiGLU matvec's invocations per row and unroll (0: matvec_tpr, matvec_unroll):
  // its workgroups take 64 rows whatever the plain matvec's rows per group.
  uint32_t swiglu_tpr = 0;
  uint32_t swiglu_unroll = 0;
  // Its gate and up rows per workgroup (a power of two up to 64; half of them gate rows): fewer
  // mean more workgroups (an 8B model's 14,336-row ffn: 448 at 64). H200 (docs/benchmarks.md,
  // with matvec_pf 4 and matvec_late): 32 beat 64 by 1.1% (8B F16 tg128 196.2 vs 194.1 t/s) and
  // 3.2% (1B F16 910.3 vs 882.5).
  uint32_t swiglu_wg_rows = 32;
  // The f32-activation matvecs: each invocation's first matvec_pf unrolled steps of weights
  // (0..matvec_unroll, at most matvec_pf_loads vec4 loads per invocation with the rows per group:
  // at 8, the SwiGLU kernel's 4 rows per group take 2) are loaded before x is prepared (RMS norm,
  // staging), so that they are in flight meanwhile. The same sums in the same order.
  uint32_t matvec_pf = 4;
  // 1..16. H200, session 8: 16 with matvec_unroll 8 and matvec_pf 8 lost (8B F16 tg128 200.7 t/s,
  // 1B 950.1, against 201.0 and 978.7 with 8).
  uint32_t matvec_pf_loads = 8;
  // 1: the matvecs that RMS-normalise x (matvec_norm) and stage it whole (matvec_xs) stage x * w
  // before the sum of squares is known and scale each row's sum by 1 / rms after the dot
  // products (mvq_late's idea: one read of x, no reduction before the weights are used); 0:
  // normalise first. H200: matvec_pf 4 with matvec_late took 8B F16 tg128 from 190.1 to 194.1 t/s,
  // 1B F16 from 872.6 to 882.5.
  uint32_t matvec_late = 1;
  // 1: each weight's column count built into its one-token matvec kernel (a kernel per width:
  // the loops' trip counts known to the compiler, as mvq_static), 0: read from the parameters.
  // H200 (with matvec_pf 4, matvec_late): 8B F16 194.1 -> 195.3 t/s, 1B F16 882.5 -> 894.0.
  uint32_t matvec_static = 1;
  // One-token linear() matvecs (o and down projections, the output) with F16/BF16/F32 weights of
  // at least matvec_split_cols columns: their columns split into matvec_split ranges of whole
  // chunks (each range's workgroups write partial sums, a second pass adds the ranges in order):
  // matvec_split times the workgroups for weights of few rows (an 8B model's down projection: 256
  // workgroups of 16 rows over 14,336 columns), x staged per range where whole rows do not fit.
  // 1: no split. The sums' order follows the split; one shape and tuning always sums alike.
  // H200 (with matvec_pf 4, matvec_late): 4 ranges took 8B F16 tg128 from 194.1 to 196.8 t/s
  // (2 ranges: 191.2); the 1B model's 8,192-column down projection lost (882.5 -> 871.1 at 4,
  // 863.4 at 2: the second pass's dispatch costs more than the workgroups gain), hence 12,288.
  // (Where matvec_kx takes a matvec, nothing is split: by default an 8B model's down projection.)
  uint32_t matvec_split = 4;
  uint32_t matvec_split_cols = 12288;
  // With matvec_split: only weights whose unsplit matvec has fewer workgroups than this are split
  // (0: any), so that a lower matvec_split_cols can reach the o projection (an 8B model's 4,096
  // columns: 256 workgroups) without splitting the output projection (8,016). H200, session 8:
  // splitting the o projections in 4 lost (8B F16 tg128 204.2 -> 199.0 t/s, 1B 959.4 -> 916.3 with
  // the down projections too).
  uint32_t matvec_split_groups = 0;
  // One-token steps with f32 activations on GPUs: 1 folds the decode attention's combine pass into
  // the o projection (combine_linear: each workgroup merges the flash-decoding partials into its
  // staged x, one dispatch instead of two per layer), 0 runs attn_combine.wgsl before it.
  // matvec_out_norm 1: x RMS-normalised inside the output projection (rms_norm_linear, late
  // scale: no copy, no rms_norm pass), 0 in an rms_norm pass. H200 (docs/benchmarks.md, session
  // 8): 1B F16 tg128 923.9 -> 947.3 t/s with the combine folded, 930.5 with the norm, 959.4 with
  // both; 8B F16 202.3 -> 203.4, 202.8, 204.2. matvec_combine 2 (folded): where there are at
  // least combine_prefix_splits splits, only those that hold keys are weighed and added (a
  // recorded step's splits cover the whole cache; loops with a run-time trip count), else all of
  // them in unrolled loops, as 1 does everywhere. H200, session 10 (docs/benchmarks.md): at 16
  // splits (a 512-position cache, 4 keyed) the keyed splits only took 8B F16 tg128 from 199.2 to
  // 202.5 t/s, 1B F16 from 935.3 to 957.8; at 4 splits (a 128-position cache) they lost 0.6%
  // (8B 203.2 vs 204.4), hence 8 (between the two, not measured there).
  uint32_t matvec_combine = 2;
  uint32_t combine_prefix_splits = 8;
  uint32_t matvec_out_norm = 1;
  // Rows per row group of the QKV + RoPE matvec (rms_norm_qkv_rope): 2 (one RoPE pair), 4 or 8
  // (consecutive pairs: each x load serves more rows, fewer workgroups). H200, session 8: 4 lost
  // (8B F16 tg128 201.6 vs 203.4 t/s, 1B 913.2 vs 960-963).
  uint32_t matvec_rope_rows = 2;
  // The "kx" schedule of the one-token float-weight matvecs (matvec_kx.wgsl: the columns split
  // across the workgroup, each invocation's share of x in registers, tiles of kx_rows rows reduced
  // by a transposed subgroup butterfly), a bit per kind: 1 the gate|up + SwiGLU matvec, 2 the
  // plain ones (linear, rms_norm_linear, combine_linear: never split then), 4 QKV + RoPE; 0:
  // matvec.wgsl everywhere. Runs where the version is Subgroup, the weight has at least kx_cols
  // columns, the matvec at least kx_min_rows rows, and each invocation takes at most 8 chunks.
  // H200 (docs/benchmarks.md, sessions 12 and 13): with 8-row tiles of 256 invocations (512 from
  // kx_wide_cols) it beats matvec.wgsl on every 8B shape (8 chained links, us each: down 4096 x
  // 14336 32.0 against 37.6 with session 9's 16-row tiles of 256, gate|up + SwiGLU + norm 57.0
  // against 60.7, QKV 6144 x 4096 15.5 against 18.0, o 11.8 against 12.9); on a 1B model only
  // with its workgroups looping over tiles (kx_groups 264: 1B F16 tg128 1043.6 / 1040.5 against
  // 978.9 t/s on matvec.wgsl; a tile per workgroup, every kind through kx: 840 against 978).
  uint32_t matvec_kx = 7;
  // Only weights of at least kx_cols columns, matvecs of at least kx_min_rows rows (0: every one;
  // session 12's 4096 / 4096 kept a 1B model on matvec.wgsl: 978.9 t/s, against 992.5 / 986.5
  // with every matvec through kx, both at kx_groups 132).
  uint32_t kx_cols = 0;
  uint32_t kx_min_rows = 0;
  // Invocations per workgroup (a power of two, a multiple of the subgroup size), and from
  // kx_wide_cols columns kx_wide_wg (0: kx_wg everywhere). H200, 8 chained links, us each: 256
  // invocations (28 loads a pass) QKV + RoPE + norm 18.6 against 19.5 at 512, gate|up + SwiGLU +
  // norm 55.6 against 56.4; the down projection (14,336 columns) 32.0 at 512 against 33.0 at 256.
  uint32_t kx_wg = 256;
  uint32_t kx_wide_wg = 512;
  uint32_t kx_wide_cols = 12288;
  // Rows per tile (a power of two, 2..32). H200, 8B shapes, 512 invocations: 8 beat 16 by 15-30%
  // (more, smaller workgroups: 512 for the down projection); 4 ties 8 on the plain ones and
  // loses 42% on gate|up + SwiGLU (8B F16 tg128 208.4 against 212.9 with the down projection alone).
  uint32_t kx_rows = 8;
  // Weight vec4s each invocation loads per pass (rows per pass: this / its chunks, a power of
  // two). H200, down projection at 256 invocations and 8 rows: 28 (4 rows a pass) 32.9 us
  // against 33.2 at 16; 8B F16 tg128 217.8 against 217.0 t/s with 256 invocations and 28 loads
  // everywhere rather than 512 and 16.
  uint32_t kx_loads = 28;
  // At most this many workgroups, each looping over tiles (0: a tile each): a multiple of the
  // GPU's multiprocessors, so that each holds as many (the H200 has 132; WebGPU does not tell an
  // adapter's count: on another GPU set its own). H200, 8B F16 tg128 (session 13): 132 233.99 /
  // 234.16 / 234.45, 264 233.01-233.11, 198 227.30, 330 220.06, 396 222.26, 528 225.56, 660 224.74,
  // a tile each 220.37 t/s; 1B F16 (every matvec through kx) 264 1043.6, 132 992.5 / 986.5.
  uint32_t kx_groups = 264;
  // Where a matvec's invocations take fewer weight chunks of a row than this (a narrow weight: a
  // 1B model's 2,048 columns are one chunk each for 256 invocations, an 8B model's 4,096 two),
  // kx_groups times kx_groups_cpl / chunks workgroups, so that each multiprocessor has as many
  // weight bytes in flight; 0: kx_groups everywhere. H200 (session 14): 1B F16 tg128 1068.0 /
  // 1069.0 t/s against 1048.9 / 1043.6 at 0 (528 workgroups everywhere: 1067.5; 660: 1037.4;
  // kx_groups_cpl 3: 1058.8); the 8B's matvecs take 2 chunks or more (unchanged: 235.37 / 235.36).
  uint32_t kx_groups_cpl = 2;
  // 1: each pass's loads issued before the pass before is summed (twice the registers). H200, with
  // kx_wg 512 and kx_loads 8: down 47.5 us, every other shape slower; 8B F16 tg128 203.2 t/s
  // (down only) against 204.7 with the defaults (session 9); session 12, 256 x 16 rows: 38.0
  // against 37.6 us.
  uint32_t kx_db = 0;
  // 1: where x is RMS-normalised (late scale), the norm's reduction right after x is loaded, while
  // the first pass's weights are in flight, not after the first tile's dot products (a one-tile
  // workgroup then pays it after its last loads). H200 (session 13): 8B F16 tg128 220.83 / 220.90
  // against 218.49 / 218.47 t/s; QKV + RoPE + norm 17.7 against 18.5 us a link, gate|up +
  // SwiGLU + norm 55.8 against 56.3.
  uint32_t kx_early = 1;
  // 1: each tile's epilogue loads (RoPE's (cos, sin), bias, the y it adds to) issued with the
  // tile's first weights rather than after its sums (0). H200, 8B F16 tg128 (session 13, a tile
  // per workgroup): 220.49 / 220.33 / 220.42 against 219.94 / 219.86 t/s; at kx_groups 264
  // 233.01 against 231.98.
  uint32_t kx_epi = 1;
  // Register-tiled matmul (prefill): tokens (BM, a multiple of 8) x weight rows (BN, a multiple
  // of 8) per workgroup, (BM / 8) * (BN / 8) invocations of 8x8 outputs; k step BK (a multiple of
  // 4). 64 x 128 x 8: an 8B model's 4096-row projections at 512 tokens give 256 workgroups; on
  // the H200 BK 8 beat 16 by 18% with the prefetch (8B F16 pp512 1,466 vs 1,248 t/s).
  uint32_t matmul_bm = 64;
  uint32_t matmul_bn = 128;
  uint32_t matmul_bk = 8;
  // 1: the tile sizes as constants in the kernel's source; 0: as override constants (what ran at
  // 2.1 TFLOP/s on the H200; kept for A/B runs).
  uint32_t matmul_const = 1;
  // 1: each invocation loads its share of the next tile into registers before this tile's math.
  uint32_t matmul_prefetch = 1;
  // 1: two workgroup-memory buffers per tile (the next tile goes into the other one after this
  // tile's math: one barrier per k step instead of two; twice the workgroup memory; implies the
  // prefetch), as the SGEMM's vec4-db rung. H200, 8B F16 pp512: no gain (1,557 vs 1,561 t/s; with
  // matmul_tn 4 1,927 vs 1,988), and a k step of 16 with it lost a third (1,066).
  uint32_t matmul_db = 0;
  // Weight rows per invocation of the register tile: 8 (8 x 8 outputs) or 4 (8 x 4: twice the
  // invocations per tile, for products whose tiles do not fill the GPU: an 8B model's 4096-row
  // projections at 512 tokens give 256 workgroups of 128 invocations). H200, 8B F16 pp512: 4 beat 8
  // by 27% (1,988 vs 1,561 t/s).
  uint32_t matmul_tn = 4;
  // The version LinearVersion::Auto runs for n_tokens > 1 (Auto: choose_linear's pick by shape).
  LinearVersion matmul = LinearVersion::Auto;
  // Batched kernel: lanes per row group (a power of two, <= 32; fixes the summation order, so
  // results change with it), invocations per workgroup (0: the largest of 256/128/64 that still
  // gives batched_min_groups workgroups), and that target. 8 lanes, auto: with 8-token tiles
  // the fastest tried on the H200 (16 or 32 lanes beat it with 16-token tiles at 16 sequences,
  // not at 64; docs/serving.md has the sweep).
  uint32_t batched_kl = 8;
  uint32_t batched_wg = 0;
  uint32_t batched_min_groups = 264;
  // Most tokens per batched workgroup (a power of two <= 32; fewer tokens take the next power
  // of two), in steps of at most 256 tokens and in larger ones (prefill): each weight chunk a
  // lane loads serves that many tokens, each token costs 4 sums in registers. Never changes a
  // result. On the H200 (8B Q4_0, batched-q8, docs/serving.md) 8 beat 16 by 16-17% in decode
  // steps of 16 and 64 tokens (twice the workgroups, half the registers) and 32 lost; in
  // 512-token prefill steps 16 beat 8 by 12%.
  uint32_t batched_tt = 8;
  uint32_t batched_tt_large = 16;
  // batched-q8: steps of at most batched_small_n tokens give each row group batched_small_tr rows
  // (1, 2 or 4; larger steps 4): more workgroups for small batches. Never changes a result.
  uint32_t batched_small_n = 1;
  uint32_t batched_small_tr = 1;
  // The serving engine with batched-q8: 1 quantizes activations in RMSNorm and SwiGLU (one
  // dispatch each, read by every linear of the layer), 0 before each linear (for A/B runs).
  uint32_t batched_fuse = 1;
  // batched-q8: token groups of batched_tt tokens per workgroup (each with its own invocations,
  // the weight rows read once through the cache for all of them; fewer when the step, the
  // workgroup size or its memory do not allow), and the x tile in elements (0: 1024; a multiple
  // of 32 * batched_kl; smaller tiles leave room for more token groups). Never change a result.
  uint32_t batched_tg = 1;
  uint32_t batched_xt = 0;
  // Paged attention's decode rows (one token of a sequence): invocations per query row (0: the
  // most up to 32 the head and the workgroup allow, 32 for head_dim 128; 8: the prefill rows'), and
  // 1: they load the next block of keys and values into registers while they compute the current
  // one (where it fits: head_dim <= query heads per KV head, to a power of two, x invocations per
  // row). More threads and loads in flight with the same arithmetic: never changes a result.
  uint32_t paged_decode_tpq = 0;
  uint32_t paged_decode_pf = 1;
  // Paged attention: 1 pads each row of keys (and queries) in workgroup memory by a vec4, so the
  // invocations computing a block's scores, each reading another key's row, hit distinct banks
  // (unpadded, rows 512 bytes apart all start in one bank); 0 unpadded. Never changes a result.
  // H200, 8B Q4_0 serving engine: 64 streams 2,608 t/s padded, 2,368 unpadded; one stream 272.9
  // and 268.2.
  uint32_t paged_kpad = 1;
  // batched-q8: each lane loads its next weight block before it multiplies the current one
  // (measured on the H200: within 3% of off at 16-64 sequences, faster at 1).
  bool batched_prefetch = true;
  // batched-q8: blocks each lane loads before it multiplies them (in order; > 1 replaces the
  // prefetch: that many loads in flight per lane, more registers), in steps of more than
  // batched_small_n tokens and in smaller ones. 1, 2 or 4; never changes a result.
  uint32_t batched_unroll = 1;
  uint32_t batched_small_unroll = 1;
  // batched-q8: the x tile in steps of at most batched_small_n tokens (0: batched_xt). A tile of
  // a whole row (e.g. 16384) leaves one pass, two barriers and no wait for x between weight loads.
  uint32_t batched_small_xt = 0;
  // batched-q8: 1 turns the integer block sums into floats with an integer add and a float
  // subtract (the Q4_0 offset folded into the add), 0 with a conversion (a quarter-rate
  // instruction on NVIDIA GPUs). The same values (exact integers below 2^22).
  uint32_t batched_i2f = 0;
  // batched-q8: steps of at most batched_mv_n tokens (<= 8; 0: none) run linear_batched_q8_mv.wgsl,
  // the same bits shaped like a matvec: batched_mv_sl invocations per lane of batched_kl (a row
  // group of kl * sl), each loading up to batched_mv_un blocks of a chunk at once (no more than a
  // row has), batched_mv_tr rows per row group (1, 2 or 4; RoPE: at least 2), batched_mv_wg
  // invocations per workgroup (fewer where workgroup memory needs it: (1 + tokens) x rows x kl x
  // sl x un floats per row group). H200, 8B Q4_0 serving engine, one stream (docs/benchmarks.md,
  // session 7): 272.9 t/s with sl 4, 241.3 without the kernel (batched_mv_n 0), 278.1 with sl 8;
  // un 8 257.3, tr 2 269.5, wg 128 262.8.
  uint32_t batched_mv_n = 4;
  uint32_t batched_mv_sl = 8;
  uint32_t batched_mv_un = 4;
  uint32_t batched_mv_tr = 1;
  uint32_t batched_mv_wg = 256;
  // Paged attention in the serving engine's fused batched-q8 path: 1 combines the splits and
  // quantizes the result for the o projection in one dispatch (paged_attention_q8), 0 in two
  // (paged_attention, quantize_q8). The same bits.
  uint32_t paged_combine_q8 = 1;
  // The serving engine's fused batched-q8 path: 1 does RoPE and the KV-cache append in the QKV
  // linear's epilogue (linear_batched_q8_rope: row groups of whole RoPE pairs, at least 2 rows),
  // 0 in a rope_kv_append pass after it. The same results.
  uint32_t batched_rope = 1;
  // 8-bit-activation matvec (matvec_q8.wgsl, one token): invocations per workgroup and per row
  // group (a power of two), rows per group (1..8). The fused gate|up + SwiGLU variant keeps wg and
  // tpr and takes the rows that make 64 per workgroup.
  // Measured on the H200 (8B Q4_0 tg128, docs/benchmarks.md): rows 1 beat 2 by 7.5% and 4 lost
  // 13% (twice the workgroups for the o and down projections); the RoPE and SwiGLU variants fix
  // their own rows.
  uint32_t mvq_wg = 256;
  uint32_t mvq_tpr = 32;
  uint32_t mvq_rows = 1;
  // Units (blocks of 32, or a K-quant's group) per lane per step of the matvec's loop (1..8):
  // that many units' loads the compiler can have in flight per row. On the H200 2 beat 1 by 5.6%
  // (8B Q4_0 tg128; 4 the same as 2).
  uint32_t mvq_unroll = 2;
  // One-token steps: 1 RMS-normalises and quantizes x inside the matvecs that read it
  // (rms_norm_linear_q8, rms_norm_swiglu_q8: each workgroup redoes it into its workgroup memory),
  // 0 in a quant_act pass before them (rms_norm_q8: one more dispatch and barrier each). On the
  // H200 1 gained 8.5% (8B Q4_0 tg128, 326 -> 354 t/s).
  uint32_t mvq_norm = 1;
  // One-token steps: 1 does RoPE and the KV-cache append in the QKV matvec's epilogue
  // (rms_norm_qkv_rope_q8; needs mvq_norm), 0 in a rope_kv_append pass after it (H200, 8B
  // Q4_0: 1 gained 3%).
  uint32_t mvq_rope = 1;
  // mvq_late (one-token steps with the norm fused, mvq_norm): 1 quantizes x * w per block before
  // the sum of squares is known and scales each row's sum by 1 / rms after the dot products
  // (q8_act_norm.wgsl's LATE: one read of x, two barriers with subgroups), 0 normalises first
  // (two reads, more barriers). mvq_pf: units per row of each invocation's
  // first step that matvec_q8 loads before preparing x (0.. mvq_unroll, within a register
  // budget), so the weights are in flight during the prologue. mvq_static: 1 builds each weight's
  // column count into its matvec_q8 kernel (a kernel per width; the unit loops' trip counts known
  // to the compiler), 0 reads it from the parameters. H200 (docs/benchmarks.md, run 2 of session
  // 6): the three with mvq_sw_tpr 8 took 8B Q4_0 tg128 from 435 to 463.9 t/s (mvq_sw_tpr 8 alone:
  // 425.7), 8B Q8_0 from 318 to 329.7 (with mvq_stage), 1B Q4_0 from 1,294 to 1,421 (with mvq_stage).
  uint32_t mvq_late = 1;
  uint32_t mvq_pf = 2;
  uint32_t mvq_static = 1;
  // Invocations per row group of the fused gate|up + SwiGLU matvec (0: mvq_tpr); its rows per
  // group follow (64 rows per workgroup: 8 at 32 invocations, 2 at 8 with 256-invocation
  // workgroups). H200, 8B Q4_K tg128: 8 gave 312.7 t/s, 16 294.1, 32 (the old default) 255.8.
  uint32_t mvq_sw_tpr = 8;
  // The same for Q4_K and Q6_K weights (0: mvq_sw_tpr), and their mvq_pf (0: mvq_pf). H200, 8B
  // Q4_K_M tg128 (repacked K-quants, session 8 run B, mvq_kq_plain 0): sw_tpr 16 with pf 1 424.8
  // t/s, 16 with pf 2 415.0, 8 with pf 2 419.2, 32 with pf 2 403.1.
  uint32_t mvq_kq_sw_tpr = 16;
  uint32_t mvq_kq_pf = 1;
  // Rows per group of the 8-bit matvecs with 32768 rows and more (output projections: each x load
  // serves that many rows; 0: mvq_rows). H200, 8B Q8_0: 2 the same as 1 (329.6 vs 329.7 t/s).
  uint32_t mvq_vocab_rows = 0;
  // Invocations per row group of those (0: mvq_tpr): an 8B model's 4096 columns are 64 K-quant
  // units, two per lane at 32. H200, 8B Q4_K with the other session-7 knobs on: 8 the same.
  uint32_t mvq_vocab_tpr = 0;
  // Invocations per row group of the fused QKV + RoPE matvec (0: mvq_tpr; its groups take one
  // RoPE pair): a Q4_K_M model's 1,024-row Q6_K value part is 64 workgroups at 32. H200, 8B Q4_K
  // with the other session-7 knobs on: 64 the same (+1%).
  uint32_t mvq_rope_tpr = 0;
  // 1: matvecs whose x was quantized before (o and down projections, the output) copy it into
  // workgroup memory first (q8_act_stage.wgsl), 0: read it through the cache, 2: copy it for
  // Q4_K and Q6_K weights only. H200, 8B Q4_0: 1 lost 2% (454.4 vs 463.9 t/s); 8B Q4_K: 2 lost
  // 11% (201.0 vs 227.1 t/s, with late, pf, mvq_swz and the smaller units).
  uint32_t mvq_stage = 0;
  // 1: x's workgroup copy (the fused norm's, mvq_stage's) swizzled per weight type
  // (q8_act.wgsl's x_slot), so that the lanes of a row read its vec4s without bank conflicts
  // (a K-quant unit's 64 bytes of x put four lanes of a quarter warp on the same banks, Q4_0's 32
  // two); 0: in quant_act's layout. The same results. H200, 8B Q4_0 tg128: 1 lost 0.4% (470.7
  // vs 472.4-473.5 t/s); 8B Q4_K: no gain in any set (docs/benchmarks.md, session 7).
  uint32_t mvq_swz = 0;
  // 1: the Q4_K matvec's unit is one 32-element sub-block (q8dot/q4_k.wgsl's MV_HALF: one nibble
  // vec4, Q4_0's unit, twice the units per row), 0: two (two vec4s and one scale word per unit).
  // The same sums in another order. Before the repacked layout (session 7, the GGUF blocks with
  // half a 64-element group as the unit): 255.4 vs 325.7 t/s.
  uint32_t mvq_q4k_half = 0;
  // 1: the Q6_K matvec's unit is one 32-element sub-block (q8dot/q6_k.wgsl's MV_HALF), 0: two.
  // The same sums in another order. Before the repacked layout (session 7, the GGUF layout's
  // units): 227.1 vs 225.8 t/s with late and pf.
  uint32_t mvq_q6k_half = 0;
  // Rows per group of the plain 8-bit matvecs (o, down) with Q4_K or Q6_K weights (0: mvq_rows):
  // each x load serves that many rows. Not measured yet.
  uint32_t mvq_kq_rows = 0;
  // 1: Q4_K and Q6_K weights run the matvec without mvq_late, mvq_pf, mvq_static and mvq_stage, 2:
  // without mvq_pf, mvq_static and mvq_stage, 0: every type the same knobs (in a Q4_K_M model
  // every matvec is a K-quant one, so the global knobs measure the K-quant paths alone). With the
  // GGUF layout 2 won (session 7: 331.0 t/s, 1 325.7, 0 220.5); with the repacked one (session 8
  // run A, H200, 8B Q4_K_M tg128) 0 417.2, 2 412.7, 1 397.2.
  uint32_t mvq_kq_plain = 0;
  // The decode combines (attn_combine_q8.wgsl, attention_decode_q8; attn_combine.wgsl,
  // attention_decode: halved there until a head's workgroup fits): invocations per output
  // element, each merging every combine_sp-th split (1 adds the splits in merge_splits' order).
  // H200, 8B Q4_0 tg128 at depth 0: 4 and 8 within 0.5% of 1 (4 the best).
  uint32_t combine_sp = 4;
  // 8-bit-activation matmul (matmul_q8.wgsl, prefill): tokens (BM) x weight rows (BN) per
  // workgroup, multiples of 8, (BM / 8) * (BN / 8) invocations of 8 x 8 outputs.
  uint32_t mmq_bm = 64;
  uint32_t mmq_bn = 128;
  // Below this many workgroups a product takes smaller tiles (rows halved to 32, then tokens to
  // 16; 0: never). 264 (two per SM on the H200) with mmq_units 2: 1B Q4_0 pp512 17,851 t/s.
  uint32_t mmq_min_groups = 264;
  // Units (q8dot/*.wgsl: a block of 32 or 64 elements) per workgroup-memory step: more
  // means fewer barriers, more registers (halved until it divides a row's units and the step's
  // workgroup memory fits). H200, 8B Q4_0 pp512: 1 2,623 t/s, 2 3,715, 4 3,164.
  uint32_t mmq_units = 2;
  // 1: the int32 sums start at 1.5 * 2^23 as float bits and are read with one subtract; 0: from
  // zero, with an integer add before it (the same results; 2,623 vs 2,620 t/s, within noise).
  uint32_t mmq_magic = 1;
  // quant_act.wgsl: invocations per token (a power of two >= 8; one token gets up to 4x this).
  uint32_t quant_wg = 256;
  // quant_act.wgsl in steps of fewer tokens than this: each token's row split between up to
  // quant_groups / tokens workgroups of quant_wg (each redoing RMSNorm's sum of squares in the
  // same order: the same bits). 0: one workgroup per token. With paged_combine_q8 and
  // batched_rope (294 dispatches a step instead of 358), H200, 8B Q4_0 serving engine: one
  // stream 211 -> 238 t/s, 32 streams 1,992 -> 2,087, 64 2,368 -> 2,393 (docs/benchmarks.md);
  // 1024 instead of 64 (64-token steps split too, up to 14 workgroups a row): 64 streams 2,608 ->
  // 2,688 t/s, one stream 272.9 -> 274.6 (256: 2,678).
  uint32_t quant_groups = 1024;
  // Prefill attention: 0 flash_attn.wgsl (16 rows per workgroup, a score per invocation), 1 the
  // register-tiled flash_attn_tiled.wgsl (64 rows x 64 keys per workgroup, 4 x 4 scores per
  // invocation; where head_dim <= 256 and the adapter has 32 KiB of workgroup memory), 2
  // flash_attn_tiled_pf.wgsl (1's 4 x 4 schedule with each staged chunk loaded into registers
  // while the previous one is computed; attn_pf_split applies, attn_pf_rows, attn_pf_dc and
  // attn_pf_swz do not: chunks of 16 vec4s (two staging units per invocation, half the Q/K
  // barriers) took 1.712 ms instead of 1.544 with attn_pf_sg=1, and were removed).
  // H200, 8B Q4_0 (512 tokens after 4,096 cached, per layer): 1 1.873 ms, 2 1.478 ms with
  // attn_pf_sg=1 (1.664 without); pp512 @ d4096 3,055 -> 3,283 t/s (docs/benchmarks.md).
  uint32_t attn_prefill = 2;
  // attn_prefill 2: 1 scores left unscaled and exp2(s * scale * log2(e) - m * ...) (one FMA
  // before ex2), 0 Q scaled as staged and exp (1.767 ms vs 1.664; with attn_pf_sg 1.584 vs 1.478).
  uint32_t attn_pf_exp2 = 1;
  // attn_prefill 2: 1 a row's 16 invocations in consecutive lanes, a block's row max by subgroup
  // shuffles (no barriers where subgroups have 16 lanes or more; the same bits), where the
  // adapter has subgroups; 0 through workgroup memory (1.478 ms vs 1.664).
  uint32_t attn_pf_sg = 1;
  // attn_prefill 2: 0 each chunk loaded just before it is staged (the prefetch off, to measure
  // it: 2.002 ms vs 1.664).
  uint32_t attn_pf_pf = 1;
  // flash_attn_tiled.wgsl's schedule: attn_pf_rows 4 (4 x 4 scores per invocation, 256
  // invocations) or 8 (8 x 4, 128 invocations, head_dim <= 128); attn_pf_dc: vec4s of head_dim
  // per staged Q/K chunk, 8 or 16 (half the barriers; the chunks then share P's workgroup
  // memory); attn_pf_swz 1: the staged Q/K chunks swizzled against bank conflicts (0: plain);
  // attn_pf_split > 0: the keys in splits of that many (rounded up to 16) as workgroups of their
  // own, merged by attn_combine.wgsl (where there are at least 2 splits and their partials fit
  // kMaxPrefillPartialBytes; a row's result depends only on its position while the split
  // length is the same).
  uint32_t attn_pf_rows = 4;
  uint32_t attn_pf_dc = 8;
  uint32_t attn_pf_swz = 1;
  uint32_t attn_pf_split = 0;
  // Decode attention (split-K): 0 flash_attn.wgsl with one row per query head of the kv head,
  // 1 flash_decode.wgsl: attn_dec_wg invocations per (split, kv head), keys in blocks of
  // attn_dec_bk (halved until the block fits the adapter's workgroup memory). Splits: the
  // number that makes attn_dec_wgs workgroups over the kv heads (a recorded step: over the whole
  // cache, its split length following the position).
  // 2: flash_decode_sg.wgsl (where the adapter has subgroups and the schedule fits, else 1):
  // attn_dec_wg invocations in key groups of attn_dec_tpk lanes (a power of two, at most the
  // subgroup size), each taking attn_dec_u keys per step straight into registers (attn_dec_pf 1:
  // the next step's loaded before this one is computed), scores summed by subgroup shuffles, no
  // barrier in the key loop. Registers per lane: 2 * G * NV vec4s of query and output and
  // 2 * attn_dec_u * NV (twice that with the prefetch) of K/V, NV = head_dim / 4 / attn_dec_tpk:
  // at head_dim 128 and G = 4, key groups of 16 lanes hold ~160 floats, of 8 lanes ~260 (spills).
  uint32_t attn_decode = 2;
  // H200, 8B heads, one token over 4,096 keys (split pass + combine; docs/benchmarks.md): 2 with
  // 256 invocations, 128 workgroups (16 splits), key groups of 16, 2 keys each, prefetch: 26.7 us;
  // 1 (128, 256): 39.7 us.
  uint32_t attn_dec_wg = 256;
  uint32_t attn_dec_bk = 32;
  uint32_t attn_dec_wgs = 128;
  uint32_t attn_dec_tpk = 16;
  uint32_t attn_dec_u = 2;
  uint32_t attn_dec_pf = 1;
  // One-token steps of F16/BF16 models: 1 runs each layer as one dispatch (decode_layer,
  // layer_decode.wgsl: its five steps hand over inside the dispatch), 0 as five. layer_wgs: the
  // grid's workgroups (0: one per work item; on CPU adapters one in all, see decode_layer);
  // layer_spin_max: the loads a wait may take before it gives up and flags the error word;
  // layer_lb: hand-over loads (vec4s) each invocation has in flight at once, 1 to 4; layer_poll:
  // an item first waits for the whole step before it, one invocation polling a counter (1), or
  // only word by word (0). H200 (docs/benchmarks.md, session 11): polling +0.7% for the 1B,
  // -6% for the 8B. layer_pf: weight chunks per row each lane loads before the item's input is
  // ready, 1 to 4 (H200: 2 and 1 lose 5-9%, and 6 or 8 too, see docs/benchmarks.md).
  uint32_t layer_decode = 0;
  uint32_t layer_lb = 4;
  uint32_t layer_pf = 4;
  uint32_t layer_poll = 0;
  uint32_t layer_wgs = 0;
  uint32_t layer_spin_max = 1u << 24;
  // Greedy decoding: 1 ends each one-token step with next_token (the argmax's last pass also
  // writes the next step's embedding row and advances the position on the GPU), so the step
  // after it runs no embedding dispatch and needs no position upload; 0: argmax, then the next
  // step embeds its token and its position is uploaded before its submit. H200 (session 15,
  // tg128): 1B F16 1070.9 / 1073.9 against 1066.7 / 1064.8 t/s, 1B Q4_0 1443.8 against 1433.4,
  // 1B Q8_0 1222.0 against 1220.0, 8B F16 233.5 against 233.1.
  uint32_t next_token = 1;
};

// Sets tuning fields from "name=value,name=value" (the LlmTuning field names, e.g.
// "mvq_tpr=16,mvq_rows=4,mmq_bm=128", and "matmul=regtile": a LinearVersion name; '/' separates
// knobs too); wgc::Error naming an unknown field or a bad value. For sweeps (bench-llm --tuning,
// WGC_LLM_TUNING for wgc bench).
void apply_tuning(LlmTuning& t, std::string_view spec);

class LlmOps {
 public:
  explicit LlmOps(Context ctx);
  LlmTuning tuning;
  const Context& context() const { return ctx_; }

  // Compiles every pipeline the given types (and head dims) may use, one after another (so that the
  // first token does not pay for them).
  void precompile(const std::vector<TensorType>& types, const std::vector<int>& head_dims);

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
  // or none. Needs batched_rope_takes(head_dim).
  void linear_batched_q8_rope(Batch& b, const GpuWeight& w, const Q8Act& x, const Tensor& qkv, int n_tokens,
                              const RopeTable& table, const KvLayer& cache, const RopeKvArgs& a,
                              const Tensor& bias = {}) const;
  bool batched_rope_takes(int head_dim) const;
  // One token through a gate|up weight (rows [0, n) gate, [n, 2n) up, n = out.cols): silu(gate) *
  // up quantized into out, in one dispatch (n % 32 == 0).
  void linear_swiglu_q8(Batch& b, const GpuWeight& gate_up, const Q8Act& x, const Q8Act& out) const;
  // One token: rms_norm_q8 of x (f32, elements 0 .. w.cols - 1) with norm_w, then linear_q8 (or
  // linear_swiglu_q8) of it, in one dispatch: every workgroup normalises and quantizes x into its
  // workgroup memory (the same values as rms_norm_q8 but for a sum of squares added in another
  // order), so no pass and no barrier come between. Needs fuses_norm_q8(w.cols).
  void rms_norm_linear_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                          const Tensor& y, const LinearOptions& o = {}) const;
  void rms_norm_swiglu_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& gate_up,
                          const Q8Act& out) const;
  // Whether those take x of `cols` columns (a multiple of 32 whose quants fit in a workgroup's memory).
  bool fuses_norm_q8(int64_t cols) const;
  // One token: rms_norm_linear_q8 through a fused QKV weight (rows: a.n_heads query heads, then
  // the cache's key and value heads, back to back) and rope_kv_append(qkv, table, cache, a) on its
  // output, in one dispatch (the same results as the two). Needs fuses_rope_q8(w.cols) (ten
  // storage buffers: adapters allowing that many per shader stage). A QKV weight in parts (of
  // different types) takes one call per part: w holds rows row0 .. row0 + w.rows - 1 of the fused
  // weight (whole heads), written to qkv from row0 on.
  void rms_norm_qkv_rope_q8(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                            const Tensor& qkv, const RopeTable& table, const KvLayer& cache, const RopeKvArgs& a,
                            int64_t row0 = 0) const;
  bool fuses_rope_q8(int64_t cols) const;
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
  // Whether the folded combine of these partials walks only the keyed splits (matvec_combine 2,
  // combine_prefix_splits).
  bool combine_prefix(const DecodePartials& p) const;
  // Whether combine_linear takes these partials for weights of type t (tuning.matvec_combine,
  // float weights, x staged whole: tuning.matvec_xs 2 and workgroup memory for it and the splits'
  // weights).
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
  // range, y offset and accumulate apply); needs fuses_norm(w.cols).
  void rms_norm_linear(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w, const Tensor& y,
                       const LinearOptions& o = {}) const;
  void rms_norm_swiglu(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& gate_up,
                       const Tensor& out) const;
  // Whether those take x of `cols` columns (a multiple of 4).
  bool fuses_norm(int64_t cols) const;
  // The column ranges of a one-token linear() of weight type t, cols columns and rows rows
  // (tuning.matvec_split, matvec_split_cols, matvec_split_groups; rows 0: not checked against
  // matvec_split_groups; 1: not split).
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
  // output, in one dispatch (bit-identical to the two). Needs fuses_rope(w.cols) (nine storage
  // buffers: adapters allowing that many per shader stage).
  void rms_norm_qkv_rope(Batch& b, const Tensor& x, const Tensor& norm_w, float eps, const GpuWeight& w,
                         const Tensor& qkv, const RopeTable& table, const KvLayer& cache, const RopeKvArgs& a) const;
  bool fuses_rope(int64_t cols) const;

  // out[t * out_stride + i] = silu(g) * u, g = gate[t * g_stride + g_off + i],
  // u = up[t * u_stride + u_off + i], i < n (gate and up may be one gate|up tensor).
  void swiglu(Batch& b, const Tensor& gate, int64_t g_stride, int64_t g_off, const Tensor& up, int64_t u_stride,
              int64_t u_off, const Tensor& out, int n_tokens, int n, int64_t out_stride = -1) const;
  // y += x (n elements).
  void add(Batch& b, const Tensor& x, const Tensor& y, int64_t n) const;
  // y *= s (n elements).
  void scale(Batch& b, const Tensor& y, int64_t n, float s) const;

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
  bool paged_attention_q8_takes(int head_dim) const;  // whether paged_attention_q8 runs this head_dim

  // One decoder layer of one token (cache position and row from a.positions) in one dispatch:
  // RMSNorm, QKV, RoPE and the cache append, decode attention, the o projection and residual,
  // RMSNorm, gate|up, SwiGLU, the down projection and residual (layer_decode.wgsl). Reads the
  // layer's input from s's region a.region and writes its output into region a.next's xin.
  void decode_layer(Batch& b, const LayerScratch& s, const KvLayer& cache, const DecodeLayerArgs& a) const;
  // Why decode_layer cannot run layers of this scratch's shapes with weights of type t ("": it can).
  std::string decode_layer_unfit(const LayerScratch& s, TensorType t) const;
  // A scratch for decode_layer (its splits from tuning.attn_dec_wgs, as the decode attention's).
  LayerScratch make_decode_layer_scratch(int n_layers, int64_t hidden, int64_t ffn, int n_heads, int n_kv_heads,
                                         int head_dim, int max_ctx) const;
  // The decode attention's splits of the cache unless told: tuning.attn_dec_wgs workgroups' worth
  // over the KV heads (decode_attention and decode_layer's scratch alike).
  uint32_t decode_splits(int n_kv_heads) const;

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
  Kernel kernel(const std::string& key, const std::vector<std::string>& files,
                std::vector<std::pair<std::string, double>> constants, bool subgroups,
                const std::string& entry = "main", const std::string& prelude = "") const;
  void linear_batched(Batch& b, const GpuWeight& w, const Tensor& x, const Tensor& y, int n_tokens, const Params& prm,
                      const Tensor& bias, int64_t rows) const;
  void linear_batched_q8(Batch& b, const GpuWeight& w, const Tensor& x, int64_t x_stride, const Tensor& y, int n_tokens,
                         const Params& prm, const Tensor& bias, int64_t rows) const;

  // Rows per row group of the batched-q8 kernel for a step of n_tokens (tuning.batched_small_*).
  uint32_t batched_rows_per_group(int n_tokens) const;
  // The batched kernels' workgroup size: tuning.batched_wg, else the largest that still gives
  // batched_min_groups workgroups.
  uint32_t batched_wg(uint64_t token_tiles, int64_t rows, uint32_t rows_per_group) const;
  uint32_t batched_tt(int n_tokens) const;  // tuning.batched_tt or _large for n_tokens, checked
  // kind: "naive", "matmul" (tiled) or "regtile".
  Kernel linear_kernel(const std::string& kind, TensorType t) const;
  // matvec.wgsl for weights of `cols` columns (0: unknown, taken as whole chunks without staging).
  // swiglu_rows: the SWIGLU variant with that many rows per group (0: the plain kernel); norm_eps:
  // x RMS-normalised inside (matvec_x_norm.wgsl) with this epsilon; rope: the ROPE epilogue.
  // splits: the columns in that many ranges (matvec.wgsl's KS; plain rows only).
  // xc: x combined from decode partials (matvec_x_combine.wgsl; plain rows only).
  // groups: the grid's workgroups (tuning.matvec_few_groups; 0: unknown).
  Kernel matvec_kernel(TensorType t, LinearVersion v, int64_t cols, uint32_t swiglu_rows = 0,
                       const float* norm_eps = nullptr, bool rope = false, uint32_t splits = 1,
                       const DecodePartials* xc = nullptr, uint64_t groups = 0) const;
  // Whether the matvec stages the whole of x (of a range of cols columns) in workgroup memory
  // (tuning.matvec_xs, where it fits beside extra_bytes of the x file's own).
  bool stages_x(TensorType t, int64_t cols, bool norm, uint64_t extra_bytes = 0) const;
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
  MatvecShape matvec_shape(bool swiglu = false) const;  // swiglu: the gate|up + SwiGLU kernel's tpr, unroll
  // m with tuning.matvec_few_unroll for a grid of `groups` workgroups (0: unknown, as it is).
  MatvecShape few_unroll(MatvecShape m, uint64_t groups) const;
  uint32_t rope_rows() const;  // the QKV + RoPE matvec's rows per group, checked
  // The kx schedule (tuning.matvec_kx, matvec_kx.wgsl): its kernel, and its workgroups for a
  // weight of `rows` rows (SWIGLU / ROPE: their row pairs, two rows per tile row).
  Kernel matvec_kx_kernel(TensorType t, int64_t cols, uint32_t kind, const float* norm_eps = nullptr,
                          const DecodePartials* xc = nullptr) const;
  uint64_t kx_grid(uint32_t kind, int64_t rows, TensorType t, int64_t cols) const;
  Kernel attn_kernel(int head_dim, int bq) const;
  // flash_attn_tiled.wgsl (attn_prefill 1) or flash_attn_tiled_pf.wgsl (2) for this head_dim,
  // or an empty Kernel where it cannot run.
  Kernel attn_tiled_kernel(int head_dim) const;
  Kernel attn_tiled_pf_kernel(int head_dim) const;
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
  // matvec_q8 / matmul_q8 for a weight type; tag: what sets this prelude and these constants
  // apart (part of the kernel's name and cache key). x_file: where x comes from (matvec_x).
  Kernel q8_kernel(const std::string& kind, TensorType t, const std::string& tag, const std::string& prelude,
                   std::vector<std::pair<std::string, double>> constants,
                   const std::string& x_file = "llm/q8_act_global.wgsl", bool rope = false) const;
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
  // w's columns built into the kernel (tuning.mvq_static) or 0.
  struct MatvecQ8Shape {
    uint32_t wg, tpr, rows, unroll, pf, cols;
    bool half;                    // K-quants in their smaller units (mv_half)
    std::string tag() const;      // for the kernel's name
    std::string prelude() const;  // PF_K, PF_N, XS
  };
  MatvecQ8Shape matvec_q8_shape(const std::string& op, const GpuWeight& w, uint32_t group_rows = 0,
                                uint32_t wg_rows = 0, uint32_t tpr = 0) const;
  // matvec_q8.wgsl's x file for x of `cols` columns and weights of type t: normalised and
  // quantized in the kernel (norm_x: q8_act_norm.wgsl, its scale late with tuning.mvq_late),
  // quantized before and read from storage (q8_act_global.wgsl) or copied into workgroup memory
  // first (q8_act_stage.wgsl, tuning.mvq_stage); workgroup copies swizzled with tuning.mvq_swz.
  // Adds its prelude (XC, XSWZ, LATE) and kernel-name part.
  std::string matvec_x(TensorType t, bool norm_x, int64_t cols, std::string& prelude, std::string& tag) const;
  // Whether weights of type t run the matvec without mvq_late, mvq_pf, mvq_static and mvq_stage
  // (K-quants while tuning.mvq_kq_plain).
  bool kquant_plain(TensorType t) const;
  // Whether a q8 kernel of this kind ("matvec_q8", "matmul_q8") takes K-quant weights in its
  // smaller units (q8dot/q4_k.wgsl's, q6_k.wgsl's MV_HALF: tuning.mvq_q4k_half, mvq_q6k_half).
  bool mv_half(const std::string& kind, TensorType t) const;
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
  bool subgroups_ = false;  // usable: the feature and one fixed subgroup size
  uint32_t sg_size_ = 0;
  uint32_t max_wg_ = 256;
  Tensor dummy_;
  mutable std::unordered_map<std::string, Kernel> kernels_;
};

}  // namespace wgc::llm
