// config_from_gguf: llama.cpp's metadata keys ("{arch}.embedding_length", ...) and, where llama.cpp
// decides by architecture rather than by key (Gemma's embedding scale, the MoE routers'
// renormalisation, Gemma's 27B query scale), llama.cpp's rule (src/models/*.cpp).
#include "llm/formats/gguf.h"
#include "llm/formats/model_config.h"
#include "util/error.h"

#include <cmath>
#include <cstring>

namespace wgc::llm {

namespace {

std::optional<Architecture> parse_gguf_arch(std::string_view s) {
  if (s == "llama") return Architecture::Llama;
  if (s == "mistral") return Architecture::Mistral;
  if (s == "qwen2") return Architecture::Qwen2;
  if (s == "qwen3") return Architecture::Qwen3;
  if (s == "gemma2") return Architecture::Gemma2;
  if (s == "gemma3") return Architecture::Gemma3;
  if (s == "phi3") return Architecture::Phi3;
  if (s == "qwen2moe") return Architecture::Qwen2Moe;
  if (s == "qwen3moe") return Architecture::Qwen3Moe;
  if (s == "olmoe") return Architecture::Olmoe;
  if (s == "glm4") return Architecture::Glm4;
  if (s == "bert") return Architecture::Bert;
  if (s == "modern-bert") return Architecture::ModernBert;
  if (s == "nomic-bert") return Architecture::NomicBert;
  return std::nullopt;
}

void add_unique(std::vector<int32_t>& v, int64_t id) {
  if (id < INT32_MIN || id > INT32_MAX) return;
  for (int32_t x : v)
    if (x == id) return;
  v.push_back(int32_t(id));
}

std::vector<double> f32_tensor(const GgufFile& f, const GgufTensorInfo& t, int64_t want, const char* what) {
  if (t.type != TensorType::F32 || t.numel() != want)
    throw Error(f.name() + ": tensor '" + std::string(t.name) + "' is " + std::string(to_string(t.type)) + " of " +
                std::to_string(t.numel()) + " values, expected F32 of " + what + " = " + std::to_string(want));
  auto bytes = f.tensor_data(t);
  std::vector<float> v(size_t(t.numel()));
  if (!bytes.empty()) std::memcpy(v.data(), bytes.data(), std::min(bytes.size(), v.size() * sizeof(float)));
  return {v.begin(), v.end()};
}

// The per-layer sliding flags of "{arch}.attention.sliding_window_pattern": an array of bools (true:
// sliding), or a period n (llama.cpp's set_swa_pattern: layer l slides unless l % n == n - 1).
std::vector<bool> sliding_pattern(const GgufFile& f, const std::string& key, int64_t n_layers, uint32_t period) {
  std::vector<bool> out(static_cast<size_t>(n_layers), false);
  if (const GgufValue* v = f.find(key); v && v->is_array()) {
    if (int64_t(v->size()) != n_layers)
      throw Error(f.name() + ": metadata key '" + key + "' has " + std::to_string(v->size()) + " entries for " +
                  std::to_string(n_layers) + " layers");
    for (size_t i = 0; i < v->size(); ++i) {
      GgufValue e = v->at(i);
      auto b = e.to_bool();
      auto n = e.to_i64();
      if (!b && !n) throw Error(f.name() + ": metadata key '" + key + "' holds a non-boolean");
      out[i] = b ? *b : *n != 0;
    }
    return out;
  } else if (v) {
    period = f.get_u32(key);
  }
  for (int64_t l = 0; l < n_layers; ++l) out[size_t(l)] = period == 0 || int64_t(l % period) < int64_t(period) - 1;
  return out;
}

}  // namespace

ModelConfig config_from_gguf(const GgufFile& f) {
  ModelConfig c;
  const std::string& src = f.name();
  std::string arch = f.get_string("general.architecture");
  if (arch.empty()) throw Error(src + ": no general.architecture");
  auto a = parse_gguf_arch(arch);
  if (!a)
    throw Error(src + ": architecture '" + arch +
                "' is not supported (llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3, qwen2moe, qwen3moe, olmoe, "
                "bert, modern-bert, nomic-bert)");
  c.architecture = *a;
  auto key = [&](const char* k) { return arch + "." + k; };
  auto required_u32 = [&](const char* k) -> int64_t {
    std::string full = key(k);
    if (!f.find(full)) throw Error(src + ": missing metadata key '" + full + "'");
    return f.get_u32(full);
  };

  c.hidden_size = required_u32("embedding_length");
  c.n_layers = required_u32("block_count");
  c.n_heads = required_u32("attention.head_count");
  c.n_kv_heads = f.get_u32(key("attention.head_count_kv"), uint32_t(c.n_heads));
  c.head_dim = f.get_u32(key("attention.key_length"), c.n_heads ? uint32_t(c.hidden_size / c.n_heads) : 0);
  c.n_experts = f.get_u32(key("expert_count"), 0);
  c.n_experts_used = c.n_experts ? f.get_u32(key("expert_used_count"), 0) : 0;
  if (c.n_experts) {
    c.expert_ffn_size = f.get_u32(key("expert_feed_forward_length"), f.get_u32(key("feed_forward_length"), 0));
    c.shared_expert_ffn_size = f.get_u32(key("expert_shared_feed_forward_length"), 0);
    c.ffn_size = f.get_u32(key("feed_forward_length"), uint32_t(c.expert_ffn_size));
    if (!c.ffn_size) c.ffn_size = c.expert_ffn_size;
  } else {
    c.ffn_size = required_u32("feed_forward_length");
  }
  if (c.architecture == Architecture::Llama && c.n_experts) c.architecture = Architecture::Mixtral;
  c.rope_dim = f.get_u32(key("rope.dimension_count"), uint32_t(c.head_dim));
  c.rope_theta = f.get_f32(key("rope.freq_base"), 10000.f);  // llama.cpp's default when absent
  if (!f.find(key("rope.freq_base")) && !c.is_encoder())
    c.notes.push_back("no " + key("rope.freq_base") + ": rope theta 10000 (llama.cpp's default)");
  c.rms_norm_eps = f.get_f32(key("attention.layer_norm_rms_epsilon"), 1e-5f);
  if (!f.find(key("attention.layer_norm_rms_epsilon")) && !c.is_encoder())
    c.notes.push_back("no " + key("attention.layer_norm_rms_epsilon") + ": eps 1e-5");
  c.max_position_embeddings = f.get_u32(key("context_length"), 0);
  if (c.max_position_embeddings > INT32_MAX)
    throw Error(src + ": metadata key '" + key("context_length") + "' is " + std::to_string(c.max_position_embeddings) +
                ", beyond the largest context wgc supports (" + std::to_string(INT32_MAX) + ")");
  if (f.find(key("attention.sliding_window"))) {
    uint32_t w = f.get_u32(key("attention.sliding_window"));
    if (w > 0) c.sliding_window = w;
  }

  c.vocab_size = f.get_u32(key("vocab_size"), 0);
  if (!c.vocab_size) {
    if (const GgufValue* t = f.find("tokenizer.ggml.tokens"); t && t->is_array()) c.vocab_size = int64_t(t->size());
    if (const GgufTensorInfo* e = f.find_tensor("token_embd.weight"); !c.vocab_size && e && e->ne.size() == 2)
      c.vocab_size = e->ne[1];
  }

  // --- rope scaling -----------------------------------------------------------------------------------
  std::string scaling = f.get_string(key("rope.scaling.type"), "none");
  float factor = f.get_f32(key("rope.scaling.factor"), 0.f);
  if (factor == 0.f) {
    float scale_linear = f.get_f32(key("rope.scale_linear"), 0.f);  // older files
    if (scale_linear != 0.f) {
      scaling = "linear";
      factor = scale_linear;
    }
  }
  RopeScaling& rs = c.rope_scaling;
  rs.original_max_position_embeddings = f.get_u32(key("rope.scaling.original_context_length"), 0);
  if (scaling == "linear" && factor != 0.f && factor != 1.f) {
    rs.type = RopeScalingType::Linear;
    rs.factor = factor;
  } else if (scaling == "yarn") {
    rs.type = RopeScalingType::Yarn;
    rs.factor = factor;
    rs.beta_fast = f.get_f32(key("rope.scaling.yarn_beta_fast"), 32.f);
    rs.beta_slow = f.get_f32(key("rope.scaling.yarn_beta_slow"), 1.f);
    if (const GgufValue* v = f.find(key("rope.scaling.yarn_attn_factor")); v && v->to_f64())
      rs.attention_factor = *v->to_f64();
  } else if (scaling != "none" && scaling != "linear" && scaling != "longrope") {
    throw Error(src + ": rope scaling type '" + scaling + "' is not supported (none, linear, yarn, longrope, llama3)");
  }
  if (const GgufTensorInfo* rf = f.find_tensor("rope_freqs.weight")) {
    auto v = f32_tensor(f, *rf, c.rope_dim / 2, "rope_dim/2");
    c.rope_freq_factors.assign(v.begin(), v.end());
    // llama.cpp writes llama3 scaling as these factors; report the type (the exact parameters are
    // not in the file: the factors are what rope_inv_freq() uses).
    rs.type = RopeScalingType::Llama3;
    float mx = 1;
    for (float x : c.rope_freq_factors) mx = std::max(mx, x);
    rs.factor = mx;
  }
  // Phi-3's LongRoPE: the factors are tensors, the original context a key (converter: Phi3MiniModel).
  const GgufTensorInfo* rl = f.find_tensor("rope_factors_long.weight");
  const GgufTensorInfo* rsh = f.find_tensor("rope_factors_short.weight");
  if (rl || rsh) {
    if (!rl || !rsh) throw Error(src + ": one of rope_factors_long/rope_factors_short is missing");
    rs.type = RopeScalingType::LongRope;
    rs.long_factor = f32_tensor(f, *rl, c.rope_dim / 2, "rope_dim/2");
    rs.short_factor = f32_tensor(f, *rsh, c.rope_dim / 2, "rope_dim/2");
    if (rs.original_max_position_embeddings > 0)
      rs.factor = double(c.max_position_embeddings) / double(rs.original_max_position_embeddings);
    if (const GgufValue* v = f.find(key("rope.scaling.attn_factor")); v && v->to_f64())
      rs.attention_factor = *v->to_f64();
  }

  // --- what the tensors say ---------------------------------------------------------------------------
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  c.attention_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = f.find_tensor("blk.0.attn_q_norm.weight") != nullptr;

  // --- per architecture (llama.cpp's src/models/<arch>.cpp) ------------------------------------------
  switch (c.architecture) {
    case Architecture::Gemma2:
    case Architecture::Gemma3: {
      // The converter adds Gemma's 1 into the norm weights: plain RMSNorm here.
      c.norm_placement = NormPlacement::Sandwich;
      c.activation = Activation::GeluTanh;
      c.embedding_scale = std::sqrt(double(c.hidden_size));
      c.tie_word_embeddings = true;  // llama.cpp reads the output from token_embd (output.weight unused)
      // Gemma's 27B models scale the scores by hidden/heads, the others by head_dim (the key is absent).
      const bool big = c.n_layers == (c.architecture == Architecture::Gemma2 ? 46 : 62);
      c.query_pre_attn_scalar = big ? double(c.hidden_size / c.n_heads) : double(c.head_dim);
      if (const GgufValue* v = f.find(key("attention.scale")); v && v->to_f64() && *v->to_f64() > 0)
        c.query_pre_attn_scalar = 1.0 / (*v->to_f64() * *v->to_f64());
      c.final_logit_softcap = f.get_f32(key("final_logit_softcapping"), 0.f);
      if (c.architecture == Architecture::Gemma2) {
        c.attn_logit_softcap = f.get_f32(key("attn_logit_softcapping"), 50.f);
        if (!f.find(key("final_logit_softcapping"))) c.final_logit_softcap = 30.f;
        if (!c.sliding_window) {
          c.sliding_window = 4096;
          c.notes.push_back("no " + key("attention.sliding_window") + ": window 4096 (llama.cpp's default)");
        }
        c.sliding_layers = sliding_pattern(f, key("attention.sliding_window_pattern"), c.n_layers, 2);
      } else if (c.sliding_window) {
        c.sliding_layers = sliding_pattern(f, key("attention.sliding_window_pattern"), c.n_layers, 6);
      }
      // llama.cpp: the sliding layers' own base (Gemma 3's default 10000), unscaled.
      if (c.sliding_window && (c.architecture == Architecture::Gemma3 || f.find(key("rope.freq_base_swa")))) {
        c.sliding_rope_theta = f.get_f32(key("rope.freq_base_swa"), 10000.f);
        c.sliding_rope_scaling = RopeScaling{};
      }
      break;
    }
    case Architecture::Phi3:
      c.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
      c.fused_gate_up = true;  // llama.cpp's phi3 ffn_up holds gate and up (2 * n_ff rows)
      if (c.sliding_window)
        c.notes.push_back("phi3 sliding window " + std::to_string(*c.sliding_window) +
                          ": transformers applies it, llama.cpp disables it");
      break;
    case Architecture::Glm4:  // llama.cpp's glm4: rope type NORM (interleaved pairs), as stored
      c.norm_placement = NormPlacement::Sandwich;
      c.fused_gate_up = true;
      c.rope_interleaved = true;
      break;
    case Architecture::Mixtral: c.norm_topk_prob = true; break;
    case Architecture::Qwen2Moe: c.norm_topk_prob = false; break;
    case Architecture::Qwen3Moe: c.norm_topk_prob = true; break;
    case Architecture::Olmoe:
      c.norm_topk_prob = false;
      if (const GgufTensorInfo* qn = f.find_tensor("blk.0.attn_q_norm.weight"); qn && qn->numel() != c.head_dim) {
        c.qk_norm = false;
        c.qk_norm_whole = true;
      }
      break;
    case Architecture::Bert: {
      c.norm = NormKind::LayerNorm;
      c.norm_placement = NormPlacement::Post;
      c.activation = Activation::Gelu;  // BERT's exact GELU (llama.cpp computes the tanh form)
      c.gated_ffn = false;
      c.causal = f.get_bool(key("attention.causal"), false);
      c.rms_norm_eps = f.get_f32(key("attention.layer_norm_epsilon"), 1e-12f);
      c.rope_dim = 0;
      c.attention_out_bias = f.find_tensor("blk.0.attn_output.bias") != nullptr;
      c.ffn_bias = f.find_tensor("blk.0.ffn_up.bias") != nullptr;
      c.absolute_positions = f.find_tensor("position_embd.weight") != nullptr;
      c.type_vocab_size = f.get_u32("tokenizer.ggml.token_type_count", 0);
      if (const GgufTensorInfo* tt = f.find_tensor("token_types.weight"); tt && tt->ne.size() == 2)
        c.type_vocab_size = tt->ne[1];
      c.embedding_model = true;
      c.tie_word_embeddings = false;
      c.pooling = Pooling::Cls;
      if (!f.find(key("pooling_type"))) c.notes.push_back("no " + key("pooling_type") + ": CLS pooling");
      break;
    }
    case Architecture::ModernBert: {
      // llama.cpp's modern-bert: fused qkv, GeGLU (ffn_up holds 2 * feed_forward_length rows, the
      // activated half first), LayerNorms without bias, pre-norm; symmetric local windows of
      // attention.sliding_window on every layer but each sliding_window_pattern-th (layer 0 global),
      // with rope.freq_base_swa (the converter writes norm_eps as the rms epsilon key).
      for (const char* b : {"token_embd_norm.bias", "blk.0.attn_qkv.bias", "blk.0.attn_output.bias",
                            "blk.0.ffn_up.bias", "blk.0.ffn_norm.bias", "output_norm.bias"})
        if (f.find_tensor(b))
          throw Error(src + ": tensor '" + b + "': ModernBERT's biases are not supported (released models have none)");
      c.norm = NormKind::LayerNorm;
      c.norm_placement = NormPlacement::Pre;
      c.fused_qkv = c.fused_gate_up = true;
      c.causal = false;
      c.rms_norm_eps = f.get_f32(key("attention.layer_norm_epsilon"), float(c.rms_norm_eps));
      std::string act = f.get_string(key("hidden_activation"), "gelu");
      if (act != "gelu")
        throw Error(src + ": metadata key '" + key("hidden_activation") + "' is '" + act + "' (the encoder runs gelu)");
      c.activation = Activation::Gelu;
      if (c.sliding_window) {
        const uint32_t period = f.get_u32(key("attention.sliding_window_pattern"), 3);
        c.sliding_layers.assign(size_t(c.n_layers), false);
        for (int64_t l = 0; l < c.n_layers; ++l) c.sliding_layers[size_t(l)] = period == 0 || l % period != 0;
        c.sliding_rope_theta = f.get_f32(key("rope.freq_base_swa"), 10000.f);
        c.sliding_rope_scaling = RopeScaling{};
      }
      if (!f.find(key("rope.freq_base"))) c.notes.push_back("no " + key("rope.freq_base") + ": rope theta 10000");
      c.embedding_model = true;
      c.tie_word_embeddings = false;
      c.pooling = Pooling::Cls;
      if (!f.find(key("pooling_type"))) c.notes.push_back("no " + key("pooling_type") + ": CLS pooling");
      break;
    }
    case Architecture::NomicBert: {
      // llama.cpp's nomic-bert: BERT's post-norm layers with a fused qkv, NeoX rotary q/k
      // (rotate_half pairs), ffn_gate through SiLU times ffn_up, token types but no position table.
      for (const char* b : {"blk.0.attn_qkv.bias", "blk.0.attn_output.bias", "blk.0.ffn_up.bias", "blk.0.ffn_gate.bias",
                            "blk.0.ffn_down.bias", "position_embd.weight"})
        if (f.find_tensor(b))
          throw Error(src + ": tensor '" + b + "': a nomic-bert variant wgc does not run (nomic-embed-text has none)");
      if (f.find_tensor("blk.0.ffn_gate_inp.weight"))
        throw Error(src + ": nomic-bert with experts (nomic-bert-moe) is not supported");
      c.norm = NormKind::LayerNorm;
      c.norm_placement = NormPlacement::Post;
      c.activation = Activation::Silu;
      c.gated_ffn = true;
      c.fused_qkv = true;
      c.causal = f.get_bool(key("attention.causal"), false);
      c.rms_norm_eps = f.get_f32(key("attention.layer_norm_epsilon"), 1e-12f);
      if (!f.find(key("rope.freq_base"))) c.notes.push_back("no " + key("rope.freq_base") + ": rope theta 10000");
      c.type_vocab_size = f.get_u32("tokenizer.ggml.token_type_count", 0);
      if (const GgufTensorInfo* tt = f.find_tensor("token_types.weight"); tt && tt->ne.size() == 2)
        c.type_vocab_size = tt->ne[1];
      c.embedding_model = true;
      c.tie_word_embeddings = false;
      c.pooling = Pooling::Mean;
      if (!f.find(key("pooling_type"))) c.notes.push_back("no " + key("pooling_type") + ": mean pooling");
      break;
    }
    default: break;
  }
  if (const GgufValue* v = f.find(key("expert_weights_norm")); v && v->to_bool()) c.norm_topk_prob = *v->to_bool();
  if (const GgufValue* v = f.find(key("pooling_type"))) {
    auto p = v->to_i64();
    if (!p || *p < 0 || *p > 3)
      throw Error(src + ": metadata key '" + key("pooling_type") + "' is " + v->describe() +
                  ", expected 0..3 (none, mean, cls, last)");
    c.pooling = Pooling(*p);
    if (c.pooling != Pooling::None) c.embedding_model = true;
  }
  if (c.is_moe() && f.find(key("leading_dense_block_count"))) {
    uint32_t n = f.get_u32(key("leading_dense_block_count"));
    c.dense_layers.assign(size_t(c.n_layers), false);
    for (int64_t l = 0; l < c.n_layers && l < int64_t(n); ++l) c.dense_layers[size_t(l)] = true;
  }

  if (f.find("tokenizer.ggml.bos_token_id")) {
    uint32_t bos = f.get_u32("tokenizer.ggml.bos_token_id");
    if (bos > INT32_MAX)
      throw Error(src + ": metadata key 'tokenizer.ggml.bos_token_id' is " + std::to_string(bos) + ", not a token id");
    c.bos_token_id = int32_t(bos);
  }
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (f.find(k)) add_unique(c.eos_token_ids, f.get_u32(k));
  c.validate(src);
  return c;
}

}  // namespace wgc::llm
