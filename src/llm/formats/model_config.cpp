#include "llm/formats/model_config.h"

#include "llm/formats/gguf.h"
#include "util/error.h"
#include "util/json.h"

#include <cmath>
#include <cstring>
#include <numbers>

namespace wgc::llm {

std::string_view to_string(Architecture a) {
  switch (a) {
    case Architecture::Llama: return "llama";
    case Architecture::Mistral: return "mistral";
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
  }
  return "?";
}

std::string_view to_string(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::None: return "none";
    case RopeScalingType::Linear: return "linear";
    case RopeScalingType::Llama3: return "llama3";
  }
  return "?";
}

namespace {

std::optional<Architecture> parse_arch(std::string_view s) {
  if (s == "llama") return Architecture::Llama;
  if (s == "mistral") return Architecture::Mistral;
  if (s == "qwen2") return Architecture::Qwen2;
  if (s == "qwen3") return Architecture::Qwen3;
  return std::nullopt;
}

void add_unique(std::vector<int32_t>& v, int64_t id) {
  if (id < INT32_MIN || id > INT32_MAX) return;
  for (int32_t x : v)
    if (x == id) return;
  v.push_back(int32_t(id));
}

}  // namespace

std::vector<double> ModelConfig::rope_inv_freq() const {
  int64_t dim = rope_dim ? rope_dim : head_dim;
  std::vector<double> f(size_t(std::max<int64_t>(dim / 2, 0)));
  for (size_t i = 0; i < f.size(); ++i) f[i] = std::pow(rope_theta, -double(2 * i) / double(dim));
  if (!rope_freq_factors.empty()) {
    for (size_t i = 0; i < f.size() && i < rope_freq_factors.size(); ++i) f[i] /= double(rope_freq_factors[i]);
    return f;
  }
  const RopeScaling& s = rope_scaling;
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
  }
  return f;
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
  if (n_heads * head_dim > INT32_MAX || (n_heads + 2 * n_kv_heads) * head_dim > INT32_MAX)
    throw Error(source + ": " + std::to_string(n_heads) + " heads of " + std::to_string(head_dim) +
                " exceed 32-bit sizes");
  if (n_heads % n_kv_heads)
    throw Error(source + ": " + std::to_string(n_heads) + " heads is not a multiple of " + std::to_string(n_kv_heads) +
                " KV heads");
  if (rope_dim <= 0 || rope_dim % 2 || rope_dim > head_dim)
    throw Error(source + ": rope dimension " + std::to_string(rope_dim) + " is not even and <= head_dim " +
                std::to_string(head_dim));
  if (!(rope_theta > 0)) throw Error(source + ": rope theta " + std::to_string(rope_theta) + " is not positive");
  // Special tokens index the embedding and the logits: an id past the vocabulary reads other memory.
  auto token = [&](int64_t id, const char* what) {
    if (id < 0 || id >= vocab_size)
      throw Error(source + ": " + what + " " + std::to_string(id) + " is not a token id (the vocabulary has " +
                  std::to_string(vocab_size) + " tokens)");
  };
  if (bos_token_id) token(*bos_token_id, "bos_token_id");
  for (int32_t id : eos_token_ids) token(id, "eos_token_id");
  if (!(rms_norm_eps >= 0)) throw Error(source + ": rms_norm_eps is negative");
  if (rope_scaling.type != RopeScalingType::None && !(rope_scaling.factor > 0))
    throw Error(source + ": rope scaling factor " + std::to_string(rope_scaling.factor) + " is not positive");
  // (GGUF files carry llama3 scaling as per-frequency factors instead: nothing else to check then.)
  if (rope_scaling.type == RopeScalingType::Llama3 && rope_freq_factors.empty() &&
      (rope_scaling.original_max_position_embeddings <= 0 ||
       !(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor) || !(rope_scaling.low_freq_factor > 0)))
    throw Error(source +
                ": llama3 rope scaling needs original_max_position_embeddings > 0 and high_freq_factor > "
                "low_freq_factor > 0");
}

// --- GGUF ---------------------------------------------------------------------------------------

