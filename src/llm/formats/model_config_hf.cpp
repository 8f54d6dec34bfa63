// config_from_hf: a Hugging Face config.json as transformers reads it, with each config class's
// defaults where a key is absent (Gemma2Config, Gemma3TextConfig, Phi3Config, ...), the rope in any of
// its spellings (transformers 4: rope_theta, rope_scaling, rope_local_base_freq, partial_rotary_factor
// at the top; transformers 5: rope_parameters, flat or per layer type), and sentence-transformers'
// pooling files beside it.
#include "llm/formats/model_config.h"
#include "util/error.h"
#include "util/json.h"

#include <cmath>

namespace wgc::llm {

namespace {

void add_unique(std::vector<int32_t>& v, int64_t id) {
  if (id < INT32_MIN || id > INT32_MAX) return;
  for (int32_t x : v)
    if (x == id) return;
  v.push_back(int32_t(id));
}

int64_t int_of(const json::Value& cfg, const std::string& src, const char* key, std::optional<int64_t> def = {}) {
  const json::Value* v = cfg.find(key);
  if (!v || v->is_null()) {
    if (def) return *def;
    throw Error(src + ": missing \"" + key + "\"");
  }
  if (!v->is_number()) throw Error(src + ": \"" + key + "\" is " + v->dump() + ", expected an integer");
  try {
    return v->as_int();
  } catch (const Error&) {
    throw Error(src + ": \"" + key + "\" is " + v->dump() + ", expected an integer");
  }
}

double num_of(const json::Value& obj, const std::string& src, const char* key, double def) {
  const json::Value* v = obj.find(key);
  if (!v || v->is_null()) return def;
  if (!v->is_number()) throw Error(src + ": \"" + key + "\" is " + v->dump() + ", expected a number");
  return v->as_double();
}

// A number where the key may be present as null (then: none, 0) or absent (then: `absent`).
double cap_of(const json::Value& obj, const std::string& src, const char* key, double absent) {
  const json::Value* v = obj.find(key);
  if (!v) return absent;
  if (v->is_null()) return 0;
  if (!v->is_number()) throw Error(src + ": \"" + key + "\" is " + v->dump() + ", expected a number or null");
  return v->as_double();
}

// An optional token id: absent, null or not an integer (some configs write a list) is none; an
// integer outside 0..2^31-1 is an error.
std::optional<int32_t> token_id(const json::Value& obj, const std::string& src, const char* key) {
  const json::Value* v = obj.find(key);
  if (!v || !v->is_int()) return std::nullopt;
  if (v->as_int() < 0 || v->as_int() > INT32_MAX)
    throw Error(src + ": \"" + key + "\" is " + v->dump() + ", not a token id");
  return int32_t(v->as_int());
}

void add_ids(std::vector<int32_t>& out, const json::Value* v, const std::string& src, const char* key) {
  if (!v || v->is_null()) return;
  auto one = [&](const json::Value& x) {
    if (!x.is_int()) throw Error(src + ": \"" + key + "\" holds " + x.dump() + ", expected token ids");
    add_unique(out, x.as_int());
  };
  if (v->is_array())
    for (const auto& x : v->items()) one(x);
  else
    one(*v);
}

std::vector<double> factors_of(const json::Value& obj, const std::string& src, const char* key) {
  std::vector<double> out;
  const json::Value* v = obj.find(key);
  if (!v || v->is_null()) return out;
  if (!v->is_array()) throw Error(src + ": \"" + key + "\" is " + v->dump() + ", expected a list of numbers");
  for (const auto& x : v->items()) {
    if (!x.is_number()) throw Error(src + ": \"" + key + "\" holds " + x.dump() + ", expected numbers");
    out.push_back(x.as_double());
  }
  return out;
}

struct ArchInfo {
  Architecture arch;
  bool embedding = false;  // a base model class without a language-model head
};

std::optional<ArchInfo> parse_model_type(std::string_view s) {
  if (s == "llama") return ArchInfo{Architecture::Llama};
  if (s == "mistral") return ArchInfo{Architecture::Mistral};
  if (s == "qwen2") return ArchInfo{Architecture::Qwen2};
  if (s == "qwen3") return ArchInfo{Architecture::Qwen3};
  if (s == "gemma2") return ArchInfo{Architecture::Gemma2};
  if (s == "gemma3_text" || s == "gemma3") return ArchInfo{Architecture::Gemma3};
  if (s == "phi3") return ArchInfo{Architecture::Phi3};
  if (s == "mixtral") return ArchInfo{Architecture::Mixtral};
  if (s == "qwen2_moe") return ArchInfo{Architecture::Qwen2Moe};
  if (s == "qwen3_moe") return ArchInfo{Architecture::Qwen3Moe};
  if (s == "olmoe") return ArchInfo{Architecture::Olmoe};
  if (s == "glm4") return ArchInfo{Architecture::Glm4};
  if (s == "bert" || s == "roberta" || s == "xlm-roberta") return ArchInfo{Architecture::Bert, true};
  if (s == "modernbert") return ArchInfo{Architecture::ModernBert, true};
  if (s == "nomic_bert") return ArchInfo{Architecture::NomicBert, true};
  return std::nullopt;
}

std::optional<ArchInfo> parse_class(std::string_view cls) {
  static const std::pair<std::string_view, ArchInfo> kClasses[] = {
      {"LlamaForCausalLM", {Architecture::Llama}},
      {"MistralForCausalLM", {Architecture::Mistral}},
      {"Qwen2ForCausalLM", {Architecture::Qwen2}},
      {"Qwen3ForCausalLM", {Architecture::Qwen3}},
      {"Qwen3Model", {Architecture::Qwen3, true}},
      {"Gemma2ForCausalLM", {Architecture::Gemma2}},
      {"Gemma3ForCausalLM", {Architecture::Gemma3}},
      {"Phi3ForCausalLM", {Architecture::Phi3}},
      {"MixtralForCausalLM", {Architecture::Mixtral}},
      {"Qwen2MoeForCausalLM", {Architecture::Qwen2Moe}},
      {"Qwen3MoeForCausalLM", {Architecture::Qwen3Moe}},
      {"OlmoeForCausalLM", {Architecture::Olmoe}},
      {"Glm4ForCausalLM", {Architecture::Glm4}},
      {"BertModel", {Architecture::Bert, true}},
      {"RobertaModel", {Architecture::Bert, true}},
      {"XLMRobertaModel", {Architecture::Bert, true}},
      {"ModernBertModel", {Architecture::ModernBert, true}},
      {"NomicBertModel", {Architecture::NomicBert, true}},
  };
  for (const auto& [name, info] : kClasses)
    if (cls == name) return info;
  return std::nullopt;
}

const char* kSupported =
    "llama, mistral, qwen2, qwen3, gemma2, gemma3(_text), phi3, mixtral, qwen2_moe, qwen3_moe, "
    "olmoe, bert, roberta, xlm-roberta, modernbert, nomic_bert";

// One rope block (transformers 4's rope_scaling or one of transformers 5's rope_parameters) into `s`,
// its rope_theta into `theta` where it has one. `top` is the whole config (Phi-3 keeps
// original_max_position_embeddings there).
void read_rope_block(const json::Value& block, const json::Value& top, const std::string& src, const ModelConfig& c,
                     RopeScaling& s, double& theta) {
  theta = num_of(block, src, "rope_theta", theta);
  std::string rt = block.get_string("rope_type", block.get_string("type", "default"));
  int64_t orig_top = int_of(top, src, "original_max_position_embeddings", 0);
  auto orig = [&](bool required) {
    int64_t v = int_of(block, src, "original_max_position_embeddings", orig_top);
    if (required && v <= 0) throw Error(src + ": rope type '" + rt + "' needs original_max_position_embeddings > 0");
    return v;
  };
  if (const json::Value* af = block.find("attention_factor"); af && af->is_number())
    s.attention_factor = af->as_double();
  if (rt == "default") {
    s.type = RopeScalingType::None;
  } else if (rt == "linear") {
    s.type = RopeScalingType::Linear;
    s.factor = num_of(block, src, "factor", 1.0);
    s.original_max_position_embeddings = int_of(block, src, "original_max_position_embeddings", 0);
  } else if (rt == "llama3") {
    s.type = RopeScalingType::Llama3;
    s.factor = num_of(block, src, "factor", 1.0);
    s.low_freq_factor = num_of(block, src, "low_freq_factor", 1.0);
    s.high_freq_factor = num_of(block, src, "high_freq_factor", 4.0);
    s.original_max_position_embeddings = int_of(block, src, "original_max_position_embeddings");
  } else if (rt == "yarn") {
    s.type = RopeScalingType::Yarn;
    s.original_max_position_embeddings = orig(true);
    s.factor = num_of(block, src, "factor",
                      c.max_position_embeddings > 0
                          ? double(c.max_position_embeddings) / double(s.original_max_position_embeddings)
                          : 1.0);
    s.beta_fast = num_of(block, src, "beta_fast", 32.0);
    s.beta_slow = num_of(block, src, "beta_slow", 1.0);
    if (const json::Value* t = block.find("truncate"); t && t->is_bool()) s.yarn_truncate = t->as_bool();
    double mscale = num_of(block, src, "mscale", 0), mscale_all = num_of(block, src, "mscale_all_dim", 0);
    if (!s.attention_factor && mscale != 0 && mscale_all != 0) {
      auto m = [&](double x) { return s.factor <= 1 ? 1.0 : 0.1 * x * std::log(s.factor) + 1.0; };
      s.attention_factor = m(mscale) / m(mscale_all);
    }
  } else if (rt == "longrope" || rt == "su") {
    s.type = RopeScalingType::LongRope;
    s.original_max_position_embeddings = orig(true);
    s.short_factor = factors_of(block, src, "short_factor");
    s.long_factor = factors_of(block, src, "long_factor");
    s.factor =
        num_of(block, src, "factor", double(c.max_position_embeddings) / double(s.original_max_position_embeddings));
  } else {
    throw Error(src + ": rope type '" + rt + "' is not supported (default, linear, llama3, yarn, longrope)");
  }
}

// Layer types ("sliding_attention"/"full_attention") as sliding flags.
std::vector<bool> layer_types(const json::Value& v, const std::string& src, int64_t n_layers) {
  if (!v.is_array() || int64_t(v.size()) != n_layers)
    throw Error(src + ": \"layer_types\" is " + v.dump() + ", expected " + std::to_string(n_layers) + " layer types");
  std::vector<bool> out;
  for (const auto& t : v.items()) {
    std::string s = t.is_string() ? t.as_string() : "";
    if (s != "sliding_attention" && s != "full_attention")
      throw Error(src + ": \"layer_types\" holds " + t.dump() + " (sliding_attention, full_attention)");
    out.push_back(s == "sliding_attention");
  }
  return out;
}

// nomic-bert (nomic-embed-text v1 / v1.5; the Hub's remote-code NomicBertConfig, GPT-2's key names):
// token + token-type embeddings and their LayerNorm, post-norm layers with a fused Wqkv, rotary
// q/k (rotate_half pairs), a SwiGLU MLP (fc12 through SiLU times fc11), mean pooling. The variants
// this does not run (biases, pre-norm, parallel blocks, RMSNorm, interleaved or scaled rotary,
// another activation) are refused by name.
void read_nomic_bert(const json::Value& cfg, const std::string& src, ModelConfig& c) {
  c.vocab_size = int_of(cfg, src, "vocab_size");
  c.hidden_size = int_of(cfg, src, "n_embd");
  c.n_layers = int_of(cfg, src, "n_layer");
  c.n_heads = c.n_kv_heads = int_of(cfg, src, "n_head");
  c.head_dim = c.n_heads > 0 ? c.hidden_size / c.n_heads : 0;
  c.ffn_size = int_of(cfg, src, "n_inner", 4 * c.hidden_size);
  // llama.cpp's converter writes the trained context (2048 for v1.5, whose n_positions says 8192).
  c.max_position_embeddings = int_of(cfg, src, "max_trained_positions", int_of(cfg, src, "n_positions", 2048));
  if (c.max_position_embeddings <= 0 || c.max_position_embeddings > INT32_MAX)
    throw Error(src + ": \"max_trained_positions\" / \"n_positions\" is " + std::to_string(c.max_position_embeddings));
  c.rms_norm_eps = num_of(cfg, src, "layer_norm_epsilon", 1e-12);
  c.type_vocab_size = int_of(cfg, src, "type_vocab_size", 2);
  c.rope_theta = num_of(cfg, src, "rotary_emb_base", 10000.0);
  const double fraction = num_of(cfg, src, "rotary_emb_fraction", 1.0);
  c.rope_dim = int64_t(double(c.head_dim) * fraction);
  for (const char* k : {"qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias", "prenorm", "parallel_block", "use_rms_norm",
                        "rotary_emb_interleaved", "causal"})
    if (cfg.get_bool(k, false))
      throw Error(src + ": \"" + k +
                  "\" is true: a nomic-bert variant wgc does not run (nomic-embed-text v1 / v1.5 have it false)");
  if (const json::Value* f = cfg.find("rotary_scaling_factor"); f && !f->is_null())
    throw Error(src + ": \"rotary_scaling_factor\" is " + f->dump() +
                ": scaled rotary positions (a nomic-bert variant wgc does not run)");
  const std::string act = cfg.get_string("activation_function", "swiglu");
  if (act != "swiglu")
    throw Error(src + ": \"activation_function\" is '" + act + "' (the encoder runs nomic-bert's swiglu)");
  c.norm = NormKind::LayerNorm;
  c.norm_placement = NormPlacement::Post;
  c.activation = Activation::Silu;
  c.gated_ffn = true;
  c.fused_qkv = true;
  c.causal = false;
  c.tie_word_embeddings = false;
  c.embedding_model = true;
  c.pooling = Pooling::Mean;
  c.notes.push_back("pooling: mean unless sentence-transformers' 1_Pooling/config.json says otherwise");
}

}  // namespace

ModelConfig config_from_hf(const json::Value& top_cfg, const std::string& src) {
  if (!top_cfg.is_object()) throw Error(src + ": not a JSON object");
  ModelConfig c;
  std::string type = top_cfg.get_string("model_type");
  std::optional<ArchInfo> arch = parse_model_type(type);
  std::string cls;
  if (const json::Value* as = top_cfg.find("architectures"); as && as->is_array() && as->size() && (*as)[0].is_string())
    cls = (*as)[0].as_string();
  if (!arch && type.empty()) {
    arch = parse_class(cls);
    type = cls;
  }
  if (!arch) throw Error(src + ": model_type '" + type + "' is not supported (" + kSupported + ")");
  if (auto by_class = parse_class(cls); by_class && by_class->arch == arch->arch && by_class->embedding)
    arch->embedding = true;
  c.architecture = arch->arch;
  c.embedding_model = arch->embedding;
  if (c.architecture == Architecture::NomicBert) {  // none of the keys below: its own names
    read_nomic_bert(top_cfg, src, c);
    c.validate(src);
    return c;
  }
  // Gemma 3's multimodal config keeps the language model's keys in text_config.
  const json::Value* tc = top_cfg.find("text_config");
  const json::Value& cfg = (type == "gemma3" && tc && tc->is_object()) ? *tc : top_cfg;
  const Architecture A = c.architecture;
  const bool gemma = A == Architecture::Gemma2 || A == Architecture::Gemma3;

  c.vocab_size =
      int_of(cfg, src, "vocab_size",
             gemma ? std::optional<int64_t>(A == Architecture::Gemma2 ? 256000 : 262208) : std::optional<int64_t>());
  c.hidden_size = int_of(cfg, src, "hidden_size");
  c.n_layers = int_of(cfg, src, "num_hidden_layers");
  c.n_heads = int_of(cfg, src, "num_attention_heads");
  c.n_kv_heads = int_of(cfg, src, "num_key_value_heads", c.n_heads);
  c.head_dim = int_of(cfg, src, "head_dim", gemma ? 256 : (c.n_heads > 0 ? c.hidden_size / c.n_heads : 0));
  if (A == Architecture::Phi3 || c.is_encoder()) c.head_dim = c.n_heads > 0 ? c.hidden_size / c.n_heads : 0;
  c.rope_dim = c.head_dim;
  c.ffn_size = int_of(cfg, src, "intermediate_size");
  c.rms_norm_eps = num_of(cfg, src, "rms_norm_eps", 1e-6);
  c.max_position_embeddings = int_of(cfg, src, "max_position_embeddings",
                                     A == Architecture::Bert         ? 512
                                     : A == Architecture::ModernBert ? 8192
                                                                     : 0);
  if (c.max_position_embeddings < 0 || c.max_position_embeddings > INT32_MAX)
    throw Error(src + ": \"max_position_embeddings\" is " + std::to_string(c.max_position_embeddings) +
                ", expected 0.." + std::to_string(INT32_MAX));
  if (gemma) c.tie_word_embeddings = true;  // Gemma*Config's default
  if (const json::Value* t = top_cfg.find("tie_word_embeddings"); t && t->is_bool())
    c.tie_word_embeddings = t->as_bool();
  if (const json::Value* t = cfg.find("tie_word_embeddings"); t && t->is_bool()) c.tie_word_embeddings = t->as_bool();

  bool bias = cfg.get_bool("attention_bias", false);
  c.attention_bias = (A == Architecture::Qwen2 || A == Architecture::Qwen2Moe) ? true
                     : A == Architecture::Glm4                                 ? cfg.get_bool("attention_bias", true)
                                                                               : bias;
  c.qk_norm = A == Architecture::Qwen3 || A == Architecture::Qwen3Moe || A == Architecture::Gemma3;

  // --- sliding window -----------------------------------------------------------------------------------
  auto window = [&]() -> std::optional<int64_t> {
    // 0 is none; a negative window stays, for validate() to name.
    if (const json::Value* w = cfg.find("sliding_window"); w && w->is_int() && w->as_int() != 0) return w->as_int();
    return std::nullopt;
  };
  if (A == Architecture::Mistral || A == Architecture::Mixtral || A == Architecture::Phi3) {
    c.sliding_window = window();
  } else if (A == Architecture::Qwen2 || A == Architecture::Qwen3 || A == Architecture::Qwen2Moe ||
             A == Architecture::Qwen3Moe) {
    if (cfg.get_bool("use_sliding_window", false)) c.sliding_window = window();
  } else if (gemma) {
    c.sliding_window = cfg.find("sliding_window") ? window() : std::optional<int64_t>(4096);
    if (c.sliding_window) {
      if (const json::Value* lt = cfg.find("layer_types"); lt && !lt->is_null()) {
        c.sliding_layers = layer_types(*lt, src, c.n_layers);
      } else {
        // Gemma 2 alternates (even layers slide); Gemma 3 slides on all but every sliding_window_pattern-th.
        int64_t period = A == Architecture::Gemma2 ? 2 : int_of(cfg, src, "sliding_window_pattern", 6);
        if (period <= 0) throw Error(src + ": \"sliding_window_pattern\" is " + std::to_string(period));
        for (int64_t l = 0; l < c.n_layers; ++l) c.sliding_layers.push_back((l + 1) % period != 0);
      }
    }
  } else if (A == Architecture::ModernBert) {
    // local_attention is the whole window (a query sees the keys within half of it either way); the
    // global layers are layer 0 and every global_attn_every_n_layers-th (or as layer_types say).
    c.sliding_window = int_of(cfg, src, "local_attention", 128);
    if (const json::Value* lt = cfg.find("layer_types"); lt && !lt->is_null()) {
      c.sliding_layers = layer_types(*lt, src, c.n_layers);
    } else {
      int64_t period = int_of(cfg, src, "global_attn_every_n_layers", 3);
      if (period <= 0) throw Error(src + ": \"global_attn_every_n_layers\" is " + std::to_string(period));
      for (int64_t l = 0; l < c.n_layers; ++l) c.sliding_layers.push_back(l % period != 0);
    }
  }

  // --- rope: transformers 5 puts theta and scaling in "rope_parameters" (flat, or per layer type);
  // transformers 4 has "rope_theta" and "rope_scaling" (and Gemma 3's rope_local_base_freq) ---------------
  double default_theta = A == Architecture::Gemma3 ? 1000000.0 : 10000.0;
  c.rope_theta = num_of(cfg, src, "rope_theta", default_theta);
  double partial = num_of(cfg, src, "partial_rotary_factor", A == Architecture::Glm4 ? 0.5 : 1.0);
  const json::Value* rp = cfg.find("rope_parameters");
  if (rp && rp->is_object() && (rp->find("full_attention") || rp->find("sliding_attention"))) {
    if (const json::Value* full = rp->find("full_attention"); full && full->is_object()) {
      read_rope_block(*full, cfg, src, c, c.rope_scaling, c.rope_theta);
      partial = num_of(*full, src, "partial_rotary_factor", partial);
    }
    if (const json::Value* sl = rp->find("sliding_attention"); sl && sl->is_object()) {
      double theta = c.rope_theta;
      RopeScaling s;
      read_rope_block(*sl, cfg, src, c, s, theta);
      c.sliding_rope_theta = theta;
      c.sliding_rope_scaling = s;
    }
  } else if (rp && rp->is_object()) {
    read_rope_block(*rp, cfg, src, c, c.rope_scaling, c.rope_theta);
    partial = num_of(*rp, src, "partial_rotary_factor", partial);
  } else {
    if (rp && !rp->is_null()) throw Error(src + ": rope_parameters is " + rp->dump() + ", expected an object");
    const json::Value* scaling = cfg.find("rope_scaling");
    if (scaling && scaling->is_object()) {
      double theta = c.rope_theta;
      read_rope_block(*scaling, cfg, src, c, c.rope_scaling, theta);
    } else if (scaling && !scaling->is_null()) {
      throw Error(src + ": rope scaling is " + scaling->dump() + ", expected an object");
    }
    if (A == Architecture::Gemma3) {
      c.sliding_rope_theta = num_of(cfg, src, "rope_local_base_freq", 10000.0);
      c.sliding_rope_scaling = RopeScaling{};
    }
    if (A == Architecture::ModernBert) {  // the Hub's (transformers 4) keys
      c.rope_theta = num_of(cfg, src, "global_rope_theta", 160000.0);
      c.sliding_rope_theta = num_of(cfg, src, "local_rope_theta", 10000.0);
      c.sliding_rope_scaling = RopeScaling{};
    }
  }
  if (!(partial > 0 && partial <= 1)) throw Error(src + ": partial_rotary_factor " + std::to_string(partial));
  c.rope_dim = int64_t(double(c.head_dim) * partial);

  // --- per architecture -----------------------------------------------------------------------------
  auto activation_of = [&](const char* key, const std::string& def) {
    std::string act = cfg.get_string(key, def);
    if (act == "silu" || act == "swish") return Activation::Silu;
    if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast") return Activation::GeluTanh;
    if (act == "gelu") return Activation::Gelu;
    throw Error(src + ": activation '" + act + "' is not supported (silu, gelu, gelu_pytorch_tanh)");
  };
  switch (A) {
    case Architecture::Gemma2:
    case Architecture::Gemma3:
      c.norm = NormKind::RmsNormOnePlus;
      c.norm_placement = NormPlacement::Sandwich;
      c.activation =
          activation_of(cfg.find("hidden_activation") ? "hidden_activation" : "hidden_act", "gelu_pytorch_tanh");
      c.embedding_scale = std::sqrt(double(c.hidden_size));
      c.query_pre_attn_scalar = num_of(cfg, src, "query_pre_attn_scalar", 256);
      c.attn_logit_softcap = cap_of(cfg, src, "attn_logit_softcapping", A == Architecture::Gemma2 ? 50.0 : 0.0);
      c.final_logit_softcap = cap_of(cfg, src, "final_logit_softcapping", A == Architecture::Gemma2 ? 30.0 : 0.0);
      break;
    case Architecture::Phi3:
      c.fused_qkv = true;
      c.fused_gate_up = true;
      c.activation = activation_of("hidden_act", "silu");
      c.rms_norm_eps = num_of(cfg, src, "rms_norm_eps", 1e-5);
      break;
    case Architecture::Glm4:
      // Glm4Config: post-attention and post-MLP norms, gate|up fused, half the head rotated with
      // interleaved pairs.
      c.norm_placement = NormPlacement::Sandwich;
      c.fused_gate_up = true;
      c.rope_interleaved = true;
      c.activation = activation_of("hidden_act", "silu");
      c.rms_norm_eps = num_of(cfg, src, "rms_norm_eps", 1.5625e-7);
      break;
    case Architecture::Mixtral:
      c.n_experts = int_of(cfg, src, "num_local_experts");
      c.n_experts_used = int_of(cfg, src, "num_experts_per_tok");
      c.expert_ffn_size = c.ffn_size;
      c.norm_topk_prob = true;
      break;
    case Architecture::Qwen2Moe:
    case Architecture::Qwen3Moe:
    case Architecture::Olmoe: {
      // transformers 5 saves these models' expert count as num_local_experts (the Hub's as num_experts).
      c.n_experts = int_of(cfg, src, cfg.find("num_experts") ? "num_experts" : "num_local_experts");
      c.n_experts_used = int_of(cfg, src, "num_experts_per_tok");
      c.norm_topk_prob = cfg.get_bool("norm_topk_prob", false);
      if (A == Architecture::Olmoe) {
        c.expert_ffn_size = c.ffn_size;
        c.qk_norm_whole = true;
        if (const json::Value* clip = cfg.find("clip_qkv"); clip && !clip->is_null())
          throw Error(src + ": clip_qkv " + clip->dump() + " is not supported");
        break;
      }
      c.expert_ffn_size = int_of(cfg, src, "moe_intermediate_size");
      if (A == Architecture::Qwen2Moe) c.shared_expert_ffn_size = int_of(cfg, src, "shared_expert_intermediate_size");
      int64_t step = int_of(cfg, src, "decoder_sparse_step", 1);
      std::vector<bool> dense(size_t(c.n_layers), false);
      bool any = false;
      if (const json::Value* only = cfg.find("mlp_only_layers"); only && only->is_array())
        for (const auto& x : only->items()) {
          if (!x.is_int() || x.as_int() < 0 || x.as_int() >= c.n_layers)
            throw Error(src + ": \"mlp_only_layers\" holds " + x.dump() + ", not a layer index");
          dense[size_t(x.as_int())] = any = true;
        }
      for (int64_t l = 0; l < c.n_layers; ++l)
        if (step <= 0 || (l + 1) % step != 0) dense[size_t(l)] = any = true;
      if (any) c.dense_layers = dense;
      break;
    }
    case Architecture::Bert: {
      c.norm = NormKind::LayerNorm;
      c.norm_placement = NormPlacement::Post;
      c.activation = activation_of("hidden_act", "gelu");
      c.gated_ffn = false;
      c.causal = false;
      c.attention_bias = c.attention_out_bias = c.ffn_bias = true;
      c.rms_norm_eps = num_of(cfg, src, "layer_norm_eps", 1e-12);
      c.rope_dim = 0;
      std::string pe = cfg.get_string("position_embedding_type", "absolute");
      if (pe != "absolute") throw Error(src + ": position_embedding_type '" + pe + "' is not supported (absolute)");
      c.absolute_positions = true;
      c.type_vocab_size = int_of(cfg, src, "type_vocab_size", 2);
      // RoBERTa numbers positions from padding_idx + 1 (its table keeps the unused first rows).
      if (type == "roberta" || type == "xlm-roberta" || cls == "RobertaModel" || cls == "XLMRobertaModel")
        c.position_offset = int_of(cfg, src, "pad_token_id", 1) + 1;
      c.tie_word_embeddings = false;
      c.embedding_model = true;
      c.pooling = Pooling::Cls;
      c.notes.push_back("pooling: CLS unless sentence-transformers' 1_Pooling/config.json says otherwise");
      break;
    }
    case Architecture::ModernBert: {
      // Pre-norm LayerNorm layers without biases (layer 0 without its attention norm), fused Wqkv,
      // GeGLU Wi (the activated half first), a final norm.
      c.norm = NormKind::LayerNorm;
      c.norm_placement = NormPlacement::Pre;
      c.activation = activation_of("hidden_activation", "gelu");
      c.fused_qkv = c.fused_gate_up = true;
      c.causal = false;
      c.rms_norm_eps = num_of(cfg, src, "norm_eps", 1e-5);
      for (const char* k : {"attention_bias", "mlp_bias", "norm_bias"})
        if (cfg.get_bool(k, false))
          throw Error(src + ": \"" + k +
                      "\" is true: ModernBERT's biases are not supported (released models have none)");
      c.tie_word_embeddings = false;
      c.embedding_model = true;
      c.pooling = cfg.get_string("classifier_pooling", "cls") == "mean" ? Pooling::Mean : Pooling::Cls;
      c.notes.push_back(
          "pooling: classifier_pooling unless sentence-transformers' 1_Pooling/config.json says otherwise");
      break;
    }
    default: break;
  }
  // A decoder as an embedding model (Qwen3-Embedding): the last token's final hidden state. It has
  // no lm_head: the engines' output projection (unused) is the embedding table.
  if (c.embedding_model && !c.is_encoder()) {
    c.pooling = Pooling::Last;
    c.tie_word_embeddings = true;
  }

  c.bos_token_id = token_id(cfg, src, "bos_token_id");
  if (!c.bos_token_id) c.bos_token_id = token_id(top_cfg, src, "bos_token_id");
  add_ids(c.eos_token_ids, cfg.find("eos_token_id"), src, "eos_token_id");
  if (&cfg != &top_cfg) add_ids(c.eos_token_ids, top_cfg.find("eos_token_id"), src, "eos_token_id");
  c.validate(src);
  return c;
}

ModelConfig config_from_hf_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  fs::path p = dir / "config.json";
  if (!fs::exists(p)) throw Error(dir.string() + ": no config.json");
  ModelConfig c = config_from_hf(json::parse_file(p), p.string());
  fs::path g = dir / "generation_config.json";
  if (fs::exists(g)) {
    json::Value gen = json::parse_file(g);
    if (gen.is_object()) {
      add_ids(c.eos_token_ids, gen.find("eos_token_id"), g.string(), "eos_token_id");
      if (!c.bos_token_id) c.bos_token_id = token_id(gen, g.string(), "bos_token_id");
      c.validate(g.string());
    }
  }
  // sentence-transformers: modules.json names the pooling module's folder, whose config.json says how.
  fs::path modules = dir / "modules.json";
  if (fs::exists(modules)) {
    json::Value mods = json::parse_file(modules);
    if (mods.is_array())
      for (const auto& m : mods.items()) {
        if (!m.is_object() || !m.get_string("type").ends_with("Pooling")) continue;
        fs::path pc = dir / m.get_string("path") / "config.json";
        if (!fs::exists(pc)) throw Error(modules.string() + ": the pooling module's " + pc.string() + " is missing");
        json::Value pool = json::parse_file(pc);
        if (!pool.is_object()) throw Error(pc.string() + ": not a JSON object");
        std::string mode = pool.get_string("pooling_mode");
        Pooling p2 = Pooling::None;
        if (pool.get_bool("pooling_mode_cls_token", false) || mode == "cls")
          p2 = Pooling::Cls;
        else if (pool.get_bool("pooling_mode_mean_tokens", false) || mode == "mean")
          p2 = Pooling::Mean;
        else if (pool.get_bool("pooling_mode_lasttoken", false) || mode == "lasttoken")
          p2 = Pooling::Last;
        else
          throw Error(pc.string() + ": only CLS, mean and last-token pooling are supported");
        c.pooling = p2;
        c.embedding_model = true;
        std::erase_if(c.notes, [](const std::string& n) { return n.starts_with("pooling:"); });
      }
  }
  return c;
}

}  // namespace wgc::llm
