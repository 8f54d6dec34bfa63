#include "llm/encoder/embedding_model.h"

#include "llm/encoder/encoder.h"
#include "llm/formats/model_file.h"
#include "llm/model/llama.h"
#include "llm/tokenizer/tokenizer.h"
#include "util/error.h"

#include <cmath>

namespace wgc::llm {

namespace {

// The decoders' embedding context: the model's positions, at most this many (a KV cache of them).
constexpr int kMaxDecoderEmbedTokens = 8192;

}  // namespace

std::vector<int32_t> embedding_tokens(const Tokenizer& tok, const ModelConfig& c, std::string_view text) {
  std::vector<int32_t> ids = tok.encode(text, true);
  if (c.is_encoder() || c.pooling != Pooling::Last) return ids;
  std::optional<int32_t> end = tok.token_id("<|endoftext|>");
  if (!end) end = tok.eos_id();
  if (end && (ids.empty() || ids.back() != *end)) ids.push_back(*end);
  return ids;
}

std::string embedding_refusal(const ModelConfig& c) {
  if (c.is_encoder()) return encoder_refusal(c);
  if (!c.embedding_model)
    return std::string("a ") + std::string(to_string(c.architecture)) +
           " language model, not an embedding model (no pooling in its files)";
  if (c.pooling != Pooling::Last) return "a decoder embedding model pooled other than by its last token";
  if (!engine_runs(c)) return engine_refusal(c);
  return {};
}

struct EmbeddingModel::Impl {
  ModelConfig c;
  std::optional<EncoderModel> enc;
  std::optional<LlamaModel> dec;
};

EmbeddingModel::EmbeddingModel(const ModelFile& file, std::optional<Context> ctx, EmbeddingOptions o)
    : impl_(std::make_unique<Impl>()) {
  if (std::string why = embedding_refusal(file.config()); !why.empty()) throw Error(file.path().string() + ": " + why);
  impl_->c = file.config();
  if (impl_->c.is_encoder()) {
    EncoderOptions eo;
    eo.threads = o.threads;
    eo.progress = o.progress;
    impl_->enc.emplace(file, ctx, eo);
    return;
  }
  EngineOptions eo;
  const int64_t ctx_len = impl_->c.max_position_embeddings > 0 ? impl_->c.max_position_embeddings : 4096;
  eo.max_ctx = int(std::min<int64_t>(ctx_len, kMaxDecoderEmbedTokens));
  eo.threads = o.threads;
  eo.progress = o.progress;
  eo.device = ctx ? Device::Gpu : Device::Cpu;
  impl_->dec.emplace(ctx, file, eo);
}

EmbeddingModel::~EmbeddingModel() = default;
EmbeddingModel::EmbeddingModel(EmbeddingModel&&) noexcept = default;

const ModelConfig& EmbeddingModel::config() const { return impl_->c; }
bool EmbeddingModel::on_gpu() const { return impl_->enc ? impl_->enc->on_gpu() : impl_->dec->device() == Device::Gpu; }
bool EmbeddingModel::is_decoder() const { return impl_->dec.has_value(); }
int64_t EmbeddingModel::dim() const { return impl_->c.hidden_size; }
int64_t EmbeddingModel::max_tokens() const { return impl_->enc ? impl_->enc->max_tokens() : impl_->dec->max_ctx(); }

std::vector<float> EmbeddingModel::embed(std::span<const std::vector<int32_t>> seqs, bool normalize,
                                         std::optional<Pooling> pooling) {
  if (impl_->enc) return impl_->enc->embed(seqs, normalize, pooling);
  if (pooling && *pooling != Pooling::Last)
    throw Error("wgc: a decoder embedding model pools its last token only (" + std::string(to_string(*pooling)) +
                " asked)");
  LlamaModel& m = *impl_->dec;
  const int64_t H = dim();
  for (size_t s = 0; s < seqs.size(); ++s) {
    if (seqs[s].empty()) throw Error("wgc: embedding input " + std::to_string(s) + " has no tokens");
    if (int64_t(seqs[s].size()) > max_tokens())
      throw LimitError("wgc: embedding input " + std::to_string(s) + " has " + std::to_string(seqs[s].size()) +
                       " tokens, more than the " + std::to_string(max_tokens()) + " this model takes");
  }
  std::vector<float> out;
  out.reserve(seqs.size() * size_t(H));
  for (const auto& s : seqs) {
    m.rewind(0);
    std::vector<float> h = m.last_hidden(s);
    double n = 0;
    for (float v : h) n += double(v) * v;
    const double div = normalize ? std::max(std::sqrt(n), 1e-12) : 1.0;
    for (float v : h) out.push_back(float(v / div));
  }
  m.rewind(0);
  return out;
}

}  // namespace wgc::llm
