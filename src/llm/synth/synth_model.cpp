#include "llm/synth/synth_model.h"

#include "llm/synth/quantize.h"
#include "llm/synth/random.h"
#include "util/error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <set>

namespace wgc::llm::synth {

// --- shapes -------------------------------------------------------------------------------------

namespace {

ModelShape llama(std::string name, std::string display, std::string label, int64_t hidden, int64_t layers,
                 int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t ffn, bool tied, double factor) {
  ModelShape s;
  s.name = std::move(name);
  s.display = std::move(display);
  s.size_label = std::move(label);
  s.arch = "llama";
  s.vocab = 128256;
  s.hidden = hidden;
  s.layers = layers;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = head_dim;
  s.ffn = ffn;
  s.context = 131072;
  s.rope_theta = 500000;
  s.rms_eps = 1e-5;
  s.tied = tied;
  s.rope_factor = factor;
  s.rope_low_freq = 1;
  s.rope_high_freq = 4;
  s.rope_original_context = 8192;
  return s;
}

std::vector<ModelShape> make_shapes() {
  std::vector<ModelShape> v;
  v.push_back(llama("llama-3.2-1b", "Llama 3.2 1B", "1B", 2048, 16, 32, 8, 64, 8192, true, 32));
  v.push_back(llama("llama-3.2-3b", "Llama 3.2 3B", "3B", 3072, 28, 24, 8, 128, 8192, true, 32));
  v.push_back(llama("llama-3.1-8b", "Llama 3.1 8B", "8B", 4096, 32, 32, 8, 128, 14336, false, 8));
  // Larger than one 80 GB card in Q8_0 (~75 GB): the layer split's test case (issue 40).
  v.push_back(llama("llama-3.1-70b", "Llama 3.1 70B", "70B", 8192, 80, 64, 8, 128, 28672, false, 8));
  ModelShape q;
  q.name = "qwen2.5-0.5b";
  q.display = "Qwen2.5 0.5B";
  q.size_label = "0.5B";
  q.arch = "qwen2";
  q.vocab = 151936;
  q.hidden = 896;
  q.layers = 24;
  q.heads = 14;
  q.kv_heads = 2;
  q.head_dim = 64;
  q.ffn = 4864;
  q.context = 32768;
  q.rope_theta = 1000000;
  q.rms_eps = 1e-6;
  q.tied = true;
  q.attention_bias = true;
  q.vocab_kind = VocabKind::Qwen2;
  v.push_back(q);
  // Gemma 2 9B: GeGLU, sandwich norms, soft-caps, a 4096 window on every other layer, tied.
  ModelShape g2 = llama("gemma-2-9b", "Gemma 2 9B", "9B", 3584, 42, 16, 8, 256, 14336, true, 0);
  g2.arch = "gemma2";
  g2.vocab = 256000;
  g2.context = 8192;
  g2.rope_theta = 10000;
  g2.rms_eps = 1e-6;
  g2.sliding_window = 4096;
  g2.attn_softcap = 50;
  g2.final_softcap = 30;
  g2.sandwich_norms = true;
  v.push_back(g2);
  // Gemma 3 12B: q/k norms, five 1024-window layers (base 1e4) to one global (1e6, linear x8).
  ModelShape g3 = llama("gemma-3-12b", "Gemma 3 12B", "12B", 3840, 48, 16, 8, 256, 15360, true, 0);
  g3.arch = "gemma3";
  g3.vocab = 262208;
  g3.rope_theta = 1000000;
  g3.rope_theta_swa = 10000;
  g3.rope_linear_factor = 8;
  g3.rms_eps = 1e-6;
  g3.sliding_window = 1024;
  g3.qk_norm = true;
  g3.sandwich_norms = true;
  v.push_back(g3);
  // Phi-3 mini (4k) and Phi-4: fused qkv and gate_up.
  ModelShape p3 = llama("phi-3-mini", "Phi-3 mini 4k", "3.8B", 3072, 32, 32, 32, 96, 8192, false, 0);
  p3.arch = "phi3";
  p3.vocab = 32064;
  p3.context = 4096;
  p3.rope_theta = 10000;
  p3.rope_original_context = 4096;
  p3.sliding_window = 2047;
  p3.fused_qkv = p3.fused_gate_up = true;
  v.push_back(p3);
  ModelShape p4 = llama("phi-4", "Phi-4", "14B", 5120, 40, 40, 10, 128, 17920, false, 0);
  p4.arch = "phi3";
  p4.vocab = 100352;
  p4.context = 16384;
  p4.rope_theta = 250000;
  p4.rope_original_context = 16384;
  p4.fused_qkv = p4.fused_gate_up = true;
  v.push_back(p4);
  // GLM-4 9B (0414): Gemma's sandwich norms, gate|up fused, half of each head rotated by interleaved
  // pairs, q/k/v biases.
  ModelShape gl = llama("glm-4-9b", "GLM-4 9B 0414", "9B", 4096, 40, 32, 2, 128, 13696, false, 0);
  gl.arch = "glm4";
  gl.vocab = 151552;
  gl.context = 32768;
  gl.rope_theta = 10000;
  gl.rope_dim = 64;
  gl.rms_eps = 1.5625e-7;
  gl.attention_bias = true;
  gl.sandwich_norms = true;
  gl.fused_gate_up = true;
  gl.vocab_kind = VocabKind::Qwen2;
  v.push_back(gl);
  // Mistral 7B v0.1: Llama's layers, a 4096 window.
  ModelShape mi = llama("mistral-7b", "Mistral 7B v0.1", "7B", 4096, 32, 32, 8, 128, 14336, false, 0);
  mi.vocab = 32000;
  mi.context = 32768;
  mi.rope_theta = 10000;
  mi.sliding_window = 4096;
  v.push_back(mi);
  // Mixtral 8x7B: 8 experts, 2 per token (llama.cpp's "llama" with expert tensors).
  ModelShape mx = llama("mixtral-8x7b", "Mixtral 8x7B", "8x7B", 4096, 32, 32, 8, 128, 14336, false, 0);
  mx.vocab = 32000;
  mx.context = 32768;
  mx.rope_theta = 1000000;
  mx.n_experts = 8;
  mx.n_experts_used = 2;
  mx.expert_ffn = 14336;
  v.push_back(mx);
  // Qwen3-30B-A3B: 128 small experts, 8 per token, q/k norms.
  ModelShape q3 = llama("qwen3-30b-a3b", "Qwen3 30B A3B", "30B.A3B", 2048, 48, 32, 4, 128, 6144, false, 0);
  q3.arch = "qwen3moe";
  q3.vocab = 151936;
  q3.context = 40960;
  q3.rope_theta = 1000000;
  q3.rms_eps = 1e-6;
  q3.qk_norm = true;
  q3.n_experts = 128;
  q3.n_experts_used = 8;
  q3.expert_ffn = 768;
  q3.vocab_kind = VocabKind::Qwen2;
  v.push_back(q3);
  // bge-base: a BERT encoder, CLS pooling.
  ModelShape bg = llama("bge-base", "bge-base-en-v1.5", "110M", 768, 12, 12, 12, 64, 3072, false, 0);
  bg.arch = "bert";
  bg.vocab = 30522;
  bg.context = 512;
  bg.rms_eps = 1e-12;
  bg.encoder = true;
  bg.type_vocab = 2;
  bg.pooling = 2;
  v.push_back(bg);
  // nomic-embed-text-v1.5: nomic-bert (rotary base 1000, SwiGLU), mean pooling, the converter's
  // trained context.
  ModelShape nb = llama("nomic-embed-text-v1.5", "nomic-embed-text-v1.5", "137M", 768, 12, 12, 12, 64, 3072, false, 0);
  nb.arch = "nomic-bert";
  nb.vocab = 30528;
  nb.context = 2048;
  nb.rope_theta = 1000;
  nb.rms_eps = 1e-12;
  nb.encoder = true;
  nb.type_vocab = 2;
  nb.pooling = 1;
  nb.vocab_kind = VocabKind::WordPiece;
  v.push_back(nb);
  // Small enough for SwiftShader tests, yet every feature of the real ones: GQA, llama3 rope
  // scaling, an untied output, rows that are whole Q4_0/Q8_0 blocks.
  ModelShape t = llama("tiny", "wgc tiny", "tiny", 128, 2, 4, 2, 32, 256, false, 32);
  t.vocab = 512;
  t.context = 2048;
  v.push_back(t);
  // tests/data/arch/nomic-bert: every feature at awkward sizes (hidden 72, 3 heads of 24 rotated
  // whole, ffn 68), weights large enough that the attention is far from uniform.
  ModelShape tn = nb;
  tn.name = "nomic-bert-tiny";
  tn.display = "wgc nomic-bert tiny";
  tn.size_label = "tiny";
  tn.vocab = 160;
  tn.hidden = 72;
  tn.layers = 2;
  tn.heads = tn.kv_heads = 3;
  tn.head_dim = 24;
  tn.ffn = 68;
  tn.context = 128;
  tn.weight_sigma = 0.15f;
  v.push_back(tn);
  return v;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = char(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

}  // namespace

std::span<const ModelShape> shapes() {
  static const std::vector<ModelShape> all = make_shapes();
  return all;
}

const ModelShape& find_shape(std::string_view name) {
  std::string n = lower(name);
  std::string known;
  for (const auto& s : shapes()) {
    if (s.name == n) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw Error("wgc: unknown model shape '" + std::string(name) + "' (known: " + known + ")");
}

TensorType parse_synth_type(std::string_view name) {
  std::string n = lower(name);
  if (n == "f32") return TensorType::F32;
  if (n == "f16") return TensorType::F16;
  if (n == "bf16") return TensorType::BF16;
  if (n == "q8_0") return TensorType::Q8_0;
  if (n == "q4_0") return TensorType::Q4_0;
  if (n == "q4_k" || n == "q4_k_m") return TensorType::Q4_K;
  if (n == "q6_k") return TensorType::Q6_K;
  throw Error("wgc: unknown weight type '" + std::string(name) + "' (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)");
}

uint32_t llama_file_type(TensorType t) {
  switch (t) {
    case TensorType::F32: return 0;    // LLAMA_FTYPE_ALL_F32
    case TensorType::F16: return 1;    // LLAMA_FTYPE_MOSTLY_F16
    case TensorType::BF16: return 32;  // LLAMA_FTYPE_MOSTLY_BF16
    case TensorType::Q4_0: return 2;   // LLAMA_FTYPE_MOSTLY_Q4_0
    case TensorType::Q8_0: return 7;   // LLAMA_FTYPE_MOSTLY_Q8_0
    case TensorType::Q4_K: return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M (the mix of matrix_type)
    case TensorType::Q6_K: return 18;  // LLAMA_FTYPE_MOSTLY_Q6_K
    default: throw Error("wgc: no llama.cpp file type for " + std::string(to_string(t)));
  }
}

// --- tokenizer ----------------------------------------------------------------------------------

namespace {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's bytes_to_unicode() characters, in the order of its first 256 token ids.
std::vector<std::string> byte_tokens() {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
  std::vector<std::string> out;
  for (int b : bs) out.push_back(utf8(uint32_t(b)));
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (std::find(bs.begin(), bs.end(), b) == bs.end()) out.push_back(utf8(uint32_t(256 + n++)));
  return out;
}

std::vector<std::string> llama3_specials(size_t n) {
  static const char* named[] = {"<|begin_of_text|>",
                                "<|end_of_text|>",
                                "<|reserved_special_token_0|>",
                                "<|reserved_special_token_1|>",
                                "<|finetune_right_pad_id|>",
                                "<|reserved_special_token_2|>",
                                "<|start_header_id|>",
                                "<|end_header_id|>",
                                "<|eom_id|>",
                                "<|eot_id|>",
                                "<|python_tag|>"};
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back(i < std::size(named) ? named[i] : "<|reserved_special_token_" + std::to_string(i - 8) + "|>");
  return v;
}

std::vector<std::string> qwen2_specials(size_t n, size_t first_id) {
  static const char* named[] = {"<|endoftext|>",      "<|im_start|>",     "<|im_end|>",     "<|object_ref_start|>",
                                "<|object_ref_end|>", "<|box_start|>",    "<|box_end|>",    "<|quad_start|>",
                                "<|quad_end|>",       "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                                "<|image_pad|>",      "<|video_pad|>",    "<tool_call>",    "</tool_call>",
                                "<|fim_prefix|>",     "<|fim_middle|>",   "<|fim_suffix|>", "<|fim_pad|>",
                                "<|repo_name|>",      "<|file_sep|>"};
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back(i < std::size(named) ? named[i] : "[PAD" + std::to_string(first_id + i) + "]");
  return v;
}

// BERT's WordPiece vocabulary as llama.cpp's converter stores it: word starts as U+2581 + piece,
// continuations without their "##", the [BRACKETED] specials (control tokens) as they are.
SynthVocab wordpiece_vocab(const ModelShape& shape) {
  SynthVocab v;
  const std::string ws = "\xE2\x96\x81";
  for (const char* sp : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    v.tokens.push_back(sp);
    v.types.push_back(3);
  }
  std::set<std::string> seen(v.tokens.begin(), v.tokens.end());
  auto add = [&](std::string t) {
    if (!seen.insert(t).second) return;
    v.tokens.push_back(std::move(t));
    v.types.push_back(1);
  };
  const std::string chars = "abcdefghijklmnopqrstuvwxyz0123456789.,!?;:'-()";
  for (char c : chars) add(ws + c);
  for (char c : chars)
    if (std::isalnum(static_cast<unsigned char>(c))) add(std::string(1, c));
  for (const char* w :
       {"the", "a",     "and",   "of",    "to",   "is",   "in",    "it",     "model", "token",    "text",  "fox",
        "dog", "quick", "brown", "jumps", "over", "lazy", "embed", "search", "query", "document", "rotary"})
    add(ws + w);
  for (const char* w : {"ing", "ed", "er", "s", "ly", "tion", "es", "al"}) add(w);
  for (int64_t i = 0; int64_t(v.tokens.size()) < shape.vocab; ++i) add(ws + "zz" + std::to_string(i));
  if (int64_t(v.tokens.size()) != shape.vocab)
    throw Error("wgc: synthetic WordPiece vocabulary of " + std::to_string(shape.vocab) + " tokens is too small (" +
                std::to_string(v.tokens.size()) + " pieces)");
  v.pre = "default";
  v.pad = 0;
  v.bos = 2;  // [CLS]
  v.eos = 3;  // [SEP]
  v.add_bos = true;
  return v;
}

}  // namespace

SynthVocab synth_vocab(const ModelShape& shape) {
  if (shape.vocab_kind == VocabKind::WordPiece) return wordpiece_vocab(shape);
  SynthVocab v;
  const bool qwen = shape.vocab_kind == VocabKind::Qwen2;
  const int64_t real_normal = qwen ? 151643 : 128000;  // the real models' first special id
  const int64_t n_special = shape.vocab > real_normal ? shape.vocab - real_normal : 16;
  const int64_t n_normal = shape.vocab - n_special;
  if (n_normal <= 256 || n_normal - 256 > 65536 * 257)
    throw Error("wgc: synthetic vocabulary of " + std::to_string(shape.vocab) + " tokens is out of range");
  v.tokens = byte_tokens();
  v.tokens.reserve(size_t(shape.vocab));
  v.merges.reserve(size_t(n_normal - 256));
  // Merges: first every pair of byte tokens, then (pair, byte) triples; each merge creates one token.
  for (int64_t r = 0; r < n_normal - 256; ++r) {
    const std::string* left;
    const std::string* right;
    if (r < 65536) {
      left = &v.tokens[size_t(r / 256)];
      right = &v.tokens[size_t(r % 256)];
    } else {
      left = &v.tokens[size_t(256 + (r - 65536) / 256)];
      right = &v.tokens[size_t((r - 65536) % 256)];
    }
    v.merges.push_back(*left + " " + *right);
    std::string merged = *left + *right;
    v.tokens.push_back(std::move(merged));
  }
  v.types.assign(size_t(n_normal), 1);
  auto specials = qwen ? qwen2_specials(size_t(n_special), size_t(n_normal)) : llama3_specials(size_t(n_special));
  for (auto& s : specials) {
    v.tokens.push_back(std::move(s));
    v.types.push_back(3);
  }
  const int32_t first = int32_t(n_normal);
  if (qwen) {
    v.pre = "qwen2";
    v.bos = first;      // <|endoftext|>
    v.eos = first + 2;  // <|im_end|>
    v.pad = first;
    v.add_bos = false;
  } else {
    v.pre = "llama-bpe";
    v.bos = first;      // <|begin_of_text|>
    v.eos = first + 9;  // <|eot_id|>
    v.eot = first + 9;
    v.add_bos = true;
  }
  return v;
}

std::vector<float> llama3_rope_factors(const ModelShape& s) {
  std::vector<float> out;
  if (s.rope_factor == 0) return out;
  const int64_t dim = s.head_dim;
  const float base = float(s.rope_theta), factor = float(s.rope_factor);
  const float low = float(s.rope_low_freq), high = float(s.rope_high_freq);
  const float old_ctx = float(s.rope_original_context);
  const float low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  for (int64_t i = 0; i < dim; i += 2) {
    float freq = 1.0f / std::pow(base, float(i) / float(dim));
    float wavelen = float(2 * std::numbers::pi) / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(factor);
    } else {
      float smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return out;
}

// --- the model ----------------------------------------------------------------------------------

TensorType matrix_type(TensorType type, std::string_view name, const ModelShape& s, int64_t cols) {
  if (type != TensorType::Q4_K && type != TensorType::Q6_K) return type;
  if (cols % 256) return TensorType::Q8_0;  // llama.cpp's fallback for rows that are not whole super-blocks
  if (type == TensorType::Q6_K) return type;
  // llama.cpp's Q4_K_M (llama_tensor_get_type): Q6_K for the output projection (the embeddings
  // when tied), and for attn_v and ffn_down in the layers use_more_bits picks (the first and last
  // eighth, every third between); Q4_K elsewhere.
  const bool output = name == "output.weight" || (s.tied && name == "token_embd.weight");
  if (output) return TensorType::Q6_K;
  const bool v = name.ends_with(".attn_v.weight"), down = name.ends_with(".ffn_down.weight");
  if (v || down) {
    const int64_t i = std::stoll(std::string(name.substr(4, name.find('.', 4) - 4))), n = s.layers;
    const bool more_bits = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
    if (more_bits) return TensorType::Q6_K;
  }
  return TensorType::Q4_K;
}

SynthModel::SynthModel(const ModelShape& shape, TensorType type, uint64_t seed) : shape_(shape), type_(type) {
  if (!can_quantize(type))
    throw Error("wgc: synthetic models are written as F32, F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K, not " +
                std::string(to_string(type)));
  const ModelShape& s = shape_;
  const std::string& a = s.arch;
  auto k = [&](const char* key) { return a + "." + key; };
  GgufWriter& w = writer_;

  w.add_string("general.architecture", a);
  w.add_string("general.type", "model");
  w.add_string("general.name", s.display + " (synthetic, random weights)");
  w.add_string("general.size_label", s.size_label);
  w.add_u32("general.file_type", llama_file_type(type));
  w.add_u32("general.quantization_version", 2);
  w.add_string("wgc.synthetic.shape", s.name);
  w.add("wgc.synthetic.seed", GgufMetaValue::u64(seed));

  w.add_u32(k("block_count"), uint32_t(s.layers));
  w.add_u32(k("context_length"), uint32_t(s.context));
  w.add_u32(k("embedding_length"), uint32_t(s.hidden));
  w.add_u32(k("feed_forward_length"), uint32_t(s.ffn));
  w.add_u32(k("attention.head_count"), uint32_t(s.heads));
  w.add_u32(k("attention.head_count_kv"), uint32_t(s.kv_heads));
  if (s.encoder) {
    w.add_f32(k("attention.layer_norm_epsilon"), float(s.rms_eps));
    w.add_bool(k("attention.causal"), false);
    w.add_u32(k("pooling_type"), s.pooling);
    w.add_u32("tokenizer.ggml.token_type_count", uint32_t(s.type_vocab));
    if (a == "nomic-bert") w.add_f32(k("rope.freq_base"), float(s.rope_theta));
  } else {
    w.add_f32(k("rope.freq_base"), float(s.rope_theta));
    w.add_f32(k("attention.layer_norm_rms_epsilon"), float(s.rms_eps));
  }
  if (s.head_dim * s.heads != s.hidden) {
    w.add_u32(k("attention.key_length"), uint32_t(s.head_dim));
    w.add_u32(k("attention.value_length"), uint32_t(s.head_dim));
  }
  const int64_t rope_dim = s.rope_dim ? s.rope_dim : s.head_dim;
  if (a == "llama") {
    w.add_u32(k("vocab_size"), uint32_t(s.vocab));
    w.add_u32(k("rope.dimension_count"), uint32_t(rope_dim));
  }
  if (a == "glm4") w.add_u32(k("rope.dimension_count"), uint32_t(rope_dim));
  if (a == "phi3") {
    w.add_u32(k("rope.dimension_count"), uint32_t(rope_dim));
    w.add_u32(k("rope.scaling.original_context_length"), uint32_t(s.rope_original_context));
  }
  if (s.sliding_window || a == "phi3") w.add_u32(k("attention.sliding_window"), uint32_t(s.sliding_window));
  if (s.rope_theta_swa > 0) w.add_f32(k("rope.freq_base_swa"), float(s.rope_theta_swa));
  if (s.rope_linear_factor > 0) {
    w.add_string(k("rope.scaling.type"), "linear");
    w.add_f32(k("rope.scaling.factor"), float(s.rope_linear_factor));
  }
  if (s.rope_yarn_factor > 0) {  // as convert_hf_to_gguf.py writes YaRN (Qwen2.5, DeepSeek)
    w.add_string(k("rope.scaling.type"), "yarn");
    w.add_f32(k("rope.scaling.factor"), float(s.rope_yarn_factor));
    w.add_u32(k("rope.scaling.original_context_length"), uint32_t(s.rope_original_context));
  }
  if (s.attn_softcap > 0) w.add_f32(k("attn_logit_softcapping"), float(s.attn_softcap));
  if (s.final_softcap > 0) w.add_f32(k("final_logit_softcapping"), float(s.final_softcap));
  if (s.n_experts) {
    w.add_u32(k("expert_count"), uint32_t(s.n_experts));
    w.add_u32(k("expert_used_count"), uint32_t(s.n_experts_used));
    if (a != "llama") w.add_u32(k("expert_feed_forward_length"), uint32_t(s.expert_ffn));
    if (s.shared_expert_ffn) w.add_u32(k("expert_shared_feed_forward_length"), uint32_t(s.shared_expert_ffn));
  }

  SynthVocab v = synth_vocab(s);
  const bool wpm = s.vocab_kind == VocabKind::WordPiece;
  w.add_string("tokenizer.ggml.model", wpm ? "bert" : "gpt2");
  w.add_string("tokenizer.ggml.pre", v.pre);
  w.add("tokenizer.ggml.tokens", GgufMetaValue::strings(v.tokens));
  w.add("tokenizer.ggml.token_type", GgufMetaValue::array(std::span<const int32_t>(v.types)));
  if (!wpm) w.add("tokenizer.ggml.merges", GgufMetaValue::strings(v.merges));
  w.add_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos));
  w.add_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos));
  if (wpm) {  // as llama.cpp's converter writes BERT's special tokens
    w.add_u32("tokenizer.ggml.unknown_token_id", 1);
    w.add_u32("tokenizer.ggml.seperator_token_id", uint32_t(v.eos));
    w.add_u32("tokenizer.ggml.cls_token_id", uint32_t(v.bos));
    w.add_u32("tokenizer.ggml.mask_token_id", 4);
  }
  if (v.pad >= 0) w.add_u32("tokenizer.ggml.padding_token_id", uint32_t(v.pad));
  w.add_bool("tokenizer.ggml.add_bos_token", v.add_bos);

