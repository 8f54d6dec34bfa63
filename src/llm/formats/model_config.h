// ModelConfig: the hyper-parameters of a transformer language or embedding model, read from a GGUF
// file's metadata (llama.cpp's key names) or a Hugging Face config.json (transformers 4 `rope_theta`/
// `rope_scaling` and transformers 5 `rope_parameters`, also per layer type, both understood). One
// struct whatever the file format; the tensor names of each architecture are in tensor_names.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::json {
class Value;
}

namespace wgc::llm {

class GgufFile;

// The layer structure's family (Mixtral: Llama's layers with a mixture of experts; a RoBERTa or an
// XLM-RoBERTa is a Bert with position_offset; ModernBert: the rotary pre-norm encoder, GeGLU MLP,
// global and local attention layers; NomicBert: BERT's post-norm layers with rotary q/k, a fused
// Wqkv and a SwiGLU MLP, no position table).
enum class Architecture {
  Llama,
  Mistral,
  Qwen2,
  Qwen3,
  Gemma2,
  Gemma3,
  Phi3,
  Mixtral,
  Qwen2Moe,
  Qwen3Moe,
  Olmoe,
  Glm4,
  Bert,
  ModernBert,
  NomicBert
};
// "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "mixtral", "qwen2moe", "qwen3moe",
// "olmoe", "glm4", "bert", "modern-bert", "nomic-bert"
std::string_view to_string(Architecture a);

enum class RopeScalingType { None, Linear, Llama3, Yarn, LongRope };
std::string_view to_string(RopeScalingType t);  // "none", "linear", "llama3", "yarn", "longrope"

// How a norm uses its weight: x/rms * w (Llama), x/rms * (1 + w) (Gemma: the file stores w; llama.cpp's
// converter adds the 1 into its GGUF, so a GGUF of Gemma reads as RmsNorm), or (x - mean)/std * w + b.
enum class NormKind { RmsNorm, RmsNormOnePlus, LayerNorm };
std::string_view to_string(NormKind k);  // "rms", "rms_one_plus", "layer"

// Where a layer's norms sit. Pre: x + attn(norm(x)), then the same for the MLP (Llama). Sandwich: a norm
// before and after each block, x + norm2(attn(norm1(x))) (Gemma 2/3). Post: norm(x + attn(x)), BERT.
enum class NormPlacement { Pre, Sandwich, Post };
std::string_view to_string(NormPlacement p);  // "pre", "sandwich", "post"

// The MLP's activation: gated (act(gate(x)) * up(x), then down) for the decoders, plain act(up(x) + b)
// for BERT. GeluTanh is the tanh approximation (gelu_pytorch_tanh), Gelu the exact erf form.
enum class Activation { Silu, GeluTanh, Gelu };
std::string_view to_string(Activation a);  // "silu", "gelu_tanh", "gelu"

// Sentence embeddings from the last hidden states: none (a causal LM), the mean over the tokens, the
// first token ([CLS]) or the last token (Qwen3-Embedding). Values as llama.cpp's pooling_type.
enum class Pooling { None = 0, Mean = 1, Cls = 2, Last = 3 };
std::string_view to_string(Pooling p);  // "none", "mean", "cls", "last"

struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  double factor = 1.0;                           // linear, llama3, yarn; longrope: max_pos / original
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3, yarn, longrope (and linear, where given)
  double beta_fast = 32.0, beta_slow = 1.0;      // yarn
  bool yarn_truncate = true;                     // yarn: floor/ceil the correction range (transformers' default)
  // yarn and longrope: the cos/sin multiplier; absent: yarn 0.1 ln(factor) + 1, longrope
  // sqrt(1 + ln(factor) / ln(original)) (1 when factor <= 1).
  std::optional<double> attention_factor{};
  std::vector<double> short_factor{}, long_factor{};  // longrope: rope_dim / 2 divisors each
};

