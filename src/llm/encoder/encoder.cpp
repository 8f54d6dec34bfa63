#include "llm/encoder/encoder_engine.h"

#include "llm/formats/tensor_names.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace wgc::llm {

bool encoder_runs(const ModelConfig& c) { return encoder_refusal(c).empty(); }

std::string encoder_refusal(const ModelConfig& c) {
  if (!c.is_encoder())
    return std::string("a ") + std::string(to_string(c.architecture)) + " model is not a BERT-family encoder";
  if (c.causal) return "a causal BERT is not a sentence encoder";
  if (c.architecture == Architecture::Bert) {
    if (c.rope_dim > 0) return "rotary positions in a BERT are not supported (nomic-bert is its own architecture)";
    if (!c.absolute_positions) return "the encoder has no learned position embeddings";
    if (c.gated_ffn) return "a gated MLP in a BERT is not supported";
  } else if (c.architecture == Architecture::NomicBert) {
    if (c.activation != Activation::Silu || !c.gated_ffn) return "a nomic-bert without its SwiGLU MLP";
    if (c.rope_dim != c.head_dim || c.head_dim % 2) return "a nomic-bert with partial or odd rotary dimensions";
    if (c.rope_scaling.type != RopeScalingType::None || c.rope_interleaved)
      return "a nomic-bert with rope scaling or interleaved rotary pairs";
  } else {
    if (c.activation != Activation::Gelu)
      return "a ModernBERT with the " + std::string(to_string(c.activation)) + " activation (the encoder runs gelu)";
    if (c.rope_dim != c.head_dim || c.head_dim % 2) return "a ModernBERT with partial or odd rotary dimensions";
    for (const RopeScaling* s : {&c.rope_scaling, c.sliding_rope_scaling ? &*c.sliding_rope_scaling : nullptr})
      if (s && s->type != RopeScalingType::None) return "a ModernBERT with rope scaling";
  }
  if (c.n_heads % std::max<int64_t>(1, c.n_kv_heads) || c.head_dim > 256)
    return "head_dim " + std::to_string(c.head_dim) + " (at most 256) or the kv heads do not fit the encoder";
  return {};
}

std::vector<float> pool_hidden(std::span<const float> hidden, std::span<const int64_t> lengths, int64_t dim,
                               Pooling pooling, bool normalize) {
  std::vector<float> out(lengths.size() * size_t(dim), 0.f);
  std::vector<double> acc(static_cast<size_t>(dim));
  int64_t row = 0;
  for (size_t s = 0; s < lengths.size(); ++s) {
    const int64_t n = lengths[s];
    if (n <= 0) throw Error("wgc: pool_hidden: sequence " + std::to_string(s) + " is empty");
    if (uint64_t(row + n) * uint64_t(dim) > hidden.size())
      throw Error("wgc: pool_hidden: the sequences hold more rows than the " +
                  std::to_string(hidden.size() / size_t(dim)) + " hidden rows given");
    std::fill(acc.begin(), acc.end(), 0.0);
    if (pooling == Pooling::Cls || pooling == Pooling::Last) {
      const float* r = &hidden[size_t((row + (pooling == Pooling::Cls ? 0 : n - 1)) * dim)];
      for (int64_t i = 0; i < dim; ++i) acc[size_t(i)] = r[i];
    } else {
      for (int64_t t = 0; t < n; ++t)
        for (int64_t i = 0; i < dim; ++i) acc[size_t(i)] += hidden[size_t((row + t) * dim + i)];
      for (double& v : acc) v /= double(n);
    }
    double norm = 0;
    for (double v : acc) norm += v * v;
    norm = std::sqrt(norm);
    // sentence-transformers' Normalize: x / max(||x||, 1e-12).
    const double div = normalize ? std::max(norm, 1e-12) : 1.0;
    for (int64_t i = 0; i < dim; ++i) out[s * size_t(dim) + size_t(i)] = float(acc[size_t(i)] / div);
    row += n;
  }
  return out;
}

