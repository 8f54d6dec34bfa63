#include "llm/model/llama_weights.h"

#include "cpu/llm/dequant.h"
#include "llm/model/llama_engine.h"
#include "llm/model/partial_rope.h"
#include "util/error.h"
#include "util/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace wgc::llm {
namespace {

std::optional<TensorType> gpu_type(TensorType t) {
  if (is_gpu_weight_type(t)) return t;
  return std::nullopt;
}

// The bytes of a matrix in a type the kernels read: as stored where the kernels know the type,
// else (Q4_1, Q5_*, Q8_K) dequantized once and stored as f16.
struct HostMatrix {
  TensorType type;
  std::vector<std::byte> owned;
  std::span<const std::byte> bytes;
  int64_t rows, cols;
};

// The largest buffer a kernel can bind on this device.
uint64_t device_buffer_limit(const Context& ctx) {
  return std::min(ctx.limits().max_storage_buffer_binding_size, ctx.limits().max_buffer_size);
}

// Physical memory of the host (0: unknown).
uint64_t host_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

// `bytes` of `what` fit the device's buffers (and, when `host` is set, the host's memory): checked
// before anything is converted or allocated, so a bad size is a clear error, not std::bad_alloc.
void check_fits(const Context& ctx, uint64_t bytes, const std::string& what, bool host) {
  uint64_t dev = device_buffer_limit(ctx);
  if (bytes > dev)
    throw Error("wgc: " + what + " needs " + std::to_string(bytes) +
                " bytes in one buffer, beyond the device's limit of " + std::to_string(dev) +
                " (maxStorageBufferBindingSize / maxBufferSize)");
  uint64_t mem = host_memory_bytes();
  if (host && mem && bytes > mem)
    throw Error("wgc: " + what + " needs " + std::to_string(bytes) + " bytes of host memory, beyond the " +
                std::to_string(mem) + " bytes of this machine");
}

// a * b * ... without overflow (UINT64_MAX when it would).
uint64_t product(std::initializer_list<int64_t> xs) {
  uint64_t r = 1;
  for (int64_t x : xs)
    if (x < 0 || __builtin_mul_overflow(r, uint64_t(x), &r)) return UINT64_MAX;
  return r;
}

HostMatrix host_matrix(const Context& ctx, const ModelTensor& t) {
  // What goes to the device: the stored bytes, or f16 for types converted on the host.
  uint64_t gpu_bytes = gpu_type(t.type) ? t.data.size() : product({t.rows(), t.row_length(), 2});
  check_fits(ctx, gpu_bytes,
             "tensor '" + t.name + "' (" + std::to_string(t.rows()) + " x " + std::to_string(t.row_length()) + " " +
                 std::string(to_string(t.type)) + ")",
             !gpu_type(t.type));
  HostMatrix m{TensorType::F16, {}, {}, t.rows(), t.row_length()};
  if (auto g = gpu_type(t.type)) {
    m.type = *g;
    m.bytes = t.data;
    return m;
  }
  std::vector<float> f = to_f32(t);
  m.owned.resize(f.size() * 2);
  for (size_t i = 0; i < f.size(); ++i) {
    uint16_t h = f32_to_f16(f[i]);
    std::memcpy(&m.owned[2 * i], &h, 2);
  }
  m.bytes = m.owned;
  return m;
}

// The runs [begin, end) of consecutive matrices that same(i, j) says go together (one type, one
// row length): each run is one part, so a QKV whose v has another type than q and k (llama.cpp's
// Q4_K_M) is two parts, not three.
template <class Same>
std::vector<std::pair<size_t, size_t>> fused_runs(size_t n, Same same) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && same(i, j)) ++j;
    runs.push_back({i, j});
    i = j;
  }
  return runs;
}

