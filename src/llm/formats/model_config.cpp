// ModelConfig's own rules: names, the per-layer questions, rope frequencies, validation. The readers
// are model_config_gguf.cpp and model_config_hf.cpp.
#include "llm/formats/model_config.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace wgc::llm {

std::string_view to_string(Architecture a) {
  switch (a) {
    case Architecture::Llama: return "llama";
    case Architecture::Mistral: return "mistral";
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    case Architecture::Gemma2: return "gemma2";
    case Architecture::Gemma3: return "gemma3";
    case Architecture::Phi3: return "phi3";
    case Architecture::Glm4: return "glm4";
    case Architecture::Mixtral: return "mixtral";
    case Architecture::Qwen2Moe: return "qwen2moe";
    case Architecture::Qwen3Moe: return "qwen3moe";
    case Architecture::Olmoe: return "olmoe";
    case Architecture::Bert: return "bert";
    case Architecture::ModernBert: return "modern-bert";
    case Architecture::NomicBert: return "nomic-bert";
  }
  return "?";
}

std::string_view to_string(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::None: return "none";
    case RopeScalingType::Linear: return "linear";
    case RopeScalingType::Llama3: return "llama3";
    case RopeScalingType::Yarn: return "yarn";
    case RopeScalingType::LongRope: return "longrope";
  }
  return "?";
}

std::string_view to_string(NormKind k) {
  switch (k) {
    case NormKind::RmsNorm: return "rms";
    case NormKind::RmsNormOnePlus: return "rms_one_plus";
    case NormKind::LayerNorm: return "layer";
  }
  return "?";
}

std::string_view to_string(NormPlacement p) {
  switch (p) {
    case NormPlacement::Pre: return "pre";
    case NormPlacement::Sandwich: return "sandwich";
    case NormPlacement::Post: return "post";
  }
  return "?";
}

std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::Silu: return "silu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::Gelu: return "gelu";
  }
  return "?";
}

std::string_view to_string(Pooling p) {
  switch (p) {
    case Pooling::None: return "none";
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
  }
  return "?";
}

namespace {

// The decoder architectures the engines run (a LayerNorm model of these families aside).
bool engine_architecture(Architecture a) {
  switch (a) {
    case Architecture::Llama:
    case Architecture::Mistral:
    case Architecture::Qwen2:
    case Architecture::Qwen3:
    case Architecture::Gemma2:
    case Architecture::Gemma3:
    // Mixtures of experts: the plan's Moe step (the router on the GPU, experts stacked); OLMoE's
    // q/k norms over all heads at once are the HeadNorm step with one head.
    case Architecture::Mixtral:
    case Architecture::Qwen2Moe:
    case Architecture::Qwen3Moe:
    case Architecture::Olmoe:
    // Phi-3: fused qkv / gate_up loaded as stored, partial rotary by reordered q/k rows
    // (llm/model/partial_rope.h), LongRoPE's factors chosen by the engine's context.
    case Architecture::Phi3:
    // GLM-4: Gemma's sandwich norms, Phi-3's fused gate_up and reordered rope rows (its rotated
    // pairs are interleaved), Qwen2's q/k/v biases: steps the plan has.
    case Architecture::Glm4: return true;
    default: return false;
  }
}

}  // namespace

// The engines' rope tables carry the scaled frequencies and YaRN's / LongRoPE's attention factor
// (the sliding layers' table their own base: Gemma 3). A decoder embedding model (Qwen3-Embedding)
// runs too: its embedding is LlamaModel::last_hidden.
bool engine_runs(const ModelConfig& c) { return engine_architecture(c.architecture) && c.norm != NormKind::LayerNorm; }

std::string engine_refusal(const ModelConfig& c) {
  if (engine_runs(c)) return "";
  const std::string arch(to_string(c.architecture));
  if (!engine_architecture(c.architecture))
    return arch + (c.embedding_model ? " (embeddings: wgc embed)" : "") +
           " models are read (wgc inspect) but not run yet: the engines run llama, mistral, qwen2, qwen3, gemma2, "
           "gemma3, phi3, glm4, mixtral, qwen2moe, qwen3moe and olmoe language models";
  return arch + " with LayerNorm is read (wgc inspect) but not run yet";
}