PositionTable position_table(const ModelFile& m) {
  const ModelConfig& c = m.config();
  PositionTable t;
  if (c.architecture == Architecture::NomicBert) {
    // No positions (rotary): the token-type 0 row for every token, as llama.cpp and nomic's model.
    if (auto types = find_role(m, TensorRole::TokenTypes)) {
      t.rows = to_f32(tensor_rows(*types, 0, 1));
      t.n_rows = 1;
      t.by_position = false;
    }
    return t;
  }
  if (!c.absolute_positions) return t;
  const ModelTensor& pos = role_tensor(m, TensorRole::PositionEmbd);
  t.n_rows = pos.rows();
  t.rows = to_f32(pos);
  if (auto types = find_role(m, TensorRole::TokenTypes)) {
    // Only row 0 (token type 0) is added: view the first row alone.
    ModelTensor row0 = tensor_rows(*types, 0, 1);
    std::vector<float> ty = to_f32(row0);
    for (int64_t r = 0; r < t.n_rows; ++r)
      for (int64_t i = 0; i < c.hidden_size; ++i) t.rows[size_t(r * c.hidden_size + i)] += ty[size_t(i)];
  }
  return t;
}

EncoderTensors encoder_tensors(const ModelFile& m) {
  const ModelConfig& c = m.config();
  const bool modern = c.architecture == Architecture::ModernBert, nomic = c.architecture == Architecture::NomicBert;
  EncoderTensors e;
  // Reserve so that the pointers into `held` stay valid.
  e.held.reserve(size_t(4 + 18 * c.n_layers));
  auto hold = [&](ModelTensor t) {
    e.held.push_back(std::move(t));
    return &e.held.back();
  };
  auto need = [&](TensorRole r, int64_t l = -1) { return hold(role_tensor(m, r, l)); };
  auto opt = [&](TensorRole r, int64_t l) -> const ModelTensor* {
    auto t = find_role(m, r, l);
    return t ? hold(*t) : nullptr;
  };
  e.token_embd = need(TensorRole::TokenEmbd);
  e.embd_norm = need(TensorRole::EmbdNorm);
  e.embd_norm_b = modern ? nullptr : need(TensorRole::EmbdNormBias);
  e.final_norm = modern ? need(TensorRole::OutputNorm) : nullptr;
  const int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    EncoderLayerTensors L{};
    L.o = need(TensorRole::AttnOut, l);
    L.down = need(TensorRole::FfnDown, l);
    if (modern) {
      ModelTensor qkv = role_tensor(m, TensorRole::AttnQkv, l), gu = role_tensor(m, TensorRole::FfnGateUp, l);
      if (qkv.rows() != q + 2 * kv || gu.rows() != 2 * c.ffn_size)
        throw Error(m.path().string() + ": layer " + std::to_string(l) + "'s Wqkv has " + std::to_string(qkv.rows()) +
                    " rows (expected " + std::to_string(q + 2 * kv) + ") and Wi " + std::to_string(gu.rows()) +
                    " (expected " + std::to_string(2 * c.ffn_size) + ")");
      L.q = hold(tensor_rows(qkv, 0, q));
      L.k = hold(tensor_rows(qkv, q, kv));
      L.v = hold(tensor_rows(qkv, q + kv, kv));
      L.gate = hold(tensor_rows(gu, 0, c.ffn_size));  // transformers: act(input) * gate, input first
      L.up = hold(tensor_rows(gu, c.ffn_size, c.ffn_size));
      L.norm1 = l == 0 ? opt(TensorRole::AttnNorm, l) : need(TensorRole::AttnNorm, l);  // layer 0: identity
      L.norm2 = need(TensorRole::FfnNorm, l);
      e.layers.push_back(L);
      continue;
    }
    if (nomic) {
      ModelTensor qkv = role_tensor(m, TensorRole::AttnQkv, l);
      if (qkv.rows() != q + 2 * kv)
        throw Error(m.path().string() + ": layer " + std::to_string(l) + "'s Wqkv has " + std::to_string(qkv.rows()) +
                    " rows (expected " + std::to_string(q + 2 * kv) + ")");
      L.q = hold(tensor_rows(qkv, 0, q));
      L.k = hold(tensor_rows(qkv, q, kv));
      L.v = hold(tensor_rows(qkv, q + kv, kv));
      L.gate = need(TensorRole::FfnGate, l);  // fc12, through SiLU
    } else {
      L.q = need(TensorRole::AttnQ, l);
      L.k = need(TensorRole::AttnK, l);
      L.v = need(TensorRole::AttnV, l);
    }
    L.up = need(TensorRole::FfnUp, l);
    L.qb = opt(TensorRole::AttnQBias, l);
    L.kb = opt(TensorRole::AttnKBias, l);
    L.vb = opt(TensorRole::AttnVBias, l);
    L.ob = opt(TensorRole::AttnOutBias, l);
    L.upb = opt(TensorRole::FfnUpBias, l);
    L.downb = opt(TensorRole::FfnDownBias, l);
    L.norm1 = need(TensorRole::AttnOutNorm, l);
    L.norm1_b = need(TensorRole::AttnOutNormBias, l);
    L.norm2 = need(TensorRole::LayerOutNorm, l);
    L.norm2_b = need(TensorRole::LayerOutNormBias, l);
    e.layers.push_back(L);
  }
  return e;
}