struct ModelConfig {
  Architecture architecture = Architecture::Llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn_size = 0;  // intermediate size of the dense MLP (MoE: of each expert, = expert_ffn_size)
  int64_t rope_dim = 0;  // rotated dimensions per head (partial rotary: < head_dim; 0: no rope, BERT)
  // The rotated pairs are adjacent features (2i, 2i + 1) of a head (GLM-4, GPT-J's layout) rather than
  // (i, i + rope_dim / 2) (transformers' rotate_half).
  bool rope_interleaved = false;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  // Per-frequency divisors from a GGUF `rope_freqs.weight` tensor (llama.cpp's form of llama3
  // scaling), rope_dim / 2 entries; empty when the file has none.
  std::vector<float> rope_freq_factors;
  double rms_norm_eps = 1e-5;        // also the LayerNorm epsilon of the encoders
  bool tie_word_embeddings = false;  // no lm_head.weight: the output projection is embed_tokens
  bool attention_bias = false;       // q/k/v projections have biases (Qwen2, Qwen2-MoE, BERT)
  bool qk_norm = false;              // per-head RMSNorm of q and k before rope (Qwen3, Gemma 3)
  int64_t max_position_embeddings = 0;
  std::optional<int32_t> bos_token_id;
  std::vector<int32_t> eos_token_ids;  // any of them ends generation
  // Keys farther back than this many positions are not attended to (a query sees itself and the
  // window - 1 keys before it, as transformers and llama.cpp count). With sliding_layers empty: every
  // layer (Mistral); otherwise only the layers marked there (Gemma). An encoder (ModernBERT's
  // local_attention) looks both ways: a query sees the keys at most window / 2 positions away.
  std::optional<int64_t> sliding_window;
  // Defaults the reader had to assume, in words (e.g. a GGUF without llama.rope.freq_base gets
  // llama.cpp's default theta 10000): worth showing to a user when outputs look wrong.
  std::vector<std::string> notes;

  // --- layer structure (what differs from Llama) --------------------------------------------------
  NormKind norm = NormKind::RmsNorm;
  NormPlacement norm_placement = NormPlacement::Pre;
  Activation activation = Activation::Silu;
  bool gated_ffn = true;            // act(gate) * up (decoders); false: act(up + b) (BERT)
  bool qk_norm_whole = false;       // OLMoE: q and k normalised over all heads at once (weights nh*hd, nkv*hd)
  bool fused_qkv = false;           // one qkv projection of (nh + 2 nkv) * hd rows, q then k then v (Phi-3)
  bool fused_gate_up = false;       // one gate_up projection of 2 * ffn rows, gate then up (Phi-3)
  bool attention_out_bias = false;  // o projection has a bias (BERT)
  bool ffn_bias = false;            // MLP projections have biases (BERT)
  double embedding_scale = 1.0;     // token embeddings multiplied by this (Gemma: sqrt(hidden_size))
  // Attention scores are q.k / sqrt(query_pre_attn_scalar) (Gemma's key); 0: head_dim.
  double query_pre_attn_scalar = 0;
  double attn_logit_softcap = 0;   // scores -> cap * tanh(scores / cap) before the mask; 0: none
  double final_logit_softcap = 0;  // logits -> cap * tanh(logits / cap); 0: none
  // Per layer: true where the layer attends through the sliding window (empty: every layer does when
  // sliding_window is set). Gemma 2: even layers; Gemma 3: five of every six.
  std::vector<bool> sliding_layers;
  // Rope of the sliding-window layers where it differs (Gemma 3: base 10000, unscaled).
  std::optional<double> sliding_rope_theta;
  std::optional<RopeScaling> sliding_rope_scaling;

