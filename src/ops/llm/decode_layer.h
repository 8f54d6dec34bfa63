// One decoder layer of one token in one dispatch (layer_decode.wgsl, LlmOps::decode_layer): the
// scratch its steps hand over through, and its arguments.
#pragma once

#include "gpu/context.h"
#include "gpu/tensor.h"
#include "ops/llm/weights.h"

#include <cstdint>

namespace wgc::llm {

struct RopeTable;

// Scratch words: `regions` regions of region_words words each (region 0 first: its xin, the first
// hidden words, is where the embedding writes and the output projection reads), then the error
// word. Offsets inside a region: xin (the layer's input), cnt (the ticket counter, then each
// step's count of finished items, cnt + 1 ..), then the guarded words (reset to the sentinel before each use): q, k, v,
// the attention partials, x2 (the residual after attention), act (the SwiGLU output), up to `end`.
struct LayerScratch {
  Tensor words;
  uint32_t regions = 0, region_words = 0, err = 0;
  uint32_t xin = 0, cnt = 0, q = 0, k = 0, v = 0, part = 0, x2 = 0, act = 0, end = 0;
  int64_t hidden = 0, ffn = 0;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0, max_ctx = 0;
  uint32_t splits = 0, split_len = 0;  // the attention's splits of the cache
};

// A scratch for layers of these shapes over a cache of max_ctx positions, its attention in
// `splits` splits (of whole blocks of block_keys), regions for a model of n_layers (2, or 3 when
// odd: consecutive layers and the first and last differ). Uploaded reset.
LayerScratch make_layer_scratch(const Context& ctx, int n_layers, int64_t hidden, int64_t ffn, int n_heads,
                                int n_kv_heads, int head_dim, int max_ctx, uint32_t splits, uint32_t block_keys);
// The region layer li of n_layers uses (and layer li + 1, mod n_layers, is next).
uint32_t layer_region(int li, int n_layers);
// Whether a dispatch on it gave up waiting (layer_decode.wgsl's error word); reads it back.
bool layer_scratch_failed(const Context& ctx, const LayerScratch& s);

struct DecodeLayerArgs {
  const GpuWeight* qkv = nullptr;  // fused: n_heads query heads, then the key and value heads
  const GpuWeight* o = nullptr;
  const GpuWeight* gate_up = nullptr;  // gate rows, then up rows
  const GpuWeight* down = nullptr;
  Tensor norms;  // f32: the attention's RMSNorm weight at ln1, the MLP's at ln2
  uint32_t ln1 = 0, ln2 = 0;
  float eps = 1e-5f;
  const RopeTable* rope = nullptr;
  bool interleaved = false;  // RoPE pairs (2i, 2i+1), else (i, i + hd/2)
  Tensor positions;          // u32 [2]: the token's position and its cache row (read when it runs)
  int region = 0, next = 1;  // layer_region of this layer and the next
};

}  // namespace wgc::llm