LinearGroup upload_group(const Context& ctx, const std::vector<const ModelTensor*>& ts,
                         const std::vector<const ModelTensor*>& biases, Progress& bar) {
  LinearGroup g;
  std::vector<HostMatrix> ms;
  for (auto* t : ts) {
    ms.push_back(host_matrix(ctx, *t));
    g.rows.push_back(t->rows());
  }
  const auto runs =
      fused_runs(ms.size(), [&](size_t a, size_t b) { return ms[a].type == ms[b].type && ms[a].cols == ms[b].cols; });
  for (auto [i, j] : runs) {
    if (j - i == 1) {
      g.parts.push_back(upload_weight(ctx, ms[i].type, ms[i].bytes, ms[i].rows, ms[i].cols));
      continue;
    }
    std::vector<std::byte> cat;
    int64_t rows = 0;
    for (size_t k = i; k < j; ++k) {
      cat.insert(cat.end(), ms[k].bytes.begin(), ms[k].bytes.end());
      rows += ms[k].rows;
    }
    g.parts.push_back(upload_weight(ctx, ms[i].type, cat, rows, ms[i].cols));
  }
  for (auto* t : ts) bar.add(t->data.size());
  if (!biases.empty()) {
    for (size_t i = 0; i < biases.size(); ++i)
      if (!biases[i]) throw Error("wgc: " + ts[i]->name + " has no bias but its siblings have");
    for (auto [i, j] : runs) {  // one bias per part: its matrices' biases back to back
      std::vector<float> cat;
      for (size_t k = i; k < j; ++k) {
        auto f = to_f32(*biases[k]);
        cat.insert(cat.end(), f.begin(), f.end());
      }
      g.biases.push_back(make_tensor(ctx, {int64_t(cat.size())}, cat));
    }
  }
  return g;
}

// The routed experts' matrices of `roles` (each expert's in that order, then the next expert's),
// stacked into one weight: expert e's rows at e * rows. One type for all (the caller checks).
GpuWeight upload_stack(const Context& ctx, const ModelFile& f, int64_t li, int64_t n_experts,
                       std::initializer_list<TensorRole> roles, int64_t& rows, Progress& bar) {
  std::vector<ModelTensor> ts;
  for (int64_t e = 0; e < n_experts; ++e)
    for (TensorRole r : roles) ts.push_back(role_tensor(f, r, li, e));
  rows = 0;
  for (TensorRole r : roles) rows += role_tensor(f, r, li, 0).rows();
  const ModelTensor& t0 = ts[0];
  uint64_t bytes = 0;
  for (const auto& t : ts) {
    if (t.type != t0.type || t.row_length() != t0.row_length())
      throw Error("wgc: " + f.path().string() + ": expert tensor '" + t.name + "' (" + std::string(to_string(t.type)) +
                  ", rows of " + std::to_string(t.row_length()) + ") differs from '" + t0.name + "' (" +
                  std::string(to_string(t0.type)) + ", rows of " + std::to_string(t0.row_length()) + ")");
    const uint64_t b = gpu_type(t.type) ? t.byte_size() : product({t.rows(), t.row_length(), 2});
    if (__builtin_add_overflow(bytes, b, &bytes)) bytes = UINT64_MAX;
  }
  check_fits(ctx, bytes, "the experts' " + std::string(to_string(*roles.begin())) + " of layer " + std::to_string(li),
             true);
  std::vector<std::byte> cat;
  cat.reserve(size_t(bytes));
  TensorType type = TensorType::F16;
  for (const auto& stored : ts) {
    const ModelTensor t = f.load(stored);  // one expert's matrix at a time (a streamed file)
    HostMatrix m = host_matrix(ctx, t);
    type = m.type;
    cat.insert(cat.end(), m.bytes.begin(), m.bytes.end());
    bar.add(t.data.size());
  }
  return upload_weight(ctx, type, cat, rows * n_experts, t0.row_length());
}

// A norm weight as the kernels multiply by it: Gemma's files (Hugging Face) store w of x * (1 + w),
// added here in f32 as transformers does (llama.cpp's converter adds it into its GGUF).
Tensor upload_norm(const Context& ctx, const ModelFile& file, const ModelTensor& t, const ModelConfig& cfg) {
  auto f = to_f32(file.load(t));
  if (cfg.norm == NormKind::RmsNormOnePlus)
    for (float& x : f) x = 1.0f + x;
  return make_tensor(ctx, {int64_t(f.size())}, f);
}

}  // namespace

int64_t LinearGroup::total_rows() const {
  int64_t r = 0;
  for (auto x : rows) r += x;
  return r;
}