EncoderShape encoder_shape(const ModelConfig& c) {
  EncoderShape s;
  s.hidden = c.hidden_size;
  s.ffn = c.ffn_size;
  s.n_layers = c.n_layers;
  s.eps = float(c.rms_norm_eps);
  s.pre_norm = c.architecture == Architecture::ModernBert;
  s.gated = c.architecture != Architecture::Bert;
  EncoderAttnDims& d = s.attn;
  d.n_heads = uint32_t(c.n_heads);
  d.n_kv_heads = uint32_t(c.n_kv_heads);
  d.head_dim = uint32_t(c.head_dim);
  d.stride = uint32_t(s.qkv_cols());
  d.k_off = uint32_t(s.q_cols());
  d.v_off = uint32_t(s.q_cols() + int64_t(d.n_kv_heads) * d.head_dim);
  d.o_stride = uint32_t(s.q_cols());
  d.scale = float(c.attention_scale());
  for (int64_t l = 0; l < c.n_layers; ++l) {
    s.half_window.push_back(c.layer_is_sliding(l) ? *c.sliding_window / 2 : -1);
    s.rope.push_back(c.rope_dim > 0 ? 0 : -1);
  }
  if (c.rope_dim > 0) {
    s.inv_freq.push_back(c.rope_inv_freq(-1));
    // The local layers' own base (ModernBERT's local_rope_theta) as a second table.
    if (int64_t l0 = c.sliding_rope_layer(); l0 >= 0) {
      s.inv_freq.push_back(c.rope_inv_freq(l0));
      for (int64_t l = 0; l < c.n_layers; ++l)
        if (c.layer_is_sliding(l)) s.rope[size_t(l)] = 1;
    }
    s.max_positions = c.max_position_embeddings > 0 ? c.max_position_embeddings : 8192;
  }
  return s;
}

std::vector<uint32_t> window_ranges(std::span<const uint32_t> ranges, int64_t half) {
  std::vector<uint32_t> out(ranges.begin(), ranges.end());
  for (size_t t = 0; 2 * t + 1 < out.size(); ++t) {
    const int64_t lo = std::max<int64_t>(out[2 * t], int64_t(t) - half);
    const int64_t hi = std::min<int64_t>(out[2 * t + 1], int64_t(t) + half + 1);
    out[2 * t] = uint32_t(lo);
    out[2 * t + 1] = uint32_t(hi);
  }
  return out;
}

EncoderModel::EncoderModel(const ModelFile& file, std::optional<Context> ctx, EncoderOptions options) {
  if (std::string why = encoder_refusal(file.config()); !why.empty()) throw Error(file.path().string() + ": " + why);
  if (options.max_batch_tokens < 1) throw Error("wgc: EncoderOptions::max_batch_tokens must be >= 1");
  e_ = ctx ? make_encoder_gpu(file, *ctx) : make_encoder_cpu(file, options);
  e_->c = file.config();
  max_batch_ = options.max_batch_tokens;
  // Learned positions: the table's rows; rotary: the model's positions.
  max_tokens_ = file.config().absolute_positions
                    ? role_tensor(file, TensorRole::PositionEmbd).rows() - file.config().position_offset
                    : encoder_shape(file.config()).max_positions;
}

