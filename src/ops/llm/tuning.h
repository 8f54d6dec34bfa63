// The LLM kernels' tuning knobs (internal: for benchmarks, sweeps and tests; not a user's API).
// The defaults suit the H200 and run everywhere; a knob is a schedule parameter a device may want
// otherwise, never a switch between a kernel that won and one that lost (those left the library:
// docs/history/pruned.md). Each default cites the measurement that chose it (docs/benchmarks.md
// and its history, by session). Values that were never swept are constants beside their kernel's
// host code. Changing a knob after kernels were used compiles new pipelines on next use.
#pragma once

#include "ops/llm/linear_version.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

struct LlmTuning {
  // ---- matvec: matvec.wgsl, one token, f32 activations, float weights (where kx does not run) --
  // Invocations per workgroup and per row (a power of two), rows per row group (1..8, sharing x
  // loads), weight loads in flight per invocation (1..8). Session 7: 128 invocations lost 9%;
  // session 8: unroll 8 gained 1.8% on 1B F16 and lost 1.2% on 8B F16.
  uint32_t matvec_wg = 256;
  uint32_t matvec_tpr = 32;
  uint32_t matvec_unroll = 4;
  uint32_t matvec_rows = 2;
  // Each invocation's first matvec_pf unrolled steps of weights (0..matvec_unroll) loaded before x
  // is prepared (norm, staging). Session 7: 4 (with the late norm) 190.1 -> 194.1 t/s, 8B F16.
  uint32_t matvec_pf = 4;
  // Weights of at least matvec_split_cols columns: their columns in matvec_split ranges (partial
  // sums, then matvec_sum.wgsl adds the ranges in order; 1: none). Session 7: 4 ranges 194.1 ->
  // 196.8 t/s (8B F16), 2 lost; 1B's 8,192-column down projection lost.
  uint32_t matvec_split = 4;
  uint32_t matvec_split_cols = 12288;
  // Gate and up rows per workgroup of the gate|up + SwiGLU matvec (a power of two, 2..64). Session
  // 7: 32 beat 64 by 1.1% (8B F16) and 3.2% (1B F16).
  uint32_t swiglu_wg_rows = 32;

  // ---- kx: matvec_kx.wgsl, the one-token float-weight matvecs with x in registers -----------
  // A bit per kind (1 gate|up + SwiGLU, 2 plain, 4 QKV + RoPE): those run the kx schedule where
  // the adapter has subgroups and each invocation takes at most 8 weight chunks; 0: matvec.wgsl.
  // Sessions 12-14: kx beat matvec.wgsl on every 8B and 1B shape.
  uint32_t matvec_kx = 7;
  // Invocations per workgroup (a power of two, a multiple of the subgroup size), kx_wide_wg from
  // 12,288 columns. Sessions 12-13: 256 won QKV and gate|up, 512 the 14,336-column down.
  uint32_t kx_wg = 256;
  uint32_t kx_wide_wg = 512;
  // Rows per tile (a power of two, 2..32). Session 12: 8 beat 16 by 15-30%, 4 lost 42% (SwiGLU).
  uint32_t kx_rows = 8;
  // Weight vec4s each invocation loads per pass. Session 13: 28 beat 16 (217.8 vs 217.0 t/s).
  uint32_t kx_loads = 28;
  // At most this many workgroups, each looping over tiles (0: a tile each): a multiple of the
  // GPU's multiprocessors (WebGPU does not tell them; the H200 has 132). Session 13: 264 and 132
  // beat 198-660 and a tile each.
  uint32_t kx_groups = 264;

  // ---- matmul: prefill with f32 activations -------------------------------------------------
  // The version LinearVersion::Auto runs for n_tokens > 1 (Auto: choose_linear's pick by shape).
  LinearVersion matmul = LinearVersion::Auto;
  // matmul_regtile.wgsl's tile: tokens (BM) x weight rows (BN), multiples of 8; k step BK (a
  // multiple of 4). Session 6: BK 8 beat 16 by 18% (8B F16 pp512).
  uint32_t matmul_bm = 64;
  uint32_t matmul_bn = 128;
  uint32_t matmul_bk = 8;

