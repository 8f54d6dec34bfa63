// ModelFile: GGUF and Hugging Face folders give the same model (names, torch shapes, values, with
// GGUF's Q/K rope permutation undone), configs from both sources, bad models, the progress bar and
// `wgc inspect`. A GGUF read from a ByteSource (the browser's download) gives the same tensors, one
// at a time (ModelFile::load), and the same model on the GPU.
#include "cpu/llm/dequant.h"
#include "llm/formats/gguf.h"
#include "llm/formats/gguf_writer.h"
#include "llm/formats/model_file.h"
#include "llm/formats/safetensors.h"
#include "llm/formats/tensor_names.h"
#include "llm/model/llama.h"
#include "memory_source.h"
#include "test_util.h"
#include "util/json.h"
#include "util/progress.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <numbers>
#include <set>
#include <tuple>

using namespace wgc::llm;
namespace json = wgc::json;
namespace fs = std::filesystem;

namespace {

using wgc::test::temp_dir;

void write_text(const fs::path& p, std::string_view text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(text.data(), std::streamsize(text.size()));
}

OpenOptions quiet() {
  OpenOptions o;
  o.progress = false;
  return o;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const wgc::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// --- a synthetic tiny model in both formats ------------------------------------------------------

struct Tiny {
  int64_t vocab = 10, hidden = 8, layers = 1, heads = 2, kv_heads = 1, head_dim = 4, ffn = 16;
  bool bias = false, qk_norm = false, tied = false;
  std::string arch = "llama";
  std::map<std::string, std::vector<float>> values;  // HF name -> values
  std::map<std::string, std::vector<int64_t>> shapes;

  void make() {
    uint32_t seed = 1;
    auto add = [&](const std::string& n, std::vector<int64_t> s) {
      shapes[n] = s;
      int64_t count = 1;
      for (auto d : s) count *= d;
      values[n] = wgc::test::random_floats(size_t(count), seed++);
    };
    int64_t q = heads * head_dim, kv = kv_heads * head_dim;
    add("model.embed_tokens.weight", {vocab, hidden});
    for (int64_t l = 0; l < layers; ++l) {
      std::string p = "model.layers." + std::to_string(l) + ".";
      add(p + "input_layernorm.weight", {hidden});
      add(p + "post_attention_layernorm.weight", {hidden});
      add(p + "self_attn.q_proj.weight", {q, hidden});
      add(p + "self_attn.k_proj.weight", {kv, hidden});
      add(p + "self_attn.v_proj.weight", {kv, hidden});
      add(p + "self_attn.o_proj.weight", {hidden, q});
      if (bias) {
        add(p + "self_attn.q_proj.bias", {q});
        add(p + "self_attn.k_proj.bias", {kv});
        add(p + "self_attn.v_proj.bias", {kv});
      }
      if (qk_norm) {
        add(p + "self_attn.q_norm.weight", {head_dim});
        add(p + "self_attn.k_norm.weight", {head_dim});
      }
      add(p + "mlp.gate_proj.weight", {ffn, hidden});
      add(p + "mlp.up_proj.weight", {ffn, hidden});
      add(p + "mlp.down_proj.weight", {hidden, ffn});
    }
    add("model.norm.weight", {hidden});
    if (!tied) add("lm_head.weight", {vocab, hidden});
  }

  std::string config_json() const {
    std::string model_type = arch;
    return "{\"model_type\": \"" + model_type + "\", \"vocab_size\": " + std::to_string(vocab) +
           ", \"hidden_size\": " + std::to_string(hidden) + ", \"num_hidden_layers\": " + std::to_string(layers) +
           ", \"num_attention_heads\": " + std::to_string(heads) +
           ", \"num_key_value_heads\": " + std::to_string(kv_heads) + ", \"head_dim\": " + std::to_string(head_dim) +
           ", \"intermediate_size\": " + std::to_string(ffn) + ", \"rms_norm_eps\": 1e-6, \"rope_theta\": 1000000.0" +
           ", \"tie_word_embeddings\": " + (tied ? "true" : "false") +
           ", \"attention_bias\": " + (bias ? "true" : "false") + ", \"bos_token_id\": 1, \"eos_token_id\": [2, 3]}";
  }

  // Writes an HF folder; `skip` leaves a tensor out, `reshape` stores one with a wrong shape.
  fs::path write_hf(const std::string& name, const std::string& skip = "", const std::string& reshape = "") const {
    fs::path dir = temp_dir(name);
    write_text(dir / "config.json", config_json());
    std::vector<SafetensorsEntry> entries;
    std::map<std::string, std::vector<int64_t>> sh = shapes;
    for (const auto& [n, v] : values) {
      if (n == skip) continue;
      std::vector<int64_t> s = sh[n];
      if (n == reshape) s = {s[0] * (s.size() > 1 ? s[1] : 1)};
      entries.push_back({n, TensorType::F32, s, std::as_bytes(std::span(v))});
    }
    write_safetensors(dir / "model.safetensors", entries);
    return dir;
  }

  // Writes a GGUF as llama.cpp's converter would: GGUF names, ne reversed, Q/K rows permuted for llama.
  fs::path write_gguf(const std::string& name, const std::string& skip = "") const {
    GgufWriter w;
    w.add_string("general.architecture", arch);
    auto key = [&](const char* k) { return arch + "." + k; };
    w.add_u32(key("embedding_length"), uint32_t(hidden));
    w.add_u32(key("block_count"), uint32_t(layers));
    w.add_u32(key("feed_forward_length"), uint32_t(ffn));
    w.add_u32(key("attention.head_count"), uint32_t(heads));
    w.add_u32(key("attention.head_count_kv"), uint32_t(kv_heads));
    w.add_u32(key("attention.key_length"), uint32_t(head_dim));
    w.add_f32(key("rope.freq_base"), 1e6f);
    w.add_f32(key("attention.layer_norm_rms_epsilon"), 1e-6f);
    w.add_u32(key("vocab_size"), uint32_t(vocab));
    w.add_u32("tokenizer.ggml.bos_token_id", 1);
    w.add_u32("tokenizer.ggml.eos_token_id", 2);
    const std::map<std::string, std::string> names = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"},
        {"input_layernorm.weight", "attn_norm.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
    };
    for (const auto& [n, v] : values) {
      if (n == skip) continue;
      std::string g;
      if (names.count(n)) {
        g = names.at(n);
      } else {
        size_t a = n.find('.', 13);  // "model.layers.N."
        g = "blk." + n.substr(13, a - 13) + "." + names.at(n.substr(a + 1));
      }
      std::vector<float> data = v;
      const auto& s = shapes.at(n);
      bool is_q = n.find("q_proj") != std::string::npos, is_k = n.find("k_proj") != std::string::npos;
      if (arch == "llama" && (is_q || is_k)) {
        // convert_hf_to_gguf.py: w.reshape(n_head, 2, rows / n_head / 2, ...).swapaxes(1, 2)
        int64_t nh = is_q ? heads : kv_heads, rows = s[0], rl = s.size() > 1 ? s[1] : 1, d = rows / nh;
        for (int64_t h = 0; h < nh; ++h)
          for (int64_t i = 0; i < d / 2; ++i)
            for (int64_t j = 0; j < 2; ++j)
              for (int64_t c = 0; c < rl; ++c)
                data[size_t((h * d + 2 * i + j) * rl + c)] = v[size_t((h * d + j * (d / 2) + i) * rl + c)];
      }
      std::vector<int64_t> ne(s.rbegin(), s.rend());
      auto bytes = std::as_bytes(std::span(data));
      w.add_tensor(g, TensorType::F32, ne, bytes);
    }
    fs::path p = temp_dir(name) / "model.gguf";
    w.write(p);
    return p;
  }
};

void expect_same_as(const ModelFile& m, const Tiny& t) {
  EXPECT_EQ(m.tensors().size(), t.values.size());
  for (const auto& [n, v] : t.values) {
    const ModelTensor* x = m.find(n);
    ASSERT_TRUE(x) << n;
    EXPECT_EQ(x->shape, t.shapes.at(n)) << n;
    EXPECT_EQ(to_f32(*x), v) << n;
  }
}

}  // namespace

TEST(ModelFile, GgufNames) {
  EXPECT_EQ(hf_name_from_gguf("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(hf_name_from_gguf("output.weight"), "lm_head.weight");
  EXPECT_EQ(hf_name_from_gguf("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(hf_name_from_gguf("blk.12.attn_q.weight"), "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(hf_name_from_gguf("blk.0.attn_k.bias"), "model.layers.0.self_attn.k_proj.bias");
  EXPECT_EQ(hf_name_from_gguf("blk.3.attn_output.weight"), "model.layers.3.self_attn.o_proj.weight");
  EXPECT_EQ(hf_name_from_gguf("blk.3.attn_k_norm.weight"), "model.layers.3.self_attn.k_norm.weight");
  EXPECT_EQ(hf_name_from_gguf("blk.1.attn_norm.weight"), "model.layers.1.input_layernorm.weight");
  EXPECT_EQ(hf_name_from_gguf("blk.1.ffn_norm.weight"), "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(hf_name_from_gguf("blk.1.ffn_down.weight"), "model.layers.1.mlp.down_proj.weight");
  EXPECT_EQ(hf_name_from_gguf("rope_freqs.weight"), "rope_freqs.weight");
  EXPECT_EQ(hf_name_from_gguf("blk.x.attn_q.weight"), "blk.x.attn_q.weight");
  EXPECT_EQ(hf_name_from_gguf("blk.1.unknown.weight"), "blk.1.unknown.weight");
}

TEST(ModelFile, UnpermuteRows) {
  // 2 heads of 4 rows, 3 bytes per row: GGUF row h*4 + 2i + j holds HF row h*4 + 2j + i.
  std::vector<std::byte> in(8 * 3), out(8 * 3);
  const int hf_of_gguf[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 3; ++c) in[size_t(r * 3 + c)] = std::byte(hf_of_gguf[r] * 10 + c);
  unpermute_rope_rows(in, out, 8, 2);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(int(out[size_t(r * 3 + c)]), r * 10 + c);
  EXPECT_THROW(unpermute_rope_rows(in, out, 8, 3), wgc::Error);
  std::vector<std::byte> odd(6 * 3), odd_out(6 * 3);
  EXPECT_THROW(unpermute_rope_rows(odd, odd_out, 6, 2), wgc::Error);  // heads of 3 rows
}

TEST(ModelFile, SyntheticLlamaBothFormats) {
  Tiny t;
  t.layers = 2;
  t.make();
  auto hf = open_model(t.write_hf("syn_hf"), quiet());
  auto gg = open_model(t.write_gguf("syn_gguf"), quiet());
  EXPECT_EQ(hf.format(), ModelFile::Format::Safetensors);
  EXPECT_EQ(gg.format(), ModelFile::Format::Gguf);
  expect_same_as(hf, t);
  expect_same_as(gg, t);
  EXPECT_TRUE(gg.tensor("model.layers.1.self_attn.k_proj.weight").unpermuted);
  EXPECT_FALSE(gg.tensor("model.layers.1.self_attn.v_proj.weight").unpermuted);
  for (const ModelFile* m : {&hf, &gg}) {
    const ModelConfig& c = m->config();
    EXPECT_EQ(c.architecture, Architecture::Llama);
    EXPECT_EQ(c.n_layers, 2);
    EXPECT_EQ(c.n_kv_heads, 1);
    EXPECT_EQ(c.head_dim, 4);
    EXPECT_EQ(c.rope_theta, 1e6);
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_EQ(c.bos_token_id, 1);
    EXPECT_EQ(c.eos_token_ids.front(), 2);
  }
  EXPECT_EQ(hf.config().eos_token_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(gg.layer(0)[TensorRole::FfnUp], gg.find("model.layers.0.mlp.up_proj.weight"));
  // Moving keeps the views (and the owned un-permuted copies) valid.
  ModelFile moved = std::move(gg);
  expect_same_as(moved, t);
}

TEST(ModelFile, SyntheticQwen2HasBiasesAndNoPermutation) {
  Tiny t;
  t.arch = "qwen2";
  t.bias = true;
  t.tied = true;
  t.make();
  auto gg = open_model(t.write_gguf("qwen2_gguf"), quiet());
  EXPECT_EQ(gg.config().architecture, Architecture::Qwen2);
  EXPECT_TRUE(gg.config().attention_bias);
  EXPECT_TRUE(gg.config().tie_word_embeddings);
  EXPECT_FALSE(gg.tensor("model.layers.0.self_attn.q_proj.weight").unpermuted);
  expect_same_as(gg, t);
  auto hf = open_model(t.write_hf("qwen2_hf"), quiet());
  EXPECT_TRUE(hf.config().attention_bias);
  expect_same_as(hf, t);
}

TEST(ModelFile, SyntheticLlamaWithBiasUnpermutesBiases) {
  Tiny t;
  t.bias = true;
  t.make();
  auto gg = open_model(t.write_gguf("llama_bias_gguf"), quiet());
  EXPECT_TRUE(gg.tensor("model.layers.0.self_attn.q_proj.bias").unpermuted);
  expect_same_as(gg, t);
}

TEST(ModelFile, SyntheticQwen3QkNorm) {
  Tiny t;
  t.arch = "qwen3";
  t.qk_norm = true;
  t.make();
  auto gg = open_model(t.write_gguf("qwen3_gguf"), quiet());
  EXPECT_TRUE(gg.config().qk_norm);
  expect_same_as(gg, t);
  auto hf = open_model(t.write_hf("qwen3_hf"), quiet());
  EXPECT_TRUE(hf.config().qk_norm);
  EXPECT_FALSE(hf.config().attention_bias);
  expect_same_as(hf, t);
}

// The engine on the synthetic models, against a plain double-precision forward pass written here
// from the Hugging Face definitions (RMSNorm, half-split RoPE, causal GQA, SwiGLU; Qwen 2 biases,
// Qwen 3 per-head q/k norms), from both file forms.
std::vector<float> reference_logits(const Tiny& t, const std::vector<int32_t>& ids) {
  const int n = int(ids.size()), H = int(t.hidden), nh = int(t.heads), nkv = int(t.kv_heads), hd = int(t.head_dim),
            F = int(t.ffn), V = int(t.vocab);
  const double eps = 1e-6, theta = 1e6;
  using Vec = std::vector<double>;
  auto W = [&](const std::string& name) -> const std::vector<float>& { return t.values.at(name); };
  auto has = [&](const std::string& name) { return t.values.count(name) > 0; };
  auto rms = [&](const Vec& v, const std::vector<float>& w, int off, int len) {
    double s = 0;
    for (int j = 0; j < len; ++j) s += v[size_t(off + j)] * v[size_t(off + j)];
    double inv = 1 / std::sqrt(s / len + eps);
    Vec o(static_cast<size_t>(len));
    for (int j = 0; j < len; ++j) o[size_t(j)] = v[size_t(off + j)] * inv * w[size_t(j)];
    return o;
  };
  auto mv = [&](const std::string& name, const Vec& v, int rows) {
    const auto& m = W(name);
    size_t cols = v.size();
    Vec o(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c) o[size_t(r)] += double(m[size_t(r) * cols + c]) * v[c];
    return o;
  };
  std::vector<Vec> x(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    x[size_t(i)] = Vec(W("model.embed_tokens.weight").begin() + ids[size_t(i)] * H,
                       W("model.embed_tokens.weight").begin() + (ids[size_t(i)] + 1) * H);
  for (int64_t l = 0; l < t.layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<Vec> q(static_cast<size_t>(n)), k(static_cast<size_t>(n)), v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      Vec h = rms(x[size_t(i)], W(p + "input_layernorm.weight"), 0, H);
      q[size_t(i)] = mv(p + "self_attn.q_proj.weight", h, nh * hd);
      k[size_t(i)] = mv(p + "self_attn.k_proj.weight", h, nkv * hd);
      v[size_t(i)] = mv(p + "self_attn.v_proj.weight", h, nkv * hd);
      for (auto [vec, b] : {std::pair{&q[size_t(i)], "q"}, {&k[size_t(i)], "k"}, {&v[size_t(i)], "v"}})
        if (has(p + "self_attn." + b + "_proj.bias"))
          for (size_t j = 0; j < vec->size(); ++j) (*vec)[j] += W(p + "self_attn." + b + "_proj.bias")[j];
      for (auto [vec, heads, nm] : {std::tuple{&q[size_t(i)], nh, "q"}, {&k[size_t(i)], nkv, "k"}}) {
        for (int hh = 0; hh < heads; ++hh) {
          if (has(p + "self_attn." + nm + "_norm.weight")) {
            Vec o = rms(*vec, W(p + "self_attn." + nm + "_norm.weight"), hh * hd, hd);
            std::copy(o.begin(), o.end(), vec->begin() + hh * hd);
          }
          for (int j = 0; j < hd / 2; ++j) {
            double a = i * std::pow(theta, -2.0 * j / hd), c = std::cos(a), s = std::sin(a);
            double x1 = (*vec)[size_t(hh * hd + j)], x2 = (*vec)[size_t(hh * hd + j + hd / 2)];
            (*vec)[size_t(hh * hd + j)] = x1 * c - x2 * s;
            (*vec)[size_t(hh * hd + j + hd / 2)] = x2 * c + x1 * s;
          }
        }
      }
    }
    for (int i = 0; i < n; ++i) {
      Vec att(static_cast<size_t>(nh * hd));
      for (int h = 0; h < nh; ++h) {
        int g = h / (nh / nkv);
        Vec sc(static_cast<size_t>(i + 1));
        double mx = -1e300, sum = 0;
        for (int j = 0; j <= i; ++j) {
          for (int d = 0; d < hd; ++d)
            sc[size_t(j)] += q[size_t(i)][size_t(h * hd + d)] * k[size_t(j)][size_t(g * hd + d)];
          sc[size_t(j)] /= std::sqrt(double(hd));
          mx = std::max(mx, sc[size_t(j)]);
        }
        for (auto& e : sc) sum += (e = std::exp(e - mx));
        for (int j = 0; j <= i; ++j)
          for (int d = 0; d < hd; ++d)
            att[size_t(h * hd + d)] += sc[size_t(j)] / sum * v[size_t(j)][size_t(g * hd + d)];
      }
      Vec o = mv(p + "self_attn.o_proj.weight", att, H);
      for (int j = 0; j < H; ++j) x[size_t(i)][size_t(j)] += o[size_t(j)];
      Vec h2 = rms(x[size_t(i)], W(p + "post_attention_layernorm.weight"), 0, H);
      Vec g = mv(p + "mlp.gate_proj.weight", h2, F), u = mv(p + "mlp.up_proj.weight", h2, F);
      for (int j = 0; j < F; ++j) g[size_t(j)] = g[size_t(j)] / (1 + std::exp(-g[size_t(j)])) * u[size_t(j)];
      Vec d = mv(p + "mlp.down_proj.weight", g, H);
      for (int j = 0; j < H; ++j) x[size_t(i)][size_t(j)] += d[size_t(j)];
    }
  }
  std::vector<float> logits;
  for (int i = 0; i < n; ++i) {
    Vec f = rms(x[size_t(i)], W("model.norm.weight"), 0, H);
    Vec lg = mv(t.tied ? "model.embed_tokens.weight" : "lm_head.weight", f, V);
    logits.insert(logits.end(), lg.begin(), lg.end());
  }
  return logits;
}

void expect_engine_matches_reference(const Tiny& t, const fs::path& gguf, const fs::path& hf) {
  std::vector<int32_t> ids = {1, 4, 9, 0, 7, 7, 2};
  auto want = reference_logits(t, ids);
  for (const auto& path : {gguf, hf}) {
    ModelFile mf = open_model(path, quiet());
    LlamaModel model(wgc::test::ctx(), mf);
    EXPECT_LT(wgc::test::rel_error(model.all_logits(ids), want), 1e-5) << path;
  }
}

TEST(Engine, SyntheticQwen3QkNormMatchesReference) {
  Tiny t;
  t.arch = "qwen3";
  t.qk_norm = true;
  t.layers = 2;
  t.make();
  expect_engine_matches_reference(t, t.write_gguf("qwen3_engine_gguf"), t.write_hf("qwen3_engine_hf"));
}

TEST(Engine, SyntheticQwen2BiasesMatchReference) {
  Tiny t;
  t.arch = "qwen2";
  t.bias = true;
  t.tied = true;
  t.layers = 2;
  t.make();
  expect_engine_matches_reference(t, t.write_gguf("qwen2_engine_gguf"), t.write_hf("qwen2_engine_hf"));
}

TEST(Engine, SyntheticLlamaMatchesReference) {
  Tiny t;
  t.layers = 2;
  t.make();
  expect_engine_matches_reference(t, t.write_gguf("llama_engine_gguf"), t.write_hf("llama_engine_hf"));
}

// --- the fixtures -------------------------------------------------------------------------------

TEST(ModelFile, TinyLlama2GgufF32EqualsSafetensorsExactly) {
  auto dir = wgc::test::fixtures_dir() / "tiny-llama2-f32";
  WGC_REQUIRE_FILE(dir / "tiny-llama2-f32-f32.gguf");
  WGC_REQUIRE_FILE(dir / "model.safetensors");
  auto gg = open_model(dir / "tiny-llama2-f32-f32.gguf", quiet());
  auto hf = open_model(dir, quiet());
  ASSERT_EQ(gg.tensors().size(), hf.tensors().size());
  size_t unpermuted = 0;
  for (const auto& t : hf.tensors()) {
    const ModelTensor* g = gg.find(t.name);
    ASSERT_TRUE(g) << t.name;
    EXPECT_EQ(g->shape, t.shape) << t.name;
    EXPECT_EQ(g->type, TensorType::F32);
    ASSERT_EQ(g->data.size(), t.data.size()) << t.name;
    EXPECT_EQ(std::memcmp(g->data.data(), t.data.data(), t.data.size()), 0) << t.name << " differs";
    unpermuted += g->unpermuted;
  }
  EXPECT_EQ(unpermuted, 4u);  // q and k of 2 layers
  // The raw GGUF rows really were permuted (so the comparison above tests the un-permutation).
  const GgufTensorInfo* raw = gg.gguf()->find_tensor("blk.0.attn_q.weight");
  auto raw_bytes = gg.gguf()->tensor_data(*raw);
  const auto& q = hf.tensor("model.layers.0.self_attn.q_proj.weight");
  EXPECT_NE(std::memcmp(raw_bytes.data(), q.data.data(), q.data.size()), 0);

  const ModelConfig &a = gg.config(), &b = hf.config();
  EXPECT_EQ(a.vocab_size, 32000);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.ffn_size, b.ffn_size);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rope_theta, 10000.0);
  EXPECT_NEAR(a.rms_norm_eps, b.rms_norm_eps, 1e-12);
  EXPECT_EQ(a.tie_word_embeddings, false);
  EXPECT_EQ(b.tie_word_embeddings, false);
  EXPECT_EQ(a.max_position_embeddings, 256);
  EXPECT_EQ(b.max_position_embeddings, 256);
  EXPECT_EQ(a.bos_token_id, 1);
  EXPECT_EQ(b.bos_token_id, 1);
  EXPECT_EQ(a.eos_token_ids, (std::vector<int32_t>{2}));
  EXPECT_EQ(b.eos_token_ids, (std::vector<int32_t>{2}));
}

// Every tensor of the "q8_0" file against the F32 one, within the error of the type it has: Q8_0
// within half a quantization step of its block, F16 within f16 rounding, F32 exact. (With rows of
// 16 the converter cannot make Q8_0 blocks of 32, so this file holds F16 and F32 tensors: the real
// Q8_0 data is checked on wgc-tiny-dict in test_dequant.)
TEST(ModelFile, TinyLlama2Q8_0CloseToF32) {
  auto dir = wgc::test::fixtures_dir() / "tiny-llama2-f32";
  WGC_REQUIRE_FILE(dir / "tiny-llama2-f32-q8_0.gguf");
  WGC_REQUIRE_FILE(dir / "tiny-llama2-f32-f32.gguf");
  auto q = open_model(dir / "tiny-llama2-f32-q8_0.gguf", quiet());
  auto f = open_model(dir / "tiny-llama2-f32-f32.gguf", quiet());
  ASSERT_EQ(q.tensors().size(), f.tensors().size());
  std::map<TensorType, int> types;
  for (const auto& t : q.tensors()) {
    const ModelTensor& ref = f.tensor(t.name);
    ASSERT_EQ(t.shape, ref.shape) << t.name;
    ++types[t.type];
    auto got = to_f32(t), want = to_f32(ref);
    if (t.type == TensorType::Q8_0) {
      for (size_t b = 0; b < got.size() / 32; ++b) {
        float amax = 0;
        for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(want[b * 32 + j]));
        float step = amax / 127;
        for (size_t j = 0; j < 32; ++j)
          ASSERT_LE(std::fabs(got[b * 32 + j] - want[b * 32 + j]), 0.5f * step * 1.01f + 1e-7f) << t.name;
      }
    } else if (t.type == TensorType::F16) {
      size_t bad = 0;
      for (size_t i = 0; i < got.size(); ++i) bad += got[i] != f16_to_f32(f32_to_f16(want[i]));
      EXPECT_EQ(bad, 0u) << t.name;
    } else {
      ASSERT_EQ(t.type, TensorType::F32) << t.name;
      ASSERT_EQ(got, want) << t.name;
    }
  }
  EXPECT_EQ(types[TensorType::F16] + types[TensorType::F32] + types[TensorType::Q8_0], int(q.tensors().size()));
}

// The F16 GGUF of tiny-llama3 against its BF16 safetensors: every value equals the bf16 one rounded
// to f16 (rows un-permuted for q/k; GQA with 1 KV head).
TEST(ModelFile, TinyLlama3GgufF16MatchesBf16) {
  auto dir = wgc::test::fixtures_dir() / "tiny-llama3-bf16";
  WGC_REQUIRE_FILE(dir / "tiny-llama3-bf16-f16.gguf");
  WGC_REQUIRE_FILE(dir / "model.safetensors");
  auto gg = open_model(dir / "tiny-llama3-bf16-f16.gguf", quiet());
  auto hf = open_model(dir, quiet());
  ASSERT_EQ(gg.tensors().size(), hf.tensors().size());
  for (const auto& t : hf.tensors()) {
    EXPECT_EQ(t.type, TensorType::BF16);
    const ModelTensor& g = gg.tensor(t.name);
    ASSERT_EQ(g.shape, t.shape) << t.name;
    auto a = to_f32(g), b = to_f32(t);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      float want = g.type == TensorType::F16 ? f16_to_f32(f32_to_f16(b[i])) : b[i];
      if (a[i] != want && !bad++) first = i;
    }
    EXPECT_EQ(bad, 0u) << t.name << ": first at " << first << ": " << a[first] << " vs bf16 " << b[first];
  }
  const ModelConfig &a = gg.config(), &b = hf.config();
  EXPECT_TRUE(a.tie_word_embeddings);
  EXPECT_TRUE(b.tie_word_embeddings);
  EXPECT_EQ(hf.find("lm_head.weight"), nullptr);
  EXPECT_EQ(a.n_kv_heads, 1);
  EXPECT_EQ(b.n_kv_heads, 1);
  EXPECT_EQ(a.vocab_size, 128256);
  EXPECT_EQ(a.bos_token_id, 128000);
  EXPECT_EQ(b.bos_token_id, 128000);
  EXPECT_EQ(a.eos_token_ids, (std::vector<int32_t>{128001}));
  EXPECT_EQ(b.eos_token_ids, (std::vector<int32_t>{128001}));
  // config.json (transformers 5 "rope_parameters"): theta 5e5 with llama3 scaling.
  EXPECT_EQ(b.rope_theta, 500000.0);
  EXPECT_EQ(b.rope_scaling.type, RopeScalingType::Llama3);
  EXPECT_EQ(b.rope_scaling.factor, 8.0);
  EXPECT_EQ(b.rope_scaling.low_freq_factor, 1.0);
  EXPECT_EQ(b.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(b.rope_scaling.original_max_position_embeddings, 256);
  // The GGUF (converted from that config by a converter that looked for "rope_theta" and
  // "rope_scaling") has neither llama.rope.freq_base nor rope_freqs: it reads as llama.cpp reads
  // it, theta 10000 without scaling, and says so in notes.
  EXPECT_EQ(a.rope_theta, 10000.0);
  EXPECT_EQ(a.rope_scaling.type, RopeScalingType::None);
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes[0].find("llama.rope.freq_base"), std::string::npos);
}

TEST(ModelFile, Llama3RopeFrequencies) {
  ModelConfig c;
  c.head_dim = c.rope_dim = 8;
  c.rope_theta = 500000.0;
  c.rope_scaling = {RopeScalingType::Llama3, 8.0, 1.0, 4.0, 256};
  auto f = c.rope_inv_freq();
  ASSERT_EQ(f.size(), 4u);
  // Base frequencies theta^(-2i/8); wavelengths 2 pi / f = 6.3, 167, 4443, 118105 against the
  // bounds 256/4 = 64 (keep above) and 256/1 = 256 (divide by 8 below), smooth in between.
  double base[4];
  for (int i = 0; i < 4; ++i) base[i] = std::pow(500000.0, -i / 4.0);
  EXPECT_DOUBLE_EQ(f[0], base[0]);
  double wavelen = 2 * std::numbers::pi / base[1];
  double smooth = (256 / wavelen - 1) / (4 - 1);
  EXPECT_NEAR(f[1], (1 - smooth) * base[1] / 8 + smooth * base[1], 1e-15);
  EXPECT_DOUBLE_EQ(f[2], base[2] / 8);
  EXPECT_DOUBLE_EQ(f[3], base[3] / 8);
  c.rope_scaling = {RopeScalingType::Linear, 4.0, 1, 4, 0};
  EXPECT_DOUBLE_EQ(c.rope_inv_freq()[1], base[1] / 4);
  c.rope_scaling = {};
  c.rope_freq_factors = {1, 2, 4, 8};
  EXPECT_DOUBLE_EQ(c.rope_inv_freq()[3], base[3] / 8);
}

TEST(ModelFile, WgcTinyDict) {
  auto path = wgc::test::models_dir() / "wgc-tiny-dict" / "wgc-tiny-dict-q8_0.gguf";
  WGC_REQUIRE_FILE(path);
  auto m = open_model(path, quiet());
  const ModelConfig& c = m.config();
  EXPECT_EQ(c.n_layers, 4);
  EXPECT_EQ(c.hidden_size, 256);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.ffn_size, 768);
  EXPECT_EQ(c.vocab_size, 8192);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.bos_token_id, 0);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{1}));
  const ModelTensor& q = *m.layer(0)[TensorRole::AttnQ];
  EXPECT_EQ(q.type, TensorType::Q8_0);
  EXPECT_EQ(q.shape, (std::vector<int64_t>{256, 256}));
  EXPECT_TRUE(q.unpermuted);
  EXPECT_EQ(q.data.size(), 256u * 256 / 32 * 34);
  // Un-permuting moved whole rows: the multiset of rows is unchanged.
  const GgufTensorInfo* raw = m.gguf()->find_tensor("blk.0.attn_q.weight");
  auto rb = m.gguf()->tensor_data(*raw);
  size_t row = 256 / 32 * 34;
  std::multiset<std::string> a, b;
  for (size_t r = 0; r < 256; ++r) {
    a.insert(std::string(reinterpret_cast<const char*>(rb.data() + r * row), row));
    b.insert(std::string(reinterpret_cast<const char*>(q.data.data() + r * row), row));
  }
  EXPECT_EQ(a, b);
  // Its folder (tokenizer.json, no config.json, one .gguf) opens the .gguf.
  auto folder = open_model(path.parent_path(), quiet());
  EXPECT_EQ(folder.format(), ModelFile::Format::Gguf);
  EXPECT_EQ(folder.path(), path);
}