bool ModelConfig::layer_is_moe(int64_t layer) const {
  if (!is_moe()) return false;
  return !(layer >= 0 && size_t(layer) < dense_layers.size() && dense_layers[size_t(layer)]);
}

bool ModelConfig::layer_is_sliding(int64_t layer) const {
  if (!sliding_window) return false;
  if (sliding_layers.empty()) return true;
  return layer >= 0 && size_t(layer) < sliding_layers.size() && sliding_layers[size_t(layer)];
}

double ModelConfig::attention_scale() const {
  return 1.0 / std::sqrt(query_pre_attn_scalar > 0 ? query_pre_attn_scalar : double(head_dim));
}

double ModelConfig::layer_rope_theta(int64_t layer) const {
  return layer >= 0 && layer_is_sliding(layer) && sliding_rope_theta ? *sliding_rope_theta : rope_theta;
}

const RopeScaling& ModelConfig::layer_rope_scaling(int64_t layer) const {
  return layer >= 0 && layer_is_sliding(layer) && sliding_rope_scaling ? *sliding_rope_scaling : rope_scaling;
}

int64_t ModelConfig::sliding_rope_layer() const {
  if (!sliding_rope_theta && !sliding_rope_scaling) return -1;
  for (int64_t l = 0; l < n_layers; ++l)
    if (layer_is_sliding(l)) return l;
  return -1;
}

