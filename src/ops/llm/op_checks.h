// Argument checks, small conversions and parameter blocks shared by the LLM ops' sources (llm_ops.cpp,
// linear_q8.cpp); not installed.
#pragma once

#include "cpu/llm/tensor_type.h"
#include "gpu/tensor.h"
#include "ops/llm/llm_ops.h"
#include "util/error.h"

#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <string>

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

// An 8-bit activation of at least n_tokens tokens.
inline void need_q8(const Q8Act& a, int n_tokens, const std::string& op, const std::string& name) {
  need(a.cols > 0 && a.cols % 32 == 0, op, name + ": " + std::to_string(a.cols) + " columns, not a multiple of 32");
  need(n_tokens > 0 && n_tokens <= a.max_tokens, op,
       name + " holds " + std::to_string(a.max_tokens) + " tokens, the op needs " + std::to_string(n_tokens));
  need_elems(a.qs, int64_t(n_tokens) * a.cols / 4, op, name + " quants");
  need_elems(a.ds, int64_t(n_tokens) * a.cols / 16, op, name + " scales");
}

inline uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

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
  need(a.cache_rows || (a.pos0 >= 0 && a.pos0 < c.max_ctx), op,
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

// A WGSL constant for a kernel's prelude ("const NAME: u32 = 8u;").
inline std::string prelude_u32(const char* name, uint32_t v) {
  return std::string("const ") + name + ": u32 = " + std::to_string(v) + "u;\n";
}
inline std::string prelude_bool(const char* name, bool v) {
  return std::string("const ") + name + ": bool = " + (v ? "true" : "false") + ";\n";
}

// "256x32x2": a kernel's shape knobs, in its name (labels in profiles, the pipeline cache's key).
inline std::string shape_tag(std::initializer_list<uint32_t> v) {
  std::string s;
  for (uint32_t x : v) {
    if (!s.empty()) s += 'x';
    s += std::to_string(x);
  }
  return s;
}

}  // namespace wgc::llm::detail