// --- configs from config.json -------------------------------------------------------------------

TEST(ModelConfig, HfVariants) {
  auto cfg = [](std::string extra, std::string type = "llama") {
    return json::parse("{\"model_type\": \"" + type +
                       "\", \"vocab_size\": 128256, \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                       "\"num_attention_heads\": 4, \"intermediate_size\": 128" +
                       extra + "}");
  };
  // transformers 4: rope_theta + rope_scaling; defaults (kv heads = heads, head_dim = hidden/heads).
  auto c = config_from_hf(cfg(R"(, "rope_theta": 500000, "rope_scaling": {"rope_type": "llama3", "factor": 32,
       "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 8192},
       "eos_token_id": [128001, 128008, 128009], "bos_token_id": 128000)"),
                          "cfg");
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.rope_theta, 500000);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Llama3);
  EXPECT_EQ(c.rope_scaling.factor, 32);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  auto lin = config_from_hf(cfg(R"(, "rope_scaling": {"type": "linear", "factor": 2.0})"), "cfg");
  EXPECT_EQ(lin.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_EQ(lin.rope_theta, 10000);
  auto q2 = config_from_hf(
      cfg(R"(, "num_key_value_heads": 2, "use_sliding_window": false, "sliding_window": 4096)", "qwen2"), "cfg");
  EXPECT_EQ(q2.architecture, Architecture::Qwen2);
  EXPECT_TRUE(q2.attention_bias);
  EXPECT_FALSE(q2.sliding_window);
  auto q3 = config_from_hf(cfg(R"(, "head_dim": 32, "tie_word_embeddings": true)", "qwen3"), "cfg");
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_EQ(q3.head_dim, 32);
  EXPECT_TRUE(q3.tie_word_embeddings);
  auto mi = config_from_hf(cfg(R"(, "sliding_window": 4096, "head_dim": null)", "mistral"), "cfg");
  EXPECT_EQ(mi.architecture, Architecture::Mistral);
  EXPECT_EQ(mi.sliding_window, 4096);
  EXPECT_EQ(mi.head_dim, 16);

  auto err = [&](std::string extra, std::string type, std::string part) {
    std::string msg = error_of([&] { config_from_hf(cfg(extra, type), "cfg.json"); });
    EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  };
  err("", "gpt2", "model_type 'gpt2' is not supported");
  err(R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4})", "llama", "rope type 'yarn'");
  err(R"(, "num_key_value_heads": 3)", "llama", "not a multiple of 3 KV heads");
  err(R"(, "hidden_size": "big")", "llama", "\"hidden_size\"");
  err(R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8})", "llama", "original_max_position_embeddings");
  err(R"(, "bos_token_id": 128256)", "llama",
      "bos_token_id 128256 is not a token id (the vocabulary has 128256 tokens)");
  std::string missing = error_of([&] { config_from_hf(json::parse(R"({"model_type": "llama"})"), "c.json"); });
  EXPECT_NE(missing.find("missing \"vocab_size\""), std::string::npos) << missing;
}

