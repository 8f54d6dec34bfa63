#include "llm/encoder/encoder_engine.h"

#include "llm/formats/tensor_names.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace wgc::llm {

bool encoder_runs(const ModelConfig& c) { return encoder_refusal(c).empty(); }

std::string encoder_refusal(const ModelConfig& c) {
  if (c.architecture != Architecture::Bert)
    return std::string("a ") + std::string(to_string(c.architecture)) + " model is not a BERT-family encoder";
  if (c.causal) return "a causal BERT is not a sentence encoder";
  if (c.rope_dim > 0) return "rotary positions in a BERT (nomic-bert) are not supported yet";
  if (!c.absolute_positions) return "the encoder has no learned position embeddings";
  if (c.gated_ffn) return "a gated MLP in a BERT is not supported";
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
  EncoderTensors e;
  // Reserve so that the pointers into `held` stay valid.
  e.held.reserve(size_t(3 + 16 * c.n_layers));
  auto need = [&](TensorRole r, int64_t l = -1) {
    e.held.push_back(role_tensor(m, r, l));
    return &e.held.back();
  };
  auto opt = [&](TensorRole r, int64_t l) -> const ModelTensor* {
    auto t = find_role(m, r, l);
    if (!t) return nullptr;
    e.held.push_back(*t);
    return &e.held.back();
  };
  e.token_embd = need(TensorRole::TokenEmbd);
  e.embd_norm = need(TensorRole::EmbdNorm);
  e.embd_norm_b = need(TensorRole::EmbdNormBias);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    EncoderLayerTensors L{};
    L.q = need(TensorRole::AttnQ, l);
    L.k = need(TensorRole::AttnK, l);
    L.v = need(TensorRole::AttnV, l);
    L.o = need(TensorRole::AttnOut, l);
    L.up = need(TensorRole::FfnUp, l);
    L.down = need(TensorRole::FfnDown, l);
    L.qb = opt(TensorRole::AttnQBias, l);
    L.kb = opt(TensorRole::AttnKBias, l);
    L.vb = opt(TensorRole::AttnVBias, l);
    L.ob = opt(TensorRole::AttnOutBias, l);
    L.upb = opt(TensorRole::FfnUpBias, l);
    L.downb = opt(TensorRole::FfnDownBias, l);
    L.attn_norm = need(TensorRole::AttnOutNorm, l);
    L.attn_norm_b = need(TensorRole::AttnOutNormBias, l);
    L.out_norm = need(TensorRole::LayerOutNorm, l);
    L.out_norm_b = need(TensorRole::LayerOutNormBias, l);
    e.layers.push_back(L);
  }
  return e;
}

EncoderModel::EncoderModel(const ModelFile& file, std::optional<Context> ctx, EncoderOptions options) {
  if (std::string why = encoder_refusal(file.config()); !why.empty()) throw Error(file.path().string() + ": " + why);
  if (options.max_batch_tokens < 1) throw Error("wgc: EncoderOptions::max_batch_tokens must be >= 1");
  e_ = ctx ? make_encoder_gpu(file, *ctx, options) : make_encoder_cpu(file, options);
  e_->c = file.config();
  max_batch_ = options.max_batch_tokens;
  max_tokens_ = role_tensor(file, TensorRole::PositionEmbd).rows() - file.config().position_offset;
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