  // ---- q8 matvec: matvec_q8.wgsl, one token, 8-bit activations ------------------------------
  // Invocations per workgroup and per row group (a power of two), rows per group (1..8), units per
  // lane per step (1..8). 8B Q4_0: rows 1 beat 2 by 7.5%, unroll 2 beat 1 by 5.6%.
  uint32_t mvq_wg = 256;
  uint32_t mvq_tpr = 32;
  uint32_t mvq_rows = 1;
  uint32_t mvq_unroll = 2;
  // Units per row of each invocation's first step loaded before x is prepared (0..mvq_unroll,
  // within a register budget); mvq_kq_pf for Q4_K / Q6_K (0: mvq_pf). Sessions 6 and 8: 2 won
  // with the late norm (8B Q4_0 435 -> 463.9 t/s), 1 for Q4_K_M (424.8 vs 415.0).
  uint32_t mvq_pf = 2;
  uint32_t mvq_kq_pf = 1;
  // Invocations per row group of the gate|up + SwiGLU matvec (its rows follow: 64 per workgroup);
  // mvq_kq_sw_tpr for Q4_K / Q6_K (0: mvq_sw_tpr). Sessions 7 and 8: 8 beat 16 and 32; with the
  // repacked K-quants 16 beat 8 and 32 (8B Q4_K_M).
  uint32_t mvq_sw_tpr = 8;
  uint32_t mvq_kq_sw_tpr = 16;

  // ---- q8 matmul: matmul_q8.wgsl, prefill with 8-bit activations ----------------------------
  // Tokens (BM) x weight rows (BN) per workgroup (multiples of 8); below mmq_min_groups
  // workgroups a product takes smaller tiles (rows halved to 32, then tokens to 16; 0: never);
  // units per workgroup-memory step. 8B Q4_0 pp512: units 2 3,715 t/s, 1 2,623, 4 3,164.
  uint32_t mmq_bm = 64;
  uint32_t mmq_bn = 128;
  uint32_t mmq_min_groups = 264;
  uint32_t mmq_units = 2;

  // ---- quantized activations: quant_act.wgsl ------------------------------------------------
  // Steps of fewer tokens than this split each token's row between up to quant_groups / tokens
  // workgroups (the same bits; 0: one workgroup per token). Serving session 7: 1024 beat 64, 256.
  uint32_t quant_groups = 1024;

  // ---- batched: the serving kernels (linear_batched*.wgsl) ----------------------------------
  // Lanes per row group (a power of two <= 32: part of the summation order, so results change
  // with it). docs/serving.md: 8 with 8-token tiles the fastest.
  uint32_t batched_kl = 8;
  // Most tokens per workgroup (a power of two <= 32) in steps of at most 256 tokens, and in larger
  // ones. Never changes a result. docs/serving.md: 8 beat 16 in decode, 16 beat 8 in prefill.
  uint32_t batched_tt = 8;
  uint32_t batched_tt_large = 16;
  // Steps of at most batched_mv_n tokens (<= 8; 0: none) run linear_batched_q8_mv.wgsl (the same
  // bits, read like a matvec) with row groups of batched_kl x batched_mv_sl invocations. Serving
  // session 7: 4 tokens +13% at one stream; sl 8 beat 4.
  uint32_t batched_mv_n = 4;
  uint32_t batched_mv_sl = 8;

  // ---- attention ----------------------------------------------------------------------------
  // Decode attention (flash_decode_sg.wgsl, else flash_decode.wgsl): invocations per (split, KV
  // head); splits: attn_dec_wgs workgroups' worth over the KV heads; flash_decode_sg's key groups
  // of attn_dec_tpk lanes (a power of two, at most the subgroup size), each taking attn_dec_u keys
  // per step. Session 6: 26.7 us against flash_decode.wgsl's 39.7 (8B heads, 4,096 keys);
  // session 15: the other sets within 0.4%.
  uint32_t attn_dec_wg = 256;
  uint32_t attn_dec_wgs = 128;
  uint32_t attn_dec_tpk = 16;
  uint32_t attn_dec_u = 2;

  bool operator==(const LlmTuning&) const = default;
};

// Sets knobs from "name=value,name=value" (the field names above; '/' separates knobs too;
// "matmul=regtile": a LinearVersion name). wgc::Error naming an unknown knob or a bad value.
void apply_tuning(LlmTuning& t, std::string_view spec);
// Knob sets separated by ';' ("mvq_rows=2,mvq_tpr=16;mvq_rows=1"), as every bench command's
// --tuning and WGC_LLM_TUNING give them: the sets (at least one; "" for none), each checked by
// apply_tuning on the defaults (wgc::Error naming the bad one).
std::vector<std::string> split_tuning_sets(std::string_view spec);
// `base` (none: the defaults) with `spec` applied, as EngineOptions::tuning holds it.
std::shared_ptr<const LlmTuning> with_tuning(const std::shared_ptr<const LlmTuning>& base, std::string_view spec);

}  // namespace wgc::llm