LlamaWeights upload_llama_weights(const Context& ctx, const ModelFile& f, std::optional<double> rope_theta,
                                  std::optional<RopeScaling> rope_scaling, const WeightSlice& slice) {
  LlamaWeights w;
  w.cfg = f.config();
  auto& cfg = w.cfg;
  if (rope_theta) cfg.rope_theta = *rope_theta;
  if (rope_scaling) {
    cfg.rope_scaling = *rope_scaling;
    cfg.rope_freq_factors.clear();  // the file's per-frequency factors would override the scaling
  }
  w.hidden = cfg.hidden_size;
  w.nh = cfg.n_heads;
  w.nkv = cfg.n_kv_heads;
  w.hd = cfg.head_dim;
  w.ffn = cfg.ffn_size;
  w.vocab = cfg.vocab_size;
  w.eps = static_cast<float>(cfg.rms_norm_eps);
  w.qkv_dim = (w.nh + 2 * w.nkv) * w.hd;
  check_partial_rope(cfg, f.path().string());

  const int64_t end = slice.count < 0 ? cfg.n_layers : int64_t(slice.first) + slice.count;
  if (slice.first < 0 || end > cfg.n_layers || end <= slice.first)
    throw Error("wgc: " + f.path().string() + ": layers " + std::to_string(slice.first) + ".." + std::to_string(end) +
                " of a model of " + std::to_string(cfg.n_layers));
  w.first_layer = slice.first;
  Progress bar("uploading " + f.path().filename().string(), f.total_bytes(), Progress::Unit::Bytes);
  auto note_type = [&](const LinearGroup& g) {
    for (auto& p : g.parts) {
      w.types.push_back(p.type);
      w.bytes += p.gpu_bytes();
    }
  };
  if (slice.embed || (slice.output && cfg.tie_word_embeddings)) {
    const ModelTensor e = f.load(f.tensor("model.embed_tokens.weight"));
    HostMatrix m = host_matrix(ctx, e);
    w.embed = upload_weight(ctx, m.type, m.bytes, m.rows, m.cols);
    w.bytes += w.embed.gpu_bytes();
    bar.add(e.data.size());
  }
  if (slice.output && !cfg.tie_word_embeddings) {
    const ModelTensor head = f.load(f.tensor("lm_head.weight"));
    LinearGroup g = upload_group(ctx, {&head}, {}, bar);
    w.lm_head = g.parts[0];
    note_type(g);
  }
  if (slice.output) w.norm = upload_norm(ctx, f, f.tensor("model.norm.weight"), cfg);
  for (int64_t i = slice.first; i < end; ++i) {
    LlamaLayer L;
    const LayerTensors lt = f.layer(i);
    for (NormW n : kLayerNorms)
      if (const ModelTensor* t = lt[norm_tensor(n)]) L.norms[size_t(n)] = upload_norm(ctx, f, *t, cfg);
    const bool moe = cfg.layer_is_moe(i);
    const LayerMats lm = layer_mats(f, i);  // its loaded tensors and reordered copies live until the upload
    for (Mat m : kLayerMats) {
      if (lm.tensors[size_t(m)].empty()) continue;
      L.mats[size_t(m)] = upload_group(ctx, lm.tensors[size_t(m)], lm.biases[size_t(m)], bar);
      note_type(L.mat(m));
    }
    if (moe) {
      MoeWeights mw;
      static_cast<MoeShape&>(mw) = moe_shape(f, !L.mat(Mat::GateUp).parts.empty());
      if (mw.n_experts > kMoeMaxExperts)
        throw Error("wgc: " + f.path().string() + ": " + std::to_string(mw.n_experts) +
                    " experts (the GPU engines take at most " + std::to_string(kMoeMaxExperts) + ")");
      const ModelTensor router0 = f.load(role_tensor(f, TensorRole::MoeRouter, i));
      std::vector<const ModelTensor*> router = {&router0};
      ModelTensor shared_gate;
      if (mw.shared_ffn) {
        shared_gate = f.load(role_tensor(f, TensorRole::SharedExpertRouter, i));
        shared_gate.shape = {1, shared_gate.row_length()};  // GGUF stores it as a vector
        router.push_back(&shared_gate);
      }
      mw.router = upload_group(ctx, router, {}, bar);
      note_type(mw.router);
      const ModelTensor g0 = role_tensor(f, TensorRole::ExpertsGate, i, 0),
                        u0 = role_tensor(f, TensorRole::ExpertsUp, i, 0);
      auto stack = [&](std::initializer_list<TensorRole> roles, int64_t y_off) {
        MoeStack st;
        st.w = upload_stack(ctx, f, i, mw.n_experts, roles, st.rows, bar);
        st.y_off = y_off;
        w.types.push_back(st.w.type);
        w.bytes += st.w.gpu_bytes();
        return st;
      };
      if (g0.type == u0.type) {
        mw.gate_up.push_back(stack({TensorRole::ExpertsGate, TensorRole::ExpertsUp}, 0));
      } else {
        mw.gate_up.push_back(stack({TensorRole::ExpertsGate}, 0));
        mw.gate_up.push_back(stack({TensorRole::ExpertsUp}, mw.ffn));
      }
      mw.down = stack({TensorRole::ExpertsDown}, 0);
      L.moe = std::move(mw);
    }
    w.layers.push_back(std::move(L));
  }
  bar.finish();
  if (w.embed.rows > 0) w.types.push_back(w.embed.type);
  w.output_group.parts = {w.output()};
  w.output_group.rows = {w.vocab};
  return w;
}

