// What the LLM ops' sources (src/ops/llm/*.cpp, one kernel family each) share: argument checks,
// small conversions, the weight chunk sizes and the parameter blocks. Not installed.
#pragma once

#include "cpu/llm/tensor_type.h"
#include "gpu/tensor.h"
#include "ops/llm/kernel_spec.h"
#include "ops/llm/llm_ops.h"
#include "util/error.h"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace wgc::llm::detail {

// The lower-case type name of the weight kernels' files (llm/weights/q8_0.wgsl) and of messages.
inline std::string str(TensorType t) {
  std::string s(to_string(t));
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline void need(bool ok, const std::string& op, const std::string& what) {
  if (!ok) throw Error("wgc: llm " + op + ": " + what);
}

inline void need_elems(const Tensor& t, int64_t elems, const std::string& op, const std::string& name) {
  need(bool(t), op, name + " is missing");
  need(uint64_t(elems) * 4 <= t.capacity(), op,
       name + " holds " + std::to_string(t.capacity() / 4) + " elements, the op needs " + std::to_string(elems));
}

// A KV cache layer whose tensors hold its words from its offset (every cache op checks this), of a
// type that takes its head_dim.
inline void need_kv(const KvLayer& c, const std::string& op) {
  std::string why;
  need(kv_type_fits(c.type, c.head_dim, &why), op, why);
  const int64_t unit = c.type == KvType::F32 ? 1 : c.type == KvType::F16 ? 2 : 4;
  need(c.offset % 4 == 0 || c.type == KvType::F32, op, "cache offset must be a multiple of 4");
  const int64_t words = int64_t(c.offset) / unit + kv_words(c.type, c.values());
  need_elems(c.k, words, op, "k cache");
  need_elems(c.v, words, op, "v cache");
}

// The fused RoPE epilogues (rope_store.wgsl, linear_batched_rope.wgsl) store single f32 values.
inline void need_f32_kv(const KvLayer& c, const std::string& op) {
  need(c.type == KvType::F32, op,
       "writes an f32 KV cache only, not " + std::string(to_string(c.type)) + " (rope_kv_append packs)");
}

// The cache loads a reading kernel of this cache type includes, and its pipelines' key suffix
// ("" for f32: those keys stay as they were).
inline std::string kv_read_file(KvType t) {
  return t == KvType::F32 ? "llm/kv_read_f32.wgsl" : t == KvType::F16 ? "llm/kv_read_f16.wgsl" : "llm/kv_read_q8.wgsl";
}
// The stores a packed cache's writers include, and the values each invocation stores (KV_CH).
inline std::string kv_store_file(KvType t) {
  return t == KvType::F16 ? "llm/kv_store_f16.wgsl" : "llm/kv_store_q8.wgsl";
}
inline uint32_t kv_unit(KvType t) { return t == KvType::F32 ? 1 : t == KvType::F16 ? 2 : 32; }
inline std::string kv_tag(KvType t) { return t == KvType::F32 ? "" : "/kv_" + std::string(to_string(t)); }
// The cache rows a contiguous cache's reader includes (KvLayer::ring: position % rows) and its key suffix.
inline std::string kv_row_file(bool ring) { return ring ? "llm/kv_row_ring.wgsl" : "llm/kv_row_flat.wgsl"; }
inline std::string ring_tag(bool ring) { return ring ? "/ring" : ""; }

// An 8-bit activation of at least n_tokens tokens.
inline void need_q8(const Q8Act& a, int n_tokens, const std::string& op, const std::string& name) {
  need(a.cols > 0 && a.cols % 32 == 0, op, name + ": " + std::to_string(a.cols) + " columns, not a multiple of 32");
  need(n_tokens > 0 && n_tokens <= a.max_tokens, op,
       name + " holds " + std::to_string(a.max_tokens) + " tokens, the op needs " + std::to_string(n_tokens));
  need_elems(a.qs, int64_t(n_tokens) * a.cols / 4, op, name + " quants");
  need_elems(a.ds, int64_t(n_tokens) * a.cols / 16, op, name + " scales");
}

inline uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

inline uint64_t round16(uint64_t b) { return (b + 15) / 16 * 16; }

inline uint32_t pow2_floor(uint32_t v) {
  uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// Weight elements per chunk (one vec4<u32>), as weights/*.wgsl's W_CHUNK.
inline uint32_t chunk_elems(TensorType t) {
  switch (t) {
    case TensorType::F32: return 4;
    case TensorType::F16:
    case TensorType::BF16: return 8;
    case TensorType::Q8_0: return 16;
    case TensorType::Q4_0:
    case TensorType::Q4_K:
    case TensorType::Q6_K: return 32;
    default: break;  // not a GPU weight type: upload_weight refuses it
  }
  return 4;
}

// The float weight types: rows padded to whole chunks, read by matvec.wgsl / matvec_kx.wgsl with
// x in f32 (the quantized types take 8-bit activations).
inline bool float_weights(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

// ---- one-token matvecs with f32 activations (matvec.cpp, matvec_kx.cpp) ----

// matvec.wgsl / matvec_kx.wgsl: the uniform's binding with ROPE (after matvec_rope.wgsl's storage
// buffers 5-8), and P's ROPE fields (zero without).
inline constexpr uint32_t kMatvecRopeUniform = 9, kMatvecRopeParams = 8;

// The shader files of a one-token f32-activation matvec, `main_file` last: x plain, RMS-normalised
// (norm) or combined from decode partials (combine), with the ROPE epilogue's bindings or not.
inline std::vector<std::string> matvec_files(TensorType t, bool sg, bool combine, bool norm, bool rope,
                                             const char* main_file) {
  return {"llm/common.wgsl",
          "llm/rope_pair.wgsl",
          "llm/weights/" + str(t) + ".wgsl",
          sg ? "llm/reduce_sg.wgsl" : "llm/reduce_wg.wgsl",
          combine ? "llm/matvec_x_combine.wgsl"
          : norm  ? "llm/matvec_x_norm.wgsl"
                  : "llm/matvec_x.wgsl",
          rope ? "llm/matvec_rope.wgsl" : "llm/matvec_q8_norope.wgsl",
          main_file};
}

// matvec_x_combine.wgsl's part of a matvec variant: x merged from one token's decode partials
// (n_heads heads of head_dim in `splits` splits); prefix: only the keyed splits walked.
struct CombineVariant {
  uint32_t n_heads = 0, splits = 0, head_dim = 0;
  bool prefix = false;
  std::string tag() const {
    return "/xc" + std::to_string(n_heads) + "x" + std::to_string(splits) + "x" + std::to_string(head_dim) +
           (prefix ? "p" : "");
  }
  std::string prelude() const {
    return prelude_u32("XC_NH", n_heads) + prelude_u32("XC_S", splits) + prelude_u32("XC_HD", head_dim) +
           prelude_bool("XC_PREFIX", prefix);
  }
};
// Its workgroup memory: a weight per head and split, a sum and a count per head.
inline uint64_t combine_bytes(const DecodePartials& p) {
  return 4ull * (uint64_t(p.n_heads) * p.splits + 2 * uint64_t(p.n_heads));
}

// The RMS norm's epsilon in a kernel's key: its bits.
inline std::string eps_tag(float eps) {
  uint32_t bits;
  std::memcpy(&bits, &eps, 4);
  return "/norm" + std::to_string(bits);
}

// ---- attention (attention.cpp, paged_attention.cpp) ----

// flash_attn.wgsl's and paged_attn.wgsl's schedule for a head_dim: invocations per query row
// (each up to 4 output vec4s) and keys per block.
struct AttnShape {
  uint32_t tpq, bk;
};
inline AttnShape attn_shape(int hd) {
  uint32_t hd4 = uint32_t(hd) / 4, tpq = 0;
  for (uint32_t t : {8u, 4u, 16u, 2u, 1u, 32u})
    if (hd4 % t == 0 && hd4 / t <= 4) {
      tpq = t;
      break;
    }
  if (!tpq)
    for (uint32_t t = 1; t <= hd4; ++t)
      if (hd4 % t == 0 && hd4 / t <= 4) {
        tpq = t;
        break;
      }
  return {tpq, tpq * ((16 + tpq - 1) / tpq)};
}

// The decode combines (attn_combine.wgsl, attn_combine_q8.wgsl): invocations per output element,
// each merging every kCombineSp-th split (halved until a head's workgroup fits). 8B Q4_0 tg128: 4
// and 8 within 0.5% of 1.
inline constexpr uint32_t kCombineSp = 4;

// The checked shape of y = W x for x quantized (linear_q8, linear_batched_q8): the rows (o.rows
// or to the weight's end), y's stride, the kernels' flags (1: bias, 2: accumulate).
struct Q8LinearShape {
  int64_t rows = 0, y_stride = 0;
  uint32_t flags = 0;
};
inline Q8LinearShape check_linear_q8(const GpuWeight& w, const Q8Act& x, const Tensor& y, int n_tokens,
                                     const LinearOptions& o, const std::string& op) {
  need(x.cols == w.cols, op, "x has " + std::to_string(x.cols) + " columns, the weight " + std::to_string(w.cols));
  need_q8(x, n_tokens, op, "x");
  Q8LinearShape s;
  s.rows = o.rows < 0 ? w.rows - o.row0 : o.rows;
  s.y_stride = o.y_stride < 0 ? s.rows : o.y_stride;
  need(o.row0 >= 0 && s.rows > 0 && o.row0 + s.rows <= w.rows, op,
       "rows " + std::to_string(o.row0) + "+" + std::to_string(s.rows) + " of a " + std::to_string(w.rows) +
           "-row weight");
  need_elems(y, (n_tokens - 1) * s.y_stride + o.y_offset + s.rows, op, "y");
  if (o.bias) need_elems(o.bias, o.row0 + s.rows, op, "bias");
  s.flags = (o.bias ? 1u : 0u) | (o.accumulate ? 2u : 0u);
  return s;
}

// rope_kv_append's flags: 1 positions from the buffer, 2 interleaved pairs, 4 cache rows from it.
inline uint32_t rope_flags(const RopeKvArgs& a) {
  return (a.positions ? 1u : 0u) | (a.interleaved ? 2u : 0u) | (a.cache_rows ? 4u : 0u);
}

// The RoPE + KV-append epilogue's fields (llm/rope_params_fields.wgsl) after a kernel's own.
inline void push_rope_params(Params& prm, const RopeTable& table, const KvLayer& c, const RopeKvArgs& a) {
  prm.push(u32(a.n_heads))
      .push(u32(c.n_kv_heads))
      .push(u32(c.head_dim))
      .push(u32(a.pos0))
      .push(rope_flags(a))
      .push(u32(table.max_pos))
      .push(u32(c.max_ctx))
      .push(c.offset);
}

// One token through a fused QKV weight with RoPE and the KV-cache append in its epilogue
// (rms_norm_qkv_rope, rms_norm_qkv_rope_q8): the weight's rows are the query, key and value
// heads back to back, qkv holds them, the position and cache row are in range.
// row0 < 0: w is the whole QKV weight; row0 >= 0: w holds the rows row0.. of it (whole heads).
inline void check_qkv_rope(const GpuWeight& w, const Tensor& qkv, const RopeTable& table, const KvLayer& c,
                           const RopeKvArgs& a, const std::string& op, int64_t row0 = -1) {
  const int hd = c.head_dim;
  need_f32_kv(c, op);
  need(a.n_tokens == 1 && a.n_heads > 0 && c.n_kv_heads > 0, op, "one token, some heads");
  need(hd > 0 && hd % 2 == 0 && table.head_dim == hd, op,
       "the rope table's head_dim " + std::to_string(table.head_dim) + " is not the cache's " + std::to_string(hd));
  const int64_t rows = (int64_t(a.n_heads) + 2 * c.n_kv_heads) * hd;
  if (row0 < 0)
    need(w.rows == rows, op,
         "a QKV weight of " + std::to_string(w.rows) + " rows for " + std::to_string(rows) + " (q, k and v heads)");
  else
    need(row0 % hd == 0 && w.rows % hd == 0 && row0 + w.rows <= rows, op,
         "rows " + std::to_string(row0) + "+" + std::to_string(w.rows) + " of a QKV weight of " + std::to_string(rows) +
             " rows (whole q, k and v heads of " + std::to_string(hd) + ")");
  need_elems(qkv, rows, op, "qkv");
  need(a.q_offset == 0 && (a.k_offset < 0 || a.k_offset == int64_t(a.n_heads) * hd) &&
           (a.v_offset < 0 || a.v_offset == (int64_t(a.n_heads) + c.n_kv_heads) * hd),
       op, "q, k and v heads back to back from 0");
  need(a.cache_rows || (a.pos0 >= 0 && (c.ring || a.pos0 < c.max_ctx)), op,
       "position " + std::to_string(a.pos0) + " past max_ctx " + std::to_string(c.max_ctx));
  need(!a.cache_rows || a.positions, op, "cache rows come with the positions buffer");
  if (a.positions)
    need_elems(a.positions, a.cache_rows ? 2 : 1, op, "positions");
  else
    need(a.pos0 < table.max_pos, op,
         "position " + std::to_string(a.pos0) + " past the table's " + std::to_string(table.max_pos));
  need_elems(c.k, c.offset + int64_t(c.n_kv_heads) * hd * c.max_ctx, op, "k cache");
  need_elems(c.v, c.offset + int64_t(c.n_kv_heads) * hd * c.max_ctx, op, "v cache");
}

}  // namespace wgc::llm::detail
