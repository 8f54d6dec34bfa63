// Synthetic models: GGUF files with random weights and the exact shapes, tensor names, types and
// metadata of real Llama-family models (as llama.cpp's converter writes them), for benchmarks that
// need the real sizes but not trained weights (speed does not depend on the values).
//
//   auto& shape = synth::find_shape("llama-3.2-1b");
//   synth::SynthModel m(shape, TensorType::Q8_0, /*seed=*/1);
//   m.write("llama-3.2-1b-q8_0.gguf");              // streamed, multithreaded, with a progress bar
//
// What a file holds:
//  - metadata: general.* (architecture, name, size_label, file_type, quantization_version), the
//    {arch}.* hyper-parameters llama.cpp reads, tokenizer.ggml.* (a gpt2 byte-level BPE tokenizer
//    with a synthetic vocabulary of the real size: the 256 byte tokens, generated merges, and the
//    model family's special tokens at their real ids; the nomic-bert shapes: a synthetic BERT
//    WordPiece vocabulary as llama.cpp's converter stores one), and wgc.synthetic.{shape,seed};
//  - tensors in GGUF's names and GGML order: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v,
//    attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down} (+ attn_{q,k,v}.bias for Qwen2),
//    output_norm, output (absent when the embeddings are tied), and rope_freqs (llama3 rope
//    scaling, computed as convert_hf_to_gguf.py does); the other architectures' tensors as
//    tensor_names.h lists them (Gemma's post norms, Phi-3's attn_qkv, the experts merged per layer
//    into ffn_{gate,up,down}_exps [experts, rows, cols], BERT's biases, positions and types,
//    nomic-bert's attn_qkv, ffn_gate and token types without positions);
//  - matrices in the requested type (all of them: token_embd and output too, as llama-quantize
//    --pure would; Q4_K: llama.cpp's Q4_K_M mix, see matrix_type), norms, biases, rope_freqs and
//    the encoders' token_types / position_embd in F32 as llama.cpp keeps them;
//  - values: matrices ~N(0, weight_sigma^2) (0.02 but for nomic-bert-tiny's 0.15), biases
//    ~N(0, 0.02^2), norms ~N(1, 0.02^2) (bounded: never inf/NaN),
//    a pure function of (seed, tensor, element): the same seed gives the same file.
#pragma once

#include "cpu/llm/tensor_type.h"
#include "llm/formats/gguf_writer.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm::synth {

// Llama3, Qwen2: byte-level BPE (gpt2); WordPiece: BERT's (tokenizer.ggml.model "bert", the pieces
// in llama.cpp's phantom-space form).
enum class VocabKind { Llama3, Qwen2, WordPiece };

struct ModelShape {
  std::string name;        // "llama-3.2-1b" (the --shape value)
  std::string display;     // "Llama 3.2 1B"
  std::string size_label;  // "1B" (general.size_label)
  std::string arch;        // GGUF general.architecture: "llama", "qwen2"
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0;
  int64_t context = 0;  // {arch}.context_length
  double rope_theta = 10000;
  double rms_eps = 1e-5;
  bool tied = false;            // no output.weight: the output projection is token_embd
  bool attention_bias = false;  // q/k/v biases (Qwen2)
  // llama3 rope scaling (factor 0: none), written as the rope_freqs tensor.
  double rope_factor = 0, rope_low_freq = 1, rope_high_freq = 4;
  int64_t rope_original_context = 8192;
  VocabKind vocab_kind = VocabKind::Llama3;

  // What the other architectures add (keys and tensors as llama.cpp's converter writes them).
  int64_t rope_dim = 0;                        // rotated dims per head (0: head_dim); Phi-3's rope.dimension_count
  int64_t sliding_window = 0;                  // {arch}.attention.sliding_window (0: none)
  double rope_theta_swa = 0;                   // the sliding layers' rope base (Gemma 3; 0: none written)
  double rope_linear_factor = 0;               // linear rope scaling (Gemma 3's global layers; 0: none)
  double rope_yarn_factor = 0;                 // YaRN scaling from rope_original_context (0: none; tests)
  double attn_softcap = 0, final_softcap = 0;  // Gemma 2
  bool qk_norm = false;                        // blk.N.attn_q_norm / attn_k_norm [head_dim]
  bool sandwich_norms = false;                 // Gemma: blk.N.post_attention_norm, post_ffw_norm
  bool fused_qkv = false;                      // Phi-3: blk.N.attn_qkv
  bool fused_gate_up = false;                  // Phi-3, GLM-4: ffn_up holding gate and up (no ffn_gate)
  int64_t n_experts = 0, n_experts_used = 0;   // mixture of experts: ffn_gate_inp, ffn_{gate,up,down}_exps
  int64_t expert_ffn = 0;                      // each expert's intermediate size ({arch}.expert_feed_forward_length)
  int64_t shared_expert_ffn = 0;               // Qwen2-MoE's shared expert (0: none)
  bool encoder = false;                        // BERT: bidirectional, learned positions, LayerNorm with biases
  int64_t type_vocab = 0;                      // BERT token types
  uint32_t pooling = 0;                        // {arch}.pooling_type (llama.cpp: 1 mean, 2 cls, 3 last)
  // nomic-bert's encoder ("nomic-bert"): a fused attn_qkv, SwiGLU ffn_gate / ffn_up, rotary
  // positions (rope.freq_base) instead of position_embd, no biases but the LayerNorms'.
  float weight_sigma = 0.02f;  // the matrices' standard deviation (larger: sharper attention in tests)
};

