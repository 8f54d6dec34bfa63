#include "llm/model/partial_rope.h"

#include "util/error.h"

#include <cstring>
#include <string>

namespace wgc::llm {

bool partial_rope(const ModelConfig& c) { return c.rope_dim > 0 && (c.rope_dim < c.head_dim || c.rope_interleaved); }

void check_partial_rope(const ModelConfig& c, const std::string& source) {
  if (partial_rope(c) && (c.qk_norm || c.qk_norm_whole))
    throw Error("wgc: " + source + ": partial rotary embeddings (rope_dim " + std::to_string(c.rope_dim) +
                " of head_dim " + std::to_string(c.head_dim) + ") with q/k norms are not supported");
}

std::vector<int64_t> partial_rope_order(int64_t head_dim, int64_t rope_dim, bool interleaved) {
  const int64_t half = head_dim / 2, rh = rope_dim / 2;
  std::vector<int64_t> order(static_cast<size_t>(head_dim));
  int64_t pass = rope_dim;  // the next passed-through feature
  for (int64_t j = 0; j < half; ++j) order[size_t(j)] = j < rh ? (interleaved ? 2 * j : j) : pass++;
  for (int64_t j = 0; j < half; ++j) order[size_t(half + j)] = j < rh ? (interleaved ? 2 * j + 1 : rh + j) : pass++;
  return order;
}

ModelTensor permute_rope_heads(const ModelTensor& t, int64_t first, int64_t heads, const ModelConfig& c,
                               std::vector<std::unique_ptr<std::byte[]>>& keep) {
  const int64_t hd = c.head_dim;
  // Units: the rows of a matrix, the elements of a vector (a bias).
  const bool vec = t.shape.size() <= 1;
  const int64_t units = vec ? t.numel() : t.rows();
  if (units <= 0 || t.data.size() % size_t(units) || first < 0 || heads < 0 || first + heads * hd > units)
    throw Error("wgc: tensor '" + t.name + "': " + std::to_string(units) + " rows, expected at least " +
                std::to_string(first + heads * hd) + " (" + std::to_string(heads) + " heads of " + std::to_string(hd) +
                " from row " + std::to_string(first) + ")");
  const size_t ub = t.data.size() / size_t(units);
  auto buf = std::make_unique_for_overwrite<std::byte[]>(t.data.size());
  std::memcpy(buf.get(), t.data.data(), t.data.size());
  const std::vector<int64_t> order = partial_rope_order(hd, c.rope_dim, c.rope_interleaved);
  for (int64_t h = 0; h < heads; ++h) {
    const size_t base = size_t(first + h * hd);
    for (int64_t j = 0; j < hd; ++j)
      std::memcpy(buf.get() + (base + size_t(j)) * ub, t.data.data() + (base + size_t(order[size_t(j)])) * ub, ub);
  }
  ModelTensor r = t;
  r.data = std::span<const std::byte>(buf.get(), t.data.size());
  keep.push_back(std::move(buf));
  return r;
}

std::vector<const ModelTensor*> permute_qkv_heads(const std::vector<const ModelTensor*>& ts, const ModelConfig& c,
                                                  std::vector<ModelTensor>& copies,
                                                  std::vector<std::unique_ptr<std::byte[]>>& keep) {
  if (!partial_rope(c) || ts.empty()) return ts;
  copies.clear();
  copies.reserve(2);  // pointers into it are returned
  std::vector<const ModelTensor*> out = ts;
  if (ts.size() == 1) {  // fused q | k | v
    copies.push_back(permute_rope_heads(*ts[0], 0, c.n_heads + c.n_kv_heads, c, keep));
    out[0] = &copies[0];
  } else if (ts.size() >= 2) {
    copies.push_back(permute_rope_heads(*ts[0], 0, c.n_heads, c, keep));
    copies.push_back(permute_rope_heads(*ts[1], 0, c.n_kv_heads, c, keep));
    out[0] = &copies[0];
    out[1] = &copies[1];
  }
  return out;
}

}  // namespace wgc::llm
