// Partial rotary embeddings (Phi-3: rope_dim < head_dim; pairs (i, i + rope_dim/2) of the first
// rope_dim features rotate, the other features pass through) run on the engines' full-width rope
// (pairs (i, i + head_dim/2), every rope path alike: rope_kv_append, the fused matvec and batched
// epilogues, the CPU engine) by reordering each query and key head's rows once at load: rotated
// pair i goes to (i, i + head_dim/2), the passed-through features to the other slots, whose table
// entries are (cos, sin) = (1, 0). q.k is a sum over a head's features, so the same order on q and
// k leaves attention exact; values and the output projection keep the file's order. Interleaved
// pairs (GLM-4: (2i, 2i + 1) of the rotated features) are reordered the same way.
#pragma once

#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace wgc::llm {

// The query and key rows need reordering: rope_dim set and below head_dim, or interleaved pairs.
bool partial_rope(const ModelConfig& c);

// Throws (naming `source`) where partial rotary meets what the reordering does not cover: q/k norms
// of a head's features (their weights would need the same order).
void check_partial_rope(const ModelConfig& c, const std::string& source);

// order[j]: the stored feature of a head that slot j of the engines' layout holds.
std::vector<int64_t> partial_rope_order(int64_t head_dim, int64_t rope_dim, bool interleaved = false);

// A copy of `t` (a matrix of rows, or a vector of elements, of query / key heads: `first` units in
// are left as they are, then `heads` heads of head_dim units reordered by partial_rope_order, the
// rest as they are), its bytes in a buffer appended to `keep`. Throws naming the tensor when it has
// fewer units than that.
ModelTensor permute_rope_heads(const ModelTensor& t, int64_t first, int64_t heads, const ModelConfig& c,
                               std::vector<std::unique_ptr<std::byte[]>>& keep);

// The query and key parts of a Q|K|V matrix group (or its biases) reordered (copies kept in
// `keep`): ts are the group's tensors (Q, K, V, or one fused QKV). No change unless partial_rope(c).
std::vector<const ModelTensor*> permute_qkv_heads(const std::vector<const ModelTensor*>& ts, const ModelConfig& c,
                                                  std::vector<ModelTensor>& copies,
                                                  std::vector<std::unique_ptr<std::byte[]>>& keep);

}  // namespace wgc::llm