// llama-3.2-1b, llama-3.2-3b, llama-3.1-8b, qwen2.5-0.5b, gemma-2-9b, gemma-3-12b, phi-3-mini, phi-4, glm-4-9b,
// mistral-7b (its 4096 window written as llama.attention.sliding_window, which llama.cpp ignores),
// mixtral-8x7b, qwen3-30b-a3b, bge-base, nomic-embed-text-v1.5, tiny (a two-layer model for tests),
// nomic-bert-tiny (tests/data/arch/nomic-bert's model: 3 heads of 24, hidden 72, ffn 68).
std::span<const ModelShape> shapes();
// The shape of that name; wgc::Error listing the known names otherwise.
const ModelShape& find_shape(std::string_view name);

// F32, F16, Q8_0, Q4_0, Q4_K, Q6_K from "f32", "f16", "q8_0", "q4_0", "q4_k" (or "q4_k_m"),
// "q6_k" (case-insensitive); wgc::Error otherwise.
TensorType parse_synth_type(std::string_view name);
// llama.cpp's general.file_type (LLAMA_FTYPE_*) of a model of type t (Q4_K: LLAMA_FTYPE_MOSTLY_Q4_K_M).
uint32_t llama_file_type(TensorType t);
// The type of matrix `name` (GGUF name, `cols` per row) in a model of type t: t itself, except
// Q4_K, which stands for llama.cpp's Q4_K_M mix (Q6_K for the output projection and for some
// layers' attn_v and ffn_down), and K-quant rows that are not whole super-blocks (Q8_0).
TensorType matrix_type(TensorType t, std::string_view name, const ModelShape& shape, int64_t cols);

// The synthetic tokenizer of a shape: `vocab` tokens (byte tokens 0..255 in GPT-2's byte-to-unicode
// order, then merged pairs, then the family's special tokens), their types, and the merges.
// WordPiece: [PAD] [UNK] [CLS] [SEP] [MASK], then single characters as word starts and as
// continuations, some words and suffixes, then filler words up to `vocab`.
struct SynthVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;  // llama.cpp token types: 1 normal, 3 control
  std::vector<std::string> merges;
  std::string pre;  // tokenizer.ggml.pre
  int32_t bos = -1, eos = -1, eot = -1, pad = -1;
  bool add_bos = false;
};
SynthVocab synth_vocab(const ModelShape& shape);

// The llama3 rope frequency factors (head_dim / 2 values) as convert_hf_to_gguf.py computes them
// (in float32, as its torch tensors do); empty when the shape has no scaling.
std::vector<float> llama3_rope_factors(const ModelShape& shape);

class SynthModel {
 public:
  SynthModel(const ModelShape& shape, TensorType type, uint64_t seed = 0);

  const ModelShape& shape() const { return shape_; }
  TensorType type() const { return type_; }
  const GgufWriter& writer() const { return writer_; }
  uint64_t file_bytes() const { return writer_.file_bytes(); }
  int64_t params() const;  // elements of all tensors

  // Generates rows of tensor `index` (the GgufTensorFill of the writer); thread-safe.
  void fill(size_t index, int64_t row0, int64_t rows, std::span<std::byte> out) const;
  // The f32 values of rows of a tensor before quantization (tests).
  std::vector<float> values(size_t index, int64_t row0, int64_t rows) const;

  void write(const std::filesystem::path& path, const GgufWriteOptions& opt = {}) const;
  std::vector<std::byte> to_bytes() const;

 private:
  struct Recipe {
    float mean = 0, sigma = 0;
    std::vector<float> fixed;  // constant values (rope_freqs) instead of random ones
    uint64_t key = 0;
  };
  void row_values(size_t index, int64_t row, std::span<float> out) const;

  ModelShape shape_;
  TensorType type_;
  GgufWriter writer_;
  std::vector<Recipe> recipes_;
};

struct SynthOptions {
  uint64_t seed = 0;
  Overwrite overwrite = Overwrite::No;  // replace an existing file (write.overwrite is not used)
  GgufWriteOptions write;
};

// What `wgc synth-model` does: refuses an existing `path` unless opt.overwrite is Yes
// (FileExistsError), checks the free disk space (wgc::Error naming what is needed and what is
// free), then writes the model. An existing file is kept until the new one is complete, unless
// only its space makes room for the new one.
// Returns the model's description (size, params).
SynthModel write_synth_model(const std::filesystem::path& path, const ModelShape& shape, TensorType type,
                             const SynthOptions& opt = {});

}  // namespace wgc::llm::synth