  // Tensors, in the order llama.cpp's converter writes a Llama.
  auto matrix = [&](const std::string& name, int64_t cols, int64_t rows) {
    w.add_tensor(name, matrix_type(type, name, s, cols), {cols, rows});
    recipes_.push_back({0.f, s.weight_sigma, {}, 0});
  };
  // [n] matrices of rows x cols, merged (the experts of a layer).
  auto matrices = [&](const std::string& name, int64_t cols, int64_t rows, int64_t n) {
    w.add_tensor(name, matrix_type(type, name, s, cols), {cols, rows, n});
    recipes_.push_back({0.f, s.weight_sigma, {}, 0});
  };
  auto vec = [&](const std::string& name, int64_t n, float mean) {
    w.add_tensor(name, TensorType::F32, {n});
    recipes_.push_back({mean, 0.02f, {}, 0});
  };
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  if (auto f = llama3_rope_factors(s); !f.empty()) {
    w.add_tensor("rope_freqs.weight", TensorType::F32, {int64_t(f.size())});
    recipes_.push_back({0.f, 0.f, std::move(f), 0});
  }
  matrix("token_embd.weight", s.hidden, s.vocab);
  const bool nomic = a == "nomic-bert";
  if (s.encoder) {
    // F32 whatever the type, as llama.cpp's converter keeps them (its graph adds the token-type
    // row as it is: ggml's CPU add takes no F16 operand).
    auto f32_matrix = [&](const std::string& name, int64_t cols, int64_t rows) {
      w.add_tensor(name, TensorType::F32, {cols, rows});
      recipes_.push_back({0.f, s.weight_sigma, {}, 0});
    };
    f32_matrix("token_types.weight", s.hidden, s.type_vocab);
    if (!nomic) f32_matrix("position_embd.weight", s.hidden, s.context);
    vec("token_embd_norm.weight", s.hidden, 1.f);
    vec("token_embd_norm.bias", s.hidden, 0.f);
  }
  for (int64_t l = 0; l < s.layers; ++l) {
    std::string b = "blk." + std::to_string(l) + ".";
    if (nomic) {  // nomic-bert: no biases but the LayerNorms', fused qkv, SwiGLU
      matrix(b + "attn_qkv.weight", s.hidden, q + 2 * kv);
      matrix(b + "attn_output.weight", q, s.hidden);
      vec(b + "attn_output_norm.weight", s.hidden, 1.f);
      vec(b + "attn_output_norm.bias", s.hidden, 0.f);
      matrix(b + "ffn_up.weight", s.hidden, s.ffn);
      matrix(b + "ffn_gate.weight", s.hidden, s.ffn);
      matrix(b + "ffn_down.weight", s.ffn, s.hidden);
      vec(b + "layer_output_norm.weight", s.hidden, 1.f);
      vec(b + "layer_output_norm.bias", s.hidden, 0.f);
      continue;
    }
    if (s.encoder) {  // BERT: every projection with its bias, LayerNorms after the residuals
      for (const char* p : {"attn_q", "attn_k", "attn_v"}) {
        matrix(b + p + ".weight", s.hidden, q);
        vec(b + p + ".bias", q, 0.f);
      }
      matrix(b + "attn_output.weight", q, s.hidden);
      vec(b + "attn_output.bias", s.hidden, 0.f);
      vec(b + "attn_output_norm.weight", s.hidden, 1.f);
      vec(b + "attn_output_norm.bias", s.hidden, 0.f);
      matrix(b + "ffn_up.weight", s.hidden, s.ffn);
      vec(b + "ffn_up.bias", s.ffn, 0.f);
      matrix(b + "ffn_down.weight", s.ffn, s.hidden);
      vec(b + "ffn_down.bias", s.hidden, 0.f);
      vec(b + "layer_output_norm.weight", s.hidden, 1.f);
      vec(b + "layer_output_norm.bias", s.hidden, 0.f);
      continue;
    }
    vec(b + "attn_norm.weight", s.hidden, 1.f);
    if (s.fused_qkv) {
      matrix(b + "attn_qkv.weight", s.hidden, q + 2 * kv);
    } else {
      matrix(b + "attn_q.weight", s.hidden, q);
      matrix(b + "attn_k.weight", s.hidden, kv);
      matrix(b + "attn_v.weight", s.hidden, kv);
    }
    if (s.attention_bias) {
      vec(b + "attn_q.bias", q, 0.f);
      vec(b + "attn_k.bias", kv, 0.f);
      vec(b + "attn_v.bias", kv, 0.f);
    }
    if (s.qk_norm) {
      vec(b + "attn_q_norm.weight", s.head_dim, 1.f);
      vec(b + "attn_k_norm.weight", s.head_dim, 1.f);
    }
    matrix(b + "attn_output.weight", q, s.hidden);
    if (s.sandwich_norms) vec(b + "post_attention_norm.weight", s.hidden, 1.f);
    vec(b + "ffn_norm.weight", s.hidden, 1.f);
    if (s.n_experts) {
      matrix(b + "ffn_gate_inp.weight", s.hidden, s.n_experts);
      matrices(b + "ffn_gate_exps.weight", s.hidden, s.expert_ffn, s.n_experts);
      matrices(b + "ffn_up_exps.weight", s.hidden, s.expert_ffn, s.n_experts);
      matrices(b + "ffn_down_exps.weight", s.expert_ffn, s.hidden, s.n_experts);
      if (s.shared_expert_ffn) {
        vec(b + "ffn_gate_inp_shexp.weight", s.hidden, 0.f);
        matrix(b + "ffn_gate_shexp.weight", s.hidden, s.shared_expert_ffn);
        matrix(b + "ffn_up_shexp.weight", s.hidden, s.shared_expert_ffn);
        matrix(b + "ffn_down_shexp.weight", s.shared_expert_ffn, s.hidden);
      }
    } else if (s.fused_gate_up) {
      matrix(b + "ffn_up.weight", s.hidden, 2 * s.ffn);  // gate rows, then up rows
      matrix(b + "ffn_down.weight", s.ffn, s.hidden);
    } else {
      matrix(b + "ffn_gate.weight", s.hidden, s.ffn);
      matrix(b + "ffn_up.weight", s.hidden, s.ffn);
      matrix(b + "ffn_down.weight", s.ffn, s.hidden);
    }
    if (s.sandwich_norms) vec(b + "post_ffw_norm.weight", s.hidden, 1.f);
  }
  if (!s.encoder) vec("output_norm.weight", s.hidden, 1.f);
  if (!s.tied && !s.encoder) matrix("output.weight", s.hidden, s.vocab);
  for (size_t i = 0; i < recipes_.size(); ++i) recipes_[i].key = stream_key(seed, i);
}

int64_t SynthModel::params() const {
  int64_t n = 0;
  for (const auto& t : writer_.tensors()) n += t.numel();
  return n;
}

void SynthModel::row_values(size_t index, int64_t row, std::span<float> out) const {
  const Recipe& r = recipes_[index];
  const uint64_t first = uint64_t(row) * out.size();
  if (!r.fixed.empty()) {
    std::copy_n(r.fixed.begin() + int64_t(first), out.size(), out.begin());
    return;
  }
  fill_normal(out, r.key, first, r.mean, r.sigma);
}

std::vector<float> SynthModel::values(size_t index, int64_t row0, int64_t rows) const {
  const auto& t = writer_.tensors().at(index);
  const size_t n = size_t(t.row_length());
  std::vector<float> v(size_t(rows) * n);
  for (int64_t r = 0; r < rows; ++r) row_values(index, row0 + r, std::span(v).subspan(size_t(r) * n, n));
  return v;
}

void SynthModel::fill(size_t index, int64_t row0, int64_t rows, std::span<std::byte> out) const {
  const auto& t = writer_.tensors().at(index);
  const size_t n = size_t(t.row_length());
  const size_t rb = size_t(t.row_bytes());
  if (out.size() != size_t(rows) * rb)
    throw Error("synth: tensor '" + t.name + "': " + std::to_string(out.size()) + " bytes for " + std::to_string(rows) +
                " rows of " + std::to_string(rb));
  thread_local std::vector<float> row;
  row.resize(n);
  for (int64_t r = 0; r < rows; ++r) {
    row_values(index, row0 + r, row);
    quantize(t.type, row, out.subspan(size_t(r) * rb, rb));
  }
}

void SynthModel::write(const std::filesystem::path& path, const GgufWriteOptions& opt) const {
  writer_.write(
      path, [this](size_t i, int64_t r0, int64_t n, std::span<std::byte> out) { fill(i, r0, n, out); }, opt);
}

std::vector<std::byte> SynthModel::to_bytes() const {
  return writer_.to_bytes([this](size_t i, int64_t r0, int64_t n, std::span<std::byte> out) { fill(i, r0, n, out); });
}

SynthModel write_synth_model(const std::filesystem::path& path, const ModelShape& shape, TensorType type,
                             const SynthOptions& opt) {
  SynthModel m(shape, type, opt.seed);
  namespace fs = std::filesystem;
  check_output(path, opt.overwrite);
  uint64_t reclaimable = 0;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    reclaimable = fs::file_size(path, ec);
    if (ec) reclaimable = 0;
  }
  check_free_space(path, m.file_bytes(), reclaimable);
  try {
    check_free_space(path, m.file_bytes(), 0);
  } catch (const Error&) {
    fs::remove(path, ec);  // only the old file's space makes room: it goes first
  }
  GgufWriteOptions w = opt.write;
  w.overwrite = Overwrite::Yes;  // checked above; an old file may have been removed for space
  m.write(path, w);
  return m;
}

}  // namespace wgc::llm::synth
