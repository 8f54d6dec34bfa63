// ModelConfig: the hyper-parameters of a Llama-family model, read from a GGUF file's metadata or a
// Hugging Face config.json (transformers 4 `rope_theta`/`rope_scaling` and transformers 5
// `rope_parameters` both understood). One struct whatever the file format.
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

enum class Architecture { Llama, Mistral, Qwen2, Qwen3 };
std::string_view to_string(Architecture a);  // "llama", "mistral", "qwen2", "qwen3"

enum class RopeScalingType { None, Linear, Llama3 };
std::string_view to_string(RopeScalingType t);  // "none", "linear", "llama3"

struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  double factor = 1.0;
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3 (and linear, where given)
};

struct ModelConfig {
  Architecture architecture = Architecture::Llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn_size = 0;  // intermediate size of the SwiGLU MLP
  int64_t rope_dim = 0;  // rotated dimensions per head (== head_dim for these architectures)
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  // Per-frequency divisors from a GGUF `rope_freqs.weight` tensor (llama.cpp's form of llama3
  // scaling), rope_dim / 2 entries; empty when the file has none.
  std::vector<float> rope_freq_factors;
  double rms_norm_eps = 1e-5;
  bool tie_word_embeddings = false;  // no lm_head.weight: the output projection is embed_tokens
  bool attention_bias = false;       // q/k/v projections have biases (Qwen2)
  bool qk_norm = false;              // per-head RMSNorm of q and k before rope (Qwen3)
  int64_t max_position_embeddings = 0;
  std::optional<int32_t> bos_token_id;
  std::vector<int32_t> eos_token_ids;  // any of them ends generation
  std::optional<int64_t> sliding_window;
  // Defaults the reader had to assume, in words (e.g. a GGUF without llama.rope.freq_base gets
  // llama.cpp's default theta 10000): worth showing to a user when outputs look wrong.
  std::vector<std::string> notes;

  // The inverse rotary frequencies for pairs i = 0 .. rope_dim/2 - 1, with the scaling applied:
  // theta^(-2i/rope_dim), divided per rope_scaling (or by rope_freq_factors where present). The
  // engine rotates (x[i], x[i + rope_dim/2]) (Hugging Face / neox half-split layout) by pos * f[i].
  std::vector<double> rope_inv_freq() const;

  // Throws wgc::Error (prefixed by `source`) if sizes are missing or inconsistent.
  void validate(const std::string& source) const;
};

// From GGUF metadata ("{arch}.embedding_length", ...; tensor presence decides tie/bias/qk-norm).
ModelConfig config_from_gguf(const GgufFile& f);
// From a parsed config.json (`source` names it in errors).
ModelConfig config_from_hf(const json::Value& config, const std::string& source);
// Reads `dir`/config.json, and generation_config.json beside it where present (more eos ids).
ModelConfig config_from_hf_dir(const std::filesystem::path& dir);

}  // namespace wgc::llm