EncoderModel::~EncoderModel() = default;
EncoderModel::EncoderModel(EncoderModel&&) noexcept = default;

const ModelConfig& EncoderModel::config() const { return e_->c; }
bool EncoderModel::on_gpu() const { return e_->on_gpu(); }
int64_t EncoderModel::dim() const { return e_->c.hidden_size; }
int64_t EncoderModel::max_tokens() const { return max_tokens_; }

void EncoderModel::check(std::span<const std::vector<int32_t>> seqs) const {
  const ModelConfig& c = e_->c;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto& q = seqs[s];
    if (q.empty()) throw Error("wgc: embedding input " + std::to_string(s) + " has no tokens");
    if (int64_t(q.size()) > max_tokens_)
      throw LimitError("wgc: embedding input " + std::to_string(s) + " has " + std::to_string(q.size()) +
                       " tokens, more than the model's " + std::to_string(max_tokens_) + " positions");
    for (int32_t id : q)
      if (id < 0 || id >= c.vocab_size)
        throw Error("wgc: embedding input " + std::to_string(s) + ": token id " + std::to_string(id) +
                    " is outside the vocabulary (0.." + std::to_string(c.vocab_size - 1) + ")");
  }
}

void EncoderModel::passes(std::span<const std::vector<int32_t>> seqs,
                          const std::function<void(size_t, size_t, std::span<const float>)>& done) {
  check(seqs);
  const ModelConfig& c = e_->c;
  const int64_t H = c.hidden_size;
  // Whole sequences per pass, at most max_batch_ tokens (a longer sequence alone).
  std::vector<int32_t> ids;
  std::vector<uint32_t> pos, ranges;
  std::vector<float> out;
  for (size_t s = 0; s < seqs.size();) {
    ids.clear();
    pos.clear();
    ranges.clear();
    size_t e = s;
    while (e < seqs.size() && (e == s || ids.size() + seqs[e].size() <= size_t(max_batch_))) {
      const uint32_t b = uint32_t(ids.size()), n = uint32_t(seqs[e].size());
      for (uint32_t t = 0; t < n; ++t) {
        ids.push_back(seqs[e][t]);
        pos.push_back(uint32_t(c.position_offset) + t);
        ranges.push_back(b);
        ranges.push_back(b + n);
      }
      ++e;
    }
    out.resize(ids.size() * size_t(H));
    e_->forward(ids, pos, ranges, out);
    done(s, e, out);
    s = e;
  }
}

std::vector<float> EncoderModel::hidden(std::span<const std::vector<int32_t>> seqs) {
  check(seqs);
  uint64_t total = 0;
  for (const auto& q : seqs) total += q.size();
  std::vector<float> out;
  out.reserve(total * uint64_t(dim()));
  passes(seqs, [&](size_t, size_t, std::span<const float> h) { out.insert(out.end(), h.begin(), h.end()); });
  return out;
}

std::vector<float> EncoderModel::embed(std::span<const std::vector<int32_t>> seqs, bool normalize,
                                       std::optional<Pooling> pooling) {
  // Pooled pass by pass: the hidden states of one pass at a time (max_batch_tokens rows) are held.
  std::vector<float> out;
  out.reserve(seqs.size() * size_t(dim()));
  passes(seqs, [&](size_t s0, size_t s1, std::span<const float> h) {
    std::vector<int64_t> lengths;
    for (size_t s = s0; s < s1; ++s) lengths.push_back(int64_t(seqs[s].size()));
    std::vector<float> p = pool_hidden(h, lengths, dim(), pooling.value_or(e_->c.pooling), normalize);
    out.insert(out.end(), p.begin(), p.end());
  });
  return out;
}

}  // namespace wgc::llm