namespace {

// Calls record(part, options) for each part of g, its rows placed after the previous parts' in y.
template <class Record>
void for_each_part(const LinearGroup& g, int64_t y_stride, bool accumulate, Record record) {
  int64_t off = 0;
  for (size_t i = 0; i < g.parts.size(); ++i) {
    LinearOptions o;
    o.y_stride = y_stride;
    o.y_offset = off;
    o.accumulate = accumulate;
    if (!g.biases.empty()) o.bias = g.biases[i];
    record(g.parts[i], o);
    off += g.parts[i].rows;
  }
}

}  // namespace

void record_linear(const LlmOps& ops, Batch& b, const LinearGroup& g, const Tensor& in, const Tensor& y, int n,
                   int64_t y_stride, bool accumulate, LinearVersion v) {
  for_each_part(g, y_stride, accumulate, [&](const auto& part, const LinearOptions& o) {
    const TensorType t = part.type;
    LinearVersion pv = v;
    if (v == LinearVersion::BatchedQ8 && t != TensorType::Q4_0 && t != TensorType::Q8_0) pv = LinearVersion::Batched;
    ops.linear(b, part, in, y, n, o, pv);
  });
}

void record_linear_q8(const LlmOps& ops, Batch& b, const LinearGroup& g, const Q8Act& in, const Tensor& y, int n,
                      int64_t y_stride, bool accumulate, bool batched) {
  for_each_part(g, y_stride, accumulate, [&](const auto& part, const LinearOptions& o) {
    if (batched)
      ops.linear_batched_q8(b, part, in, y, n, o);
    else
      ops.linear_q8(b, part, in, y, n, o);
  });
}

void record_rms_norm_linear(const LlmOps& ops, Batch& b, const LinearGroup& g, const Tensor& x, const Tensor& norm_w,
                            float eps, const Tensor& y, int64_t y_stride, bool accumulate) {
  for_each_part(g, y_stride, accumulate,
                [&](const auto& part, const LinearOptions& o) { ops.rms_norm_linear(b, x, norm_w, eps, part, y, o); });
}

void record_rms_norm_linear_q8(const LlmOps& ops, Batch& b, const LinearGroup& g, const Tensor& x, const Tensor& norm_w,
                               float eps, const Tensor& y, int64_t y_stride, bool accumulate) {
  for_each_part(g, y_stride, accumulate, [&](const auto& part, const LinearOptions& o) {
    ops.rms_norm_linear_q8(b, x, norm_w, eps, part, y, o);
  });
}

bool group_q8(const LinearGroup& g) {
  for (const auto& p : g.parts)
    if (!supports_q8(p.type)) return false;
  return !g.parts.empty();
}

bool group_batched_q8(const LinearGroup& g) {
  for (const auto& p : g.parts)
    if (p.type != TensorType::Q4_0 && p.type != TensorType::Q8_0) return false;
  return !g.parts.empty();
}

void check_llama_context(const Context& ctx, const ModelConfig& cfg, int64_t max_ctx, const std::string& file,
                         std::span<const int> layer_rows) {
  std::string what = "a context of " + std::to_string(max_ctx) + " positions (max_ctx) for " + file;
  if (max_ctx <= 0) throw Error("wgc: " + what + ": expected > 0");
  uint64_t kv_elems = product({cfg.n_layers, cfg.n_kv_heads, max_ctx, cfg.head_dim});
  if (!layer_rows.empty()) {  // the rings' rows (each at most max_ctx: no overflow past the product's)
    kv_elems = 0;
    for (int rows : layer_rows) kv_elems += product({cfg.n_kv_heads, rows, cfg.head_dim});
  }
  if (kv_elems >= (uint64_t(1) << 32))
    throw Error("wgc: " + what + " needs a KV cache of " + std::to_string(kv_elems) +
                " elements per tensor, beyond the 2^32 its offsets address; lower max_ctx");
  check_fits(ctx, product({int64_t(kv_elems), 4}), what + ": the KV cache", false);
  check_fits(ctx, product({max_ctx, cfg.head_dim, 4}), what + ": the rope table", true);
}