// --- bad models ---------------------------------------------------------------------------------

TEST(ModelFileBad, MissingAndMisshapenTensors) {
  Tiny t;
  t.make();
  std::string msg = error_of([&] { open_model(t.write_hf("miss_hf", "model.layers.0.mlp.up_proj.weight"), quiet()); });
  EXPECT_NE(msg.find("missing tensor 'model.layers.0.mlp.up_proj.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("miss_hf"), std::string::npos) << msg;
  // No lm_head while config.json says tie_word_embeddings: false -> missing; without the key -> tied.
  fs::path no_lm = t.write_hf("miss_lm", "lm_head.weight");
  msg = error_of([&] { open_model(no_lm, quiet()); });
  EXPECT_NE(msg.find("missing tensor 'lm_head.weight'"), std::string::npos) << msg;
  std::string cfg = t.config_json();
  cfg.replace(cfg.find(", \"tie_word_embeddings\": false"), std::string(", \"tie_word_embeddings\": false").size(), "");
  write_text(no_lm / "config.json", cfg);
  EXPECT_TRUE(open_model(no_lm, quiet()).config().tie_word_embeddings);
  msg = error_of([&] { open_model(t.write_hf("shape_hf", "", "model.layers.0.self_attn.o_proj.weight"), quiet()); });
  EXPECT_NE(msg.find("tensor 'model.layers.0.self_attn.o_proj.weight' has shape [64], expected [8, 8]"),
            std::string::npos)
      << msg;
  msg = error_of([&] { open_model(t.write_gguf("miss_gguf", "model.norm.weight"), quiet()); });
  EXPECT_NE(msg.find("missing tensor 'model.norm.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.gguf"), std::string::npos) << msg;
  Tiny b = t;
  b.bias = true;  // config says bias; the tensors lack it
  fs::path dir = t.write_hf("bias_missing");
  write_text(dir / "config.json", b.config_json());
  msg = error_of([&] { open_model(dir, quiet()); });
  EXPECT_NE(msg.find("missing tensor 'model.layers.0.self_attn.q_proj.bias'"), std::string::npos) << msg;
}

TEST(ModelFileBad, FoldersAndFiles) {
  std::string msg = error_of([&] { open_model(temp_dir("nothing") / "nope.gguf", quiet()); });
  EXPECT_NE(msg.find("no such file or folder"), std::string::npos) << msg;
  fs::path empty = temp_dir("no_config");
  msg = error_of([&] { open_model(empty, quiet()); });
  EXPECT_NE(msg.find("no config.json"), std::string::npos) << msg;
  Tiny t;
  t.make();
  fs::path dir = t.write_hf("bad_config");
  write_text(dir / "config.json", "{\"model_type\": \"llama\", ");
  msg = error_of([&] { open_model(dir, quiet()); });
  EXPECT_NE(msg.find("config.json: JSON error"), std::string::npos) << msg;
  GgufWriter w;
  w.add_string("general.architecture", "gpt2");
  fs::path p = temp_dir("gpt2") / "m.gguf";
  w.write(p);
  msg = error_of([&] { open_model(p, quiet()); });
  EXPECT_NE(msg.find("architecture 'gpt2' is not supported"), std::string::npos) << msg;
  GgufWriter w2;
  w2.add_string("general.architecture", "llama");
  fs::path p2 = temp_dir("nokeys") / "m.gguf";
  w2.write(p2);
  msg = error_of([&] { open_model(p2, quiet()); });
  EXPECT_NE(msg.find("missing metadata key 'llama.embedding_length'"), std::string::npos) << msg;
}

// --- progress and the CLI -----------------------------------------------------------------------

TEST(Progress, Render) {
  wgc::Progress p("loading x", 2'000'000'000, wgc::Progress::Unit::Bytes);
  EXPECT_EQ(p.render(500'000'000, 1.25, 10), "loading x  [###       ]  25%  500.0 MB/2.0 GB  1.2 s");
  wgc::Progress items("tensors", 3);
  EXPECT_EQ(items.render(3, 0.5, 4), "tensors  [####] 100%  3/3  0.5 s");
  items.add(1);
  EXPECT_EQ(items.done(), 1u);
  EXPECT_FALSE(items.shown());  // under the delay
}

namespace {
std::string run_cli(const std::string& args, int* status) {
  std::string cmd = std::string(WGC_CLI_PATH) + " " + args + " 2>&1";
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  *status = ::pclose(f);
  return out;
}
}  // namespace

TEST(Inspect, TextAndJson) {
  WGC_REQUIRE_FILE(fs::path(WGC_CLI_PATH));
  auto path = wgc::test::fixtures_dir() / "tiny-llama2-f32" / "tiny-llama2-f32-q8_0.gguf";
  WGC_REQUIRE_FILE(path);
  int status = -1;
  std::string text = run_cli("inspect " + path.string(), &status);
  EXPECT_EQ(status, 0) << text;
  for (const char* part :
       {"GGUF v3", "llama", "vocab 32000, hidden 16, layers 2", "model.embed_tokens.weight", "lm_head.weight",
        "[32000, 16]", "tokenizer.ggml.tokens = [32000 x string]", "...", "bos 1 \"<s>\"", "eos 2 \"</s>\""})
    EXPECT_NE(text.find(part), std::string::npos) << "missing '" << part << "' in:\n" << text;

  std::string js = run_cli("inspect --json " + path.string(), &status);
  EXPECT_EQ(status, 0) << js;
  auto v = json::parse(js, "inspect --json");
  EXPECT_EQ(v["format"].as_string(), "gguf");
  EXPECT_EQ(v["config"]["n_layers"].as_int(), 2);
  EXPECT_EQ(v["tensors"].size(), 21u);
  EXPECT_EQ(v["tensors"][0]["shape"].size(), 2u);
  EXPECT_EQ(v["metadata"]["tokenizer.ggml.tokens"]["count"].as_int(), 32000);
  EXPECT_EQ(v["metadata"]["tokenizer.ggml.tokens"]["head"].size(), 8u);
  EXPECT_EQ(v["tokenizer"]["vocab_size"].as_int(), 32000);
  EXPECT_EQ(v["tokenizer"]["bos_token"].as_string(), "<s>");

  std::string hf = run_cli("inspect --json " + (wgc::test::fixtures_dir() / "tiny-llama3-bf16").string(), &status);
  EXPECT_EQ(status, 0) << hf;
  auto h = json::parse(hf, "inspect --json");
  EXPECT_EQ(h["format"].as_string(), "safetensors");
  EXPECT_EQ(h["config"]["rope_scaling"]["type"].as_string(), "llama3");

  std::string bad = run_cli("inspect /nonexistent/model.gguf", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(bad.find("/nonexistent/model.gguf"), std::string::npos) << bad;
}

// --- a GGUF read from a ByteSource (the wasm engine's loading) ---------------------------------------

namespace {

std::vector<std::byte> file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto b = std::as_bytes(std::span(c));
  return {b.begin(), b.end()};
}

fs::path tiny_dict() { return wgc::test::models_dir() / "wgc-tiny-dict" / "wgc-tiny-dict-q8_0.gguf"; }

}  // namespace

TEST(ModelFileStream, EveryTensorLoadsAsMapped) {
  auto path = tiny_dict();
  WGC_REQUIRE_FILE(path);
  auto mapped = open_model(path, quiet());
  auto src = std::make_shared<wgc::test::MemorySource>(file_bytes(path));
  auto m = open_model(src, "tiny.gguf", quiet());
  EXPECT_TRUE(m.streamed());
  EXPECT_FALSE(mapped.streamed());
  EXPECT_EQ(m.path(), "tiny.gguf");
  EXPECT_EQ(m.config().n_layers, mapped.config().n_layers);
  EXPECT_EQ(m.config().vocab_size, mapped.config().vocab_size);
  EXPECT_EQ(m.total_bytes(), mapped.total_bytes());
  // Opening read the header, not the weights.
  EXPECT_LE(src->read_bytes, std::max<uint64_t>(1 << 20, 2 * m.gguf()->data_offset()));
  EXPECT_LT(src->read_bytes, m.total_bytes() / 2);
  ASSERT_EQ(m.tensors().size(), mapped.tensors().size());
  for (size_t i = 0; i < m.tensors().size(); ++i) {
    const ModelTensor &t = m.tensors()[i], &w = mapped.tensors()[i];
    SCOPED_TRACE(w.name);
    EXPECT_TRUE(t.data.empty());
    EXPECT_EQ(t.name, w.name);
    EXPECT_EQ(t.shape, w.shape);
    EXPECT_EQ(t.unpermuted, w.unpermuted);
    EXPECT_EQ(t.byte_size(), w.data.size());
    const uint64_t before = src->read_bytes;
    ModelTensor l = m.load(t);  // Q/K rows un-permuted as open_model(path) does
    EXPECT_EQ(src->read_bytes - before, w.data.size());
    ASSERT_EQ(l.data.size(), w.data.size());
    EXPECT_EQ(std::memcmp(l.data.data(), w.data.data(), w.data.size()), 0);
    EXPECT_NE(l.owner, nullptr);
    EXPECT_EQ(m.load(l).data.data(), l.data.data());  // loaded already: no second read
    EXPECT_EQ(mapped.load(w).data.data(), w.data.data());
  }
  // One tensor at a time: no read was larger than the largest tensor.
  uint64_t largest = 0;
  for (const auto& t : mapped.tensors()) largest = std::max<uint64_t>(largest, t.data.size());
  EXPECT_LE(src->largest_read, std::max<uint64_t>(largest, 1 << 20));
  // Row ranges (an expert of a stacked tensor) load their own bytes.
  const ModelTensor& e = *m.find("model.embed_tokens.weight");
  ModelTensor rows = m.load(tensor_rows(e, 5, 3));
  ModelTensor want = tensor_rows(*mapped.find("model.embed_tokens.weight"), 5, 3);
  ASSERT_EQ(rows.data.size(), want.data.size());
  EXPECT_EQ(std::memcmp(rows.data.data(), want.data.data(), want.data.size()), 0);
  // The CPU engines read weights in place: refused, saying why.
  EXPECT_TRUE(wgc::test::has(error_of([&] { m.data_owner(); }), "opened from a stream"))
      << error_of([&] { m.data_owner(); });
}

TEST(ModelFileStream, BadAndTruncated) {
  auto path = tiny_dict();
  WGC_REQUIRE_FILE(path);
  const auto bytes = file_bytes(path);
  auto open = [](std::vector<std::byte> b, uint64_t claim = 0) {
    return open_model(std::make_shared<wgc::test::MemorySource>(std::move(b), claim), "bad.gguf", quiet());
  };
  // A file cut short: the header says where the tensors end, past its end.
  std::string cut = error_of([&] { open({bytes.begin(), bytes.begin() + std::ptrdiff_t(bytes.size() / 2)}); });
  EXPECT_TRUE(wgc::test::has(cut, "bad.gguf: ")) << cut;
  EXPECT_TRUE(wgc::test::has(cut, "runs past the end of the file (size " + std::to_string(bytes.size() / 2))) << cut;
  // Not a GGUF.
  std::string text = "these are not the weights you are looking for\n";
  std::vector<std::byte> tb(reinterpret_cast<const std::byte*>(text.data()),
                            reinterpret_cast<const std::byte*>(text.data() + text.size()));
  std::string notg = error_of([&] { open(tb); });
  EXPECT_TRUE(wgc::test::has(notg, "not a GGUF file")) << notg;
  EXPECT_TRUE(wgc::test::has(error_of([&] { open({}); }), "magic is missing")) << error_of([&] { open({}); });
  // A download that stops after the header: opening works, the tensor past the end says why.
  auto m0 = open_model(path, quiet());
  const ModelTensor* last = &m0.tensors().back();
  const uint64_t last_at = m0.gguf()->data_offset() + m0.gguf()->find_tensor(last->file_name)->offset;
  auto m = open({bytes.begin(), bytes.begin() + std::ptrdiff_t(last_at)}, bytes.size());
  std::string stopped = error_of([&] { m.load(*m.find(last->name)); });
  EXPECT_TRUE(wgc::test::has(stopped, "bad.gguf: tensor '" + last->file_name + "'")) << stopped;
  EXPECT_TRUE(wgc::test::has(stopped, "the download stopped at " + std::to_string(last_at))) << stopped;
  // A NaN in a norm is found when the norm is loaded.
  const auto* norm = m0.gguf()->find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  auto nan = bytes;
  const float x = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(nan.data() + m0.gguf()->data_offset() + norm->offset + 8, &x, 4);
  auto mn = open(nan);
  std::string bad = error_of([&] { mn.load(mn.tensor("model.norm.weight")); });
  EXPECT_TRUE(wgc::test::has(bad, "NaN or an infinity at element 2")) << bad;
}

TEST(Engine, StreamedTinyDictEqualsMapped) {
  auto path = tiny_dict();
  WGC_REQUIRE_FILE(path);
  EngineOptions eo;
  eo.progress = false;
  eo.max_ctx = 64;
  eo.device = Device::Gpu;
  const std::vector<int32_t> ids = {0, 17, 250, 3, 4000, 9};
  const ModelFile mf = open_model(path, quiet()),
                  sf = open_model(std::make_shared<wgc::test::MemorySource>(file_bytes(path)), "tiny.gguf", quiet());
  LlamaModel mapped(wgc::test::ctx(), mf, eo), streamed(wgc::test::ctx(), sf, eo);
  EXPECT_EQ(streamed.weight_bytes(), mapped.weight_bytes());
  auto a = streamed.all_logits(ids), b = mapped.all_logits(ids);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "the same weights give the same bits";
}