ModelConfig config_from_gguf(const GgufFile& f) {
  ModelConfig c;
  const std::string& src = f.name();
  std::string arch = f.get_string("general.architecture");
  if (arch.empty()) throw Error(src + ": no general.architecture");
  auto a = parse_arch(arch);
  if (!a) throw Error(src + ": architecture '" + arch + "' is not supported (llama, mistral, qwen2, qwen3)");
  c.architecture = *a;
  auto key = [&](const char* k) { return arch + "." + k; };
  auto required_u32 = [&](const char* k) -> int64_t {
    std::string full = key(k);
    if (!f.find(full)) throw Error(src + ": missing metadata key '" + full + "'");
    return f.get_u32(full);
  };

  c.hidden_size = required_u32("embedding_length");
  c.n_layers = required_u32("block_count");
  c.ffn_size = required_u32("feed_forward_length");
  c.n_heads = required_u32("attention.head_count");
  c.n_kv_heads = f.get_u32(key("attention.head_count_kv"), uint32_t(c.n_heads));
  c.head_dim = f.get_u32(key("attention.key_length"), c.n_heads ? uint32_t(c.hidden_size / c.n_heads) : 0);
  c.rope_dim = f.get_u32(key("rope.dimension_count"), uint32_t(c.head_dim));
  c.rope_theta = f.get_f32(key("rope.freq_base"), 10000.f);  // llama.cpp's default when absent
  if (!f.find(key("rope.freq_base")))
    c.notes.push_back("no " + key("rope.freq_base") + ": rope theta 10000 (llama.cpp's default)");
  c.rms_norm_eps = f.get_f32(key("attention.layer_norm_rms_epsilon"), 1e-5f);
  if (!f.find(key("attention.layer_norm_rms_epsilon")))
    c.notes.push_back("no " + key("attention.layer_norm_rms_epsilon") + ": eps 1e-5");
  c.max_position_embeddings = f.get_u32(key("context_length"), 0);
  if (c.max_position_embeddings > INT32_MAX)
    throw Error(src + ": metadata key '" + key("context_length") + "' is " + std::to_string(c.max_position_embeddings) +
                ", beyond the largest context wgc supports (" + std::to_string(INT32_MAX) + ")");
  if (f.find(key("attention.sliding_window"))) c.sliding_window = f.get_u32(key("attention.sliding_window"));

  c.vocab_size = f.get_u32(key("vocab_size"), 0);
  if (!c.vocab_size) {
    if (const GgufValue* t = f.find("tokenizer.ggml.tokens"); t && t->is_array()) c.vocab_size = int64_t(t->size());
    if (const GgufTensorInfo* e = f.find_tensor("token_embd.weight"); !c.vocab_size && e && e->ne.size() == 2)
      c.vocab_size = e->ne[1];
  }

  std::string scaling = f.get_string(key("rope.scaling.type"), "none");
  float factor = f.get_f32(key("rope.scaling.factor"), 0.f);
  if (factor == 0.f) {
    float scale_linear = f.get_f32(key("rope.scale_linear"), 0.f);  // older files
    if (scale_linear != 0.f) {
      scaling = "linear";
      factor = scale_linear;
    }
  }
  if (scaling == "linear" && factor != 0.f && factor != 1.f) {
    c.rope_scaling.type = RopeScalingType::Linear;
    c.rope_scaling.factor = factor;
    c.rope_scaling.original_max_position_embeddings = f.get_u32(key("rope.scaling.original_context_length"), 0);
  } else if (scaling != "none" && scaling != "linear") {
    throw Error(src + ": rope scaling type '" + scaling + "' is not supported (none, linear, llama3)");
  }
  if (const GgufTensorInfo* rf = f.find_tensor("rope_freqs.weight")) {
    if (rf->type != TensorType::F32 || rf->numel() != c.rope_dim / 2)
      throw Error(src + ": tensor 'rope_freqs.weight' is " + std::string(to_string(rf->type)) + " of " +
                  std::to_string(rf->numel()) +
                  " values, expected F32 of rope_dim/2 = " + std::to_string(c.rope_dim / 2));
    auto bytes = f.tensor_data(*rf);
    c.rope_freq_factors.resize(size_t(rf->numel()));
    if (!bytes.empty()) std::memcpy(c.rope_freq_factors.data(), bytes.data(), bytes.size());
    // llama.cpp writes llama3 scaling as these factors; report the type (the exact parameters are
    // not in the file: the factors are what rope_inv_freq() uses).
    c.rope_scaling.type = RopeScalingType::Llama3;
    float mx = 1;
    for (float x : c.rope_freq_factors) mx = std::max(mx, x);
    c.rope_scaling.factor = mx;
  }

  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  c.attention_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = f.find_tensor("blk.0.attn_q_norm.weight") != nullptr;

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

// --- Hugging Face config.json -------------------------------------------------------------------

namespace {

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

}  // namespace

ModelConfig config_from_hf(const json::Value& cfg, const std::string& src) {
  if (!cfg.is_object()) throw Error(src + ": not a JSON object");
  ModelConfig c;
  std::string type = cfg.get_string("model_type");
  std::optional<Architecture> arch = parse_arch(type);
  if (!arch && type.empty())
    if (const json::Value* as = cfg.find("architectures"); as && as->is_array() && as->size() && (*as)[0].is_string()) {
      const std::string& cls = (*as)[0].as_string();
      if (cls == "LlamaForCausalLM") arch = Architecture::Llama;
      if (cls == "MistralForCausalLM") arch = Architecture::Mistral;
      if (cls == "Qwen2ForCausalLM") arch = Architecture::Qwen2;
      if (cls == "Qwen3ForCausalLM") arch = Architecture::Qwen3;
      type = cls;
    }
  if (!arch) throw Error(src + ": model_type '" + type + "' is not supported (llama, mistral, qwen2, qwen3)");
  c.architecture = *arch;

  c.vocab_size = int_of(cfg, src, "vocab_size");
  c.hidden_size = int_of(cfg, src, "hidden_size");
  c.n_layers = int_of(cfg, src, "num_hidden_layers");
  c.n_heads = int_of(cfg, src, "num_attention_heads");
  c.n_kv_heads = int_of(cfg, src, "num_key_value_heads", c.n_heads);
  c.head_dim = int_of(cfg, src, "head_dim", c.n_heads > 0 ? c.hidden_size / c.n_heads : 0);
  c.rope_dim = c.head_dim;
  c.ffn_size = int_of(cfg, src, "intermediate_size");
  c.rms_norm_eps = num_of(cfg, src, "rms_norm_eps", 1e-6);
  c.max_position_embeddings = int_of(cfg, src, "max_position_embeddings", 0);
  if (c.max_position_embeddings < 0 || c.max_position_embeddings > INT32_MAX)
    throw Error(src + ": \"max_position_embeddings\" is " + std::to_string(c.max_position_embeddings) +
                ", expected 0.." + std::to_string(INT32_MAX));
  if (const json::Value* t = cfg.find("tie_word_embeddings"); t && t->is_bool()) c.tie_word_embeddings = t->as_bool();

  bool bias = cfg.get_bool("attention_bias", false);
  c.attention_bias = c.architecture == Architecture::Qwen2 ? true : bias;
  c.qk_norm = c.architecture == Architecture::Qwen3;

  if (c.architecture == Architecture::Mistral) {
    if (const json::Value* w = cfg.find("sliding_window"); w && w->is_int()) c.sliding_window = w->as_int();
  } else if (c.architecture == Architecture::Qwen2 || c.architecture == Architecture::Qwen3) {
    if (cfg.get_bool("use_sliding_window", false)) {
      if (const json::Value* w = cfg.find("sliding_window"); w && w->is_int()) c.sliding_window = w->as_int();
    }
  }

  // Rope: transformers 5 puts theta and scaling in "rope_parameters"; transformers 4 has
  // "rope_theta" and "rope_scaling".
  const json::Value* rp = cfg.find("rope_parameters");
  const json::Value* scaling = nullptr;
  if (rp && rp->is_object()) {
    c.rope_theta = num_of(*rp, src, "rope_theta", num_of(cfg, src, "rope_theta", 10000.0));
    scaling = rp;
  } else {
    c.rope_theta = num_of(cfg, src, "rope_theta", 10000.0);
    scaling = cfg.find("rope_scaling");
  }
  if (scaling && scaling->is_object()) {
    std::string rt = scaling->get_string("rope_type", scaling->get_string("type", "default"));
    RopeScaling& s = c.rope_scaling;
    if (rt == "default") {
      s.type = RopeScalingType::None;
    } else if (rt == "linear") {
      s.type = RopeScalingType::Linear;
      s.factor = num_of(*scaling, src, "factor", 1.0);
    } else if (rt == "llama3") {
      s.type = RopeScalingType::Llama3;
      s.factor = num_of(*scaling, src, "factor", 1.0);
      s.low_freq_factor = num_of(*scaling, src, "low_freq_factor", 1.0);
      s.high_freq_factor = num_of(*scaling, src, "high_freq_factor", 4.0);
      s.original_max_position_embeddings = int_of(*scaling, src, "original_max_position_embeddings");
    } else {
      throw Error(src + ": rope type '" + rt + "' is not supported (default, linear, llama3)");
    }
  } else if (scaling && !scaling->is_null()) {
    throw Error(src + ": rope scaling is " + scaling->dump() + ", expected an object");
  }

  c.bos_token_id = token_id(cfg, src, "bos_token_id");
  add_ids(c.eos_token_ids, cfg.find("eos_token_id"), src, "eos_token_id");
  c.validate(src);
  return c;
}

ModelConfig config_from_hf_dir(const std::filesystem::path& dir) {
  std::filesystem::path p = dir / "config.json";
  if (!std::filesystem::exists(p)) throw Error(dir.string() + ": no config.json");
  ModelConfig c = config_from_hf(json::parse_file(p), p.string());
  std::filesystem::path g = dir / "generation_config.json";
  if (std::filesystem::exists(g)) {
    json::Value gen = json::parse_file(g);
    if (gen.is_object()) {
      add_ids(c.eos_token_ids, gen.find("eos_token_id"), g.string(), "eos_token_id");
      if (!c.bos_token_id) c.bos_token_id = token_id(gen, g.string(), "bos_token_id");
      c.validate(g.string());
    }
  }
  return c;
}

}  // namespace wgc::llm