std::vector<double> ModelConfig::rope_inv_freq(int64_t layer, int64_t seq_len) const {
  int64_t dim = rope_dim ? rope_dim : head_dim;
  const double theta = layer_rope_theta(layer);
  const RopeScaling& s = layer_rope_scaling(layer);
  std::vector<double> f(size_t(std::max<int64_t>(dim / 2, 0)));
  for (size_t i = 0; i < f.size(); ++i) f[i] = std::pow(theta, -double(2 * i) / double(dim));
  // GGUF's llama3 factors belong to the global layers (no architecture with them has other layers).
  if (!rope_freq_factors.empty() && &s == &rope_scaling) {
    for (size_t i = 0; i < f.size() && i < rope_freq_factors.size(); ++i) f[i] /= double(rope_freq_factors[i]);
    return f;
  }
  if (s.type == RopeScalingType::Linear) {
    for (double& x : f) x /= s.factor;
  } else if (s.type == RopeScalingType::Llama3) {
    // transformers' _compute_llama3_parameters.
    double old_ctx = double(s.original_max_position_embeddings);
    double low_wavelen = old_ctx / s.low_freq_factor;
    double high_wavelen = old_ctx / s.high_freq_factor;
    for (double& x : f) {
      double wavelen = 2 * std::numbers::pi / x;
      if (wavelen > low_wavelen) {
        x /= s.factor;
      } else if (wavelen >= high_wavelen) {
        double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        x = (1 - smooth) * x / s.factor + smooth * x;
      }
    }
  } else if (s.type == RopeScalingType::Yarn) {
    // transformers' _compute_yarn_parameters: a ramp between interpolated (x / factor) and original
    // frequencies over the dimensions whose rotation count at the original context lies between
    // beta_slow and beta_fast.
    const double orig = double(s.original_max_position_embeddings);
    auto correction_dim = [&](double rotations) {
      return double(dim) * std::log(orig / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
    };
    double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
    if (s.yarn_truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, double(dim - 1));
    if (low == high) high += 0.001;
    for (size_t i = 0; i < f.size(); ++i) {
      double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
      double extrapolation = 1 - ramp;  // weight of the original frequency
      f[i] = f[i] / s.factor * (1 - extrapolation) + f[i] * extrapolation;
    }
  } else if (s.type == RopeScalingType::LongRope) {
    bool use_long = seq_len > s.original_max_position_embeddings;
    const std::vector<double>& ext = use_long ? s.long_factor : s.short_factor;
    for (size_t i = 0; i < f.size() && i < ext.size(); ++i) f[i] /= ext[i];
  }
  return f;
}

double ModelConfig::rope_attention_factor(int64_t layer) const {
  const RopeScaling& s = layer_rope_scaling(layer);
  if (s.attention_factor) return *s.attention_factor;
  if (s.type == RopeScalingType::Yarn) return s.factor <= 1 ? 1.0 : 0.1 * std::log(s.factor) + 1.0;
  if (s.type == RopeScalingType::LongRope) {
    if (s.factor <= 1 || s.original_max_position_embeddings <= 1) return 1.0;
    return std::sqrt(1 + std::log(s.factor) / std::log(double(s.original_max_position_embeddings)));
  }
  return 1.0;
}

void ModelConfig::validate(const std::string& source) const {
  auto need = [&](int64_t v, const char* what) {
    if (v <= 0) throw Error(source + ": " + what + " is " + std::to_string(v) + ", expected > 0");
  };
  need(vocab_size, "vocab_size");
  need(hidden_size, "hidden_size");
  need(n_layers, "the layer count");
  need(n_heads, "the head count");
  need(n_kv_heads, "the KV head count");
  need(head_dim, "head_dim");
  need(ffn_size, "the FFN size");
  if (n_layers > 100000 || n_heads > 100000 || head_dim > 100000)
    throw Error(source + ": absurd sizes (layers " + std::to_string(n_layers) + ", heads " + std::to_string(n_heads) +
                ", head_dim " + std::to_string(head_dim) + ")");
  // Sizes, counts and positions reach the kernels as 32-bit integers.
  auto fits = [&](int64_t v, const char* what) {
    if (v < 0 || v > INT32_MAX)
      throw Error(source + ": " + what + " is " + std::to_string(v) + ", expected 0.." + std::to_string(INT32_MAX));
  };
  fits(vocab_size, "vocab_size");
  fits(hidden_size, "hidden_size");
  fits(ffn_size, "the FFN size");
  fits(max_position_embeddings, "the context length (max_position_embeddings)");
  fits(rope_scaling.original_max_position_embeddings, "rope scaling's original_max_position_embeddings");
  if (sliding_window) fits(*sliding_window, "sliding_window");
  if (sliding_window && *sliding_window <= 0)
    throw Error(source + ": sliding_window is " + std::to_string(*sliding_window) + ", expected > 0");
  if (n_heads * head_dim > INT32_MAX || (n_heads + 2 * n_kv_heads) * head_dim > INT32_MAX)
    throw Error(source + ": " + std::to_string(n_heads) + " heads of " + std::to_string(head_dim) +
                " exceed 32-bit sizes");
  if (n_heads % n_kv_heads)
    throw Error(source + ": " + std::to_string(n_heads) + " heads is not a multiple of " + std::to_string(n_kv_heads) +
                " KV heads");
  const bool has_rope = !(architecture == Architecture::Bert);
  if (has_rope && (rope_dim <= 0 || rope_dim % 2 || rope_dim > head_dim))
    throw Error(source + ": rope dimension " + std::to_string(rope_dim) + " is not even and <= head_dim " +
                std::to_string(head_dim));
  if (!(rope_theta > 0)) throw Error(source + ": rope theta " + std::to_string(rope_theta) + " is not positive");
  if (sliding_rope_theta && !(*sliding_rope_theta > 0))
    throw Error(source + ": the sliding layers' rope theta " + std::to_string(*sliding_rope_theta) +
                " is not positive");
  // Special tokens index the embedding and the logits: an id past the vocabulary reads other memory.
  auto token = [&](int64_t id, const char* what) {
    if (id < 0 || id >= vocab_size)
      throw Error(source + ": " + what + " " + std::to_string(id) + " is not a token id (the vocabulary has " +
                  std::to_string(vocab_size) + " tokens)");
  };
  if (bos_token_id) token(*bos_token_id, "bos_token_id");
  for (int32_t id : eos_token_ids) token(id, "eos_token_id");
  if (!(rms_norm_eps >= 0)) throw Error(source + ": rms_norm_eps is negative");
  for (const RopeScaling* s : {&rope_scaling, sliding_rope_scaling ? &*sliding_rope_scaling : nullptr}) {
    if (!s) continue;
    if (s->type != RopeScalingType::None && !(s->factor > 0))
      throw Error(source + ": rope scaling factor " + std::to_string(s->factor) + " is not positive");
    // (GGUF files carry llama3 scaling as per-frequency factors instead: nothing else to check then.)
    if (s->type == RopeScalingType::Llama3 && rope_freq_factors.empty() &&
        (s->original_max_position_embeddings <= 0 || !(s->high_freq_factor > s->low_freq_factor) ||
         !(s->low_freq_factor > 0)))
      throw Error(source +
                  ": llama3 rope scaling needs original_max_position_embeddings > 0 and high_freq_factor > "
                  "low_freq_factor > 0");
    if (s->type == RopeScalingType::Yarn &&
        (s->original_max_position_embeddings <= 0 || !(s->beta_fast > 0) || !(s->beta_slow > 0)))
      throw Error(source + ": yarn rope scaling needs original_max_position_embeddings > 0 and positive betas");
    if (s->type == RopeScalingType::LongRope) {
      const size_t half = size_t(rope_dim / 2);
      if (s->short_factor.size() != half || s->long_factor.size() != half)
        throw Error(source + ": longrope needs rope_dim / 2 = " + std::to_string(half) +
                    " short and long factors, got " + std::to_string(s->short_factor.size()) + " and " +
                    std::to_string(s->long_factor.size()));
      for (const auto* v : {&s->short_factor, &s->long_factor})
        for (double x : *v)
          if (!(x > 0)) throw Error(source + ": a longrope factor is " + std::to_string(x) + ", expected > 0");
    }
  }
  if (!(query_pre_attn_scalar >= 0)) throw Error(source + ": query_pre_attn_scalar is negative");
  if (!(attn_logit_softcap >= 0) || !(final_logit_softcap >= 0) || !std::isfinite(attn_logit_softcap) ||
      !std::isfinite(final_logit_softcap))
    throw Error(source + ": soft-caps must be finite and >= 0 (attention " + std::to_string(attn_logit_softcap) +
                ", final " + std::to_string(final_logit_softcap) + ")");
  if (!(embedding_scale > 0) || !std::isfinite(embedding_scale))
    throw Error(source + ": embedding scale " + std::to_string(embedding_scale) + " is not positive");
  if (!sliding_layers.empty() && int64_t(sliding_layers.size()) != n_layers)
    throw Error(source + ": the sliding-window pattern has " + std::to_string(sliding_layers.size()) +
                " layers, the model " + std::to_string(n_layers));
  if (is_moe()) {
    if (n_experts > 4096 || n_experts_used <= 0 || n_experts_used > n_experts)
      throw Error(source + ": " + std::to_string(n_experts_used) + " experts used of " + std::to_string(n_experts) +
                  ", expected 1..experts (at most 4096)");
    need(expert_ffn_size, "the expert FFN size");
    fits(expert_ffn_size, "the expert FFN size");
    fits(shared_expert_ffn_size, "the shared expert FFN size");
    if (!dense_layers.empty() && int64_t(dense_layers.size()) != n_layers)
      throw Error(source + ": the dense-layer list has " + std::to_string(dense_layers.size()) + " layers, the model " +
                  std::to_string(n_layers));
  } else if (n_experts < 0 || n_experts_used != 0) {
    throw Error(source + ": " + std::to_string(n_experts_used) + " experts used of " + std::to_string(n_experts));
  }
  if (absolute_positions && max_position_embeddings <= 0)
    throw Error(source + ": learned positions need max_position_embeddings > 0");
  fits(position_offset, "the position offset");
  fits(type_vocab_size, "type_vocab_size");
}

}  // namespace wgc::llm