RopeTable make_llama_rope(const Context& c, const ModelConfig& cfg, int max_pos, int64_t layer) {
  // LongRoPE's factors by the context size (as llama.cpp; transformers picks them by the length of
  // each pass: the same while the context stays within original_max_position_embeddings).
  return make_rope_table(c, cfg.rope_inv_freq(layer, max_pos), int(cfg.head_dim), max_pos,
                         cfg.rope_attention_factor(layer));
}

namespace {

// Bytes of the data buffer upload_weight makes for a rows x cols matrix of file type t (types the
// kernels do not read become f16).
uint64_t gpu_data_bytes(TensorType t, uint64_t rows, uint64_t cols) {
  return packed_data_bytes(gpu_type(t).value_or(TensorType::F16), int64_t(rows), int64_t(cols));
}

}  // namespace

std::string gpu_fit_problem(const Context& ctx, const ModelFile& f, int max_ctx, int max_batch, bool swa_full) {
  const Limits& lim = ctx.limits();
  const uint64_t bind = lim.max_storage_buffer_binding_size, most = std::min(bind, lim.max_buffer_size);
  const ModelConfig& cfg = f.config();
  auto too_big = [&](const std::string& what, uint64_t bytes, uint64_t limit) {
    return bytes > limit ? what + " needs a buffer of " + std::to_string(bytes) + " bytes, the GPU allows " +
                               std::to_string(limit)
                         : std::string();
  };
  // A matrix group as upload_group makes it: runs of one type and row length fused.
  auto group = [&](const std::vector<const ModelTensor*>& ts) {
    std::string why;
    for (auto [i, j] : fused_runs(ts.size(), [&](size_t a, size_t b) {
           return ts[a]->type == ts[b]->type && ts[a]->row_length() == ts[b]->row_length();
         })) {
      uint64_t rows = 0;
      for (size_t k = i; k < j; ++k) rows += uint64_t(ts[k]->rows());
      if (why.empty())
        why = too_big(ts[i]->name + (j - i > 1 ? " (fused with its siblings)" : ""),
                      gpu_data_bytes(ts[i]->type, rows, uint64_t(ts[i]->row_length())), most);
    }
    return why;
  };
  std::vector<std::vector<const ModelTensor*>> groups = {{&f.tensor("model.embed_tokens.weight")}};
  if (!cfg.tie_word_embeddings) groups.push_back({&f.tensor("lm_head.weight")});
  for (int64_t i = 0; i < cfg.n_layers; ++i) {
    const LayerTensors lt = f.layer(i);
    const bool moe = cfg.layer_is_moe(i);
    for (Mat m : kLayerMats) {
      std::vector<const ModelTensor*> ts;
      for (TensorRole r : layer_mat_tensors(m, moe, cfg))
        if (lt[r]) ts.push_back(lt[r]);
      if (!ts.empty()) groups.push_back(ts);
    }
    if (moe) {  // the experts stacked: one buffer per role (gate and up together where one type)
      for (TensorRole r : {TensorRole::ExpertsGate, TensorRole::ExpertsUp, TensorRole::ExpertsDown}) {
        const ModelTensor t = role_tensor(f, r, i, 0);
        const uint64_t rows = uint64_t(t.rows()) * uint64_t(cfg.n_experts) * (r == TensorRole::ExpertsDown ? 1 : 2);
        if (std::string why = too_big("the experts' " + std::string(to_string(r)) + " of layer " + std::to_string(i),
                                      gpu_data_bytes(t.type, rows, uint64_t(t.row_length())), most);
            !why.empty())
          return why;
      }
    }
  }
  for (const auto& g : groups)
    if (std::string why = group(g); !why.empty()) return why;
  // f32 (the packed types take less), each layer's rows (kv_layer_rows: the sliding layers' rings)
  uint64_t kv_layer = 0, kv_all = 0;
  for (int rows : kv_layer_rows(cfg, max_ctx, max_batch, swa_full)) {
    const uint64_t b = uint64_t(cfg.n_kv_heads) * uint64_t(rows) * uint64_t(cfg.head_dim) * 4;
    kv_layer = std::max(kv_layer, b);
    kv_all += b;
  }
  if (std::string why = too_big("a layer of the KV cache", kv_layer, bind); !why.empty()) return why;
  if (std::string why = too_big("the KV cache", kv_all, lim.max_buffer_size); !why.empty()) return why;
  return too_big("the logits of a prompt batch", uint64_t(max_batch) * uint64_t(cfg.vocab_size) * 4, most);
}

}  // namespace wgc::llm