  // --- mixture of experts (n_experts == 0: a dense MLP) ------------------------------------------
  int64_t n_experts = 0;               // routed experts per MoE layer
  int64_t n_experts_used = 0;          // top-k per token
  int64_t expert_ffn_size = 0;         // intermediate size of each routed expert
  int64_t shared_expert_ffn_size = 0;  // Qwen2-MoE's always-on expert (0: none); its output is scaled
                                       // by sigmoid(shared_expert_gate . x)
  // Router: softmax over all experts, keep the top k; renormalise those k weights to sum 1 when set
  // (Mixtral always; Qwen*-MoE and OLMoE per norm_topk_prob).
  bool norm_topk_prob = false;
  // Layers with a dense MLP instead of experts (Qwen*-MoE mlp_only_layers / decoder_sparse_step).
  std::vector<bool> dense_layers;

  // --- encoders and embedding models ----------------------------------------------------------------
  bool causal = true;               // false: every token attends to every token (BERT)
  bool absolute_positions = false;  // learned position embeddings added to the token embeddings
  int64_t position_offset = 0;      // position of the first token in that table (RoBERTa in HF files: pad + 1)
  int64_t type_vocab_size = 0;      // token type (segment) embeddings; 0: none
  Pooling pooling = Pooling::None;  // sentence embedding of an embedding model
  bool embedding_model = false;     // no lm_head: the output is hidden states (BERT, Qwen3-Embedding)

  bool is_moe() const { return n_experts > 0; }
  // A bidirectional encoder that EncoderModel runs (BERT, RoBERTa, XLM-RoBERTa, ModernBERT, nomic-bert).
  bool is_encoder() const {
    return architecture == Architecture::Bert || architecture == Architecture::ModernBert ||
           architecture == Architecture::NomicBert;
  }
  bool layer_is_moe(int64_t layer) const;
  bool layer_is_sliding(int64_t layer) const;
  // The scale of q.k: 1 / sqrt(query_pre_attn_scalar or head_dim).
  double attention_scale() const;
  double layer_rope_theta(int64_t layer) const;
  const RopeScaling& layer_rope_scaling(int64_t layer) const;
  // The first layer whose rope is not the global layers' (Gemma 3's sliding layers: their own base,
  // no scaling), or -1 when every layer shares one.
  int64_t sliding_rope_layer() const;

  // The inverse rotary frequencies for pairs i = 0 .. rope_dim/2 - 1 of `layer` (-1: the global
  // layers' rope), with the scaling applied: theta^(-2i/rope_dim), divided per rope_scaling (or by
  // rope_freq_factors where present). The engine rotates (x[i], x[i + rope_dim/2]) (Hugging Face /
  // neox half-split layout) by pos * f[i]. LongRoPE uses the long factors when `seq_len` exceeds
  // original_max_position_embeddings (transformers decides by the sequence length, llama.cpp by the
  // context size: pass the one the engine follows).
  std::vector<double> rope_inv_freq(int64_t layer = -1, int64_t seq_len = 0) const;
  // The multiplier of cos and sin (so of q.k twice) that yarn and longrope ask for; 1 otherwise.
  double rope_attention_factor(int64_t layer = -1) const;

  // Throws wgc::Error (prefixed by `source`) if sizes are missing or inconsistent.
  void validate(const std::string& source) const;
};

// From GGUF metadata ("{arch}.embedding_length", ...; tensor presence decides tie/bias/qk-norm).
ModelConfig config_from_gguf(const GgufFile& f);
// From a parsed config.json (`source` names it in errors).
ModelConfig config_from_hf(const json::Value& config, const std::string& source);
// Reads `dir`/config.json, and generation_config.json beside it where present (more eos ids), and
// sentence-transformers' modules.json / 1_Pooling/config.json where present (the pooling).
ModelConfig config_from_hf_dir(const std::filesystem::path& dir);

// The architectures the engines in src/llm/model run (Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3,
// Phi-3, and the mixtures of experts Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE); the others are read
// (configs, tensors, `wgc inspect`, the CPU reference) but refused by open_model unless asked
// (engine_refusal says why).
bool engine_runs(const ModelConfig& c);
// Why open_model refuses c (empty when engine_runs(c)).
std::string engine_refusal(const ModelConfig& c);

}  // namespace wgc::llm
