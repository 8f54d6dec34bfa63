// The encoder (src/llm/encoder): its attention kernel against the CPU reference at awkward sizes
// (packed sequences of different lengths, GQA, head sizes that are not powers of two, more keys
// than a chunk), and whole BERT / RoBERTa models on both engines against the f64 reference forward
// pass (reference::ForwardRef, which tests/data/arch checks against transformers), from a Hugging
// Face folder written here with random weights of a scale where attention is far from uniform,
// and from a synthetic Q8_0 GGUF. Pooling and normalisation against their definitions.
#include "io/npy.h"
#include "llm/encoder/embedding_model.h"
#include "llm/encoder/encoder.h"
#include "llm/formats/model_file.h"
#include "llm/formats/safetensors.h"
#include "llm/reference/forward_ref.h"
#include "llm/synth/synth_model.h"
#include "llm/tokenizer/loaders.h"
#include "ops/llm/encoder_ops.h"
#include "test_llm_util.h"
#include "util/json.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;
namespace fs = std::filesystem;

namespace {

std::vector<uint32_t> packed_ranges(const std::vector<uint32_t>& lengths) {
  std::vector<uint32_t> r;
  uint32_t b = 0;
  for (uint32_t n : lengths) {
    for (uint32_t t = 0; t < n; ++t) {
      r.push_back(b);
      r.push_back(b + n);
    }
    b += n;
  }
  return r;
}

double max_rel(std::span<const float> got, std::span<const double> want) {
  double mx = 0, ref = 0;
  if (got.size() != want.size()) return INFINITY;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    mx = std::max(mx, std::abs(double(got[i]) - want[i]));
    ref = std::max(ref, std::abs(want[i]));
  }
  return mx / std::max(ref, 1e-30);
}

}  // namespace

TEST(EncoderAttention, KernelMatchesCpuReferenceOnPackedSequences) {
  struct Case {
    std::vector<uint32_t> lengths;
    uint32_t heads, kv, hd;
  };
  for (const Case& cs :
       {Case{{13, 70, 1}, 3, 3, 20}, Case{{5, 9}, 4, 2, 36}, Case{{130}, 2, 1, 64}, Case{{7}, 1, 1, 200}}) {
    uint32_t n = 0;
    for (uint32_t l : cs.lengths) n += l;
    EncoderAttnDims d;
    d.n_tokens = n;
    d.n_heads = cs.heads;
    d.n_kv_heads = cs.kv;
    d.head_dim = cs.hd;
    d.q_off = 3;  // a gap before q, and a stride with room after v
    d.k_off = d.q_off + cs.heads * cs.hd;
    d.v_off = d.k_off + cs.kv * cs.hd;
    d.stride = d.v_off + cs.kv * cs.hd + 5;
    d.o_off = 2;
    d.o_stride = cs.heads * cs.hd + 6;
    d.scale = 1.f / std::sqrt(float(cs.hd));
    auto qkv = test::random_floats(size_t(n) * d.stride, 11 + n, -2.f, 2.f);
    auto ranges = packed_ranges(cs.lengths);
    std::vector<float> want(size_t(n) * d.o_stride, NAN);
    llm::cpu::encoder_attention(qkv, ranges, want, d);
    Tensor tq = make_tensor(ctx(), {int64_t(qkv.size())}, qkv);
    Tensor tr =
        make_tensor(ctx(), {int64_t(ranges.size())}, DType::U32, std::as_bytes(std::span<const uint32_t>(ranges)));
    Tensor out = test::poisoned(int64_t(want.size()));
    Batch b(ctx());
    encoder_attention(b, tq, tr, ranges, out, d);
    b.run();
    auto got = download<float>(ctx(), out);
    // Written where the reference wrote, untouched (NaN) in the gaps.
    std::vector<bool> written(want.size());
    for (size_t i = 0; i < want.size(); ++i) written[i] = !std::isnan(want[i]);
    test::expect_written_and_gaps(got, want, written, {}, false, 2e-5, "encoder attention");
  }
}

TEST(EncoderAttention, ReferenceAttendsWithinEachSequenceOnly) {
  // Two sequences: changing the second one's keys must not move the first one's outputs.
  EncoderAttnDims d;
  d.n_tokens = 6;
  d.n_heads = d.n_kv_heads = 1;
  d.head_dim = 4;
  d.k_off = 4;
  d.v_off = 8;
  d.stride = 12;
  d.o_stride = 4;
  d.scale = 0.5f;
  auto qkv = test::random_floats(72, 5, -2.f, 2.f);
  auto ranges = packed_ranges({2, 4});
  std::vector<float> a(24), b2(24);
  llm::cpu::encoder_attention(qkv, ranges, a, d);
  for (size_t i = 2 * 12; i < qkv.size(); ++i) qkv[i] += 1.f;
  llm::cpu::encoder_attention(qkv, ranges, b2, d);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a[size_t(i)], b2[size_t(i)]) << i;
  EXPECT_NE(a[8], b2[8]);
  EXPECT_THROW(llm::cpu::encoder_attention(qkv, std::vector<uint32_t>{0, 0}, a, d), wgc::Error);
}

TEST(EncoderPooling, ClsMeanLastAndNormalisation) {
  // Two sequences (2 and 3 rows) of dim 2.
  std::vector<float> h = {1, 2, 3, 4, /**/ 0, 3, 6, 9, 3, 0};
  std::vector<int64_t> len = {2, 3};
  EXPECT_EQ(pool_hidden(h, len, 2, Pooling::Cls, false), (std::vector<float>{1, 2, 0, 3}));
  EXPECT_EQ(pool_hidden(h, len, 2, Pooling::Last, false), (std::vector<float>{3, 4, 3, 0}));
  EXPECT_EQ(pool_hidden(h, len, 2, Pooling::Mean, false), (std::vector<float>{2, 3, 3, 4}));
  auto n = pool_hidden(h, len, 2, Pooling::Mean, true);
  EXPECT_NEAR(n[0], 2 / std::sqrt(13.0), 1e-7);
  EXPECT_NEAR(n[3], 0.8, 1e-7);
  EXPECT_THROW(pool_hidden(h, std::vector<int64_t>{2, 4}, 2, Pooling::Mean, true), wgc::Error);
}

namespace {

// A Hugging Face folder of a BertModel / RobertaModel with random weights (F32), written here.
struct TinyBert {
  int64_t vocab = 53, hidden = 36, heads = 3, layers = 2, ffn = 52, max_pos = 40, types = 2;
  bool roberta = false;
  std::string pooling = "cls";  // "cls", "mean" (sentence-transformers' 1_Pooling), "" (no modules.json)
};

void write_tiny_bert(const fs::path& dir, const TinyBert& b, uint32_t seed) {
  fs::create_directories(dir);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<std::pair<std::string, std::vector<int64_t>>> tensors;
  auto add = [&](const std::string& n, std::vector<int64_t> s) { tensors.emplace_back(n, std::move(s)); };
  const int64_t H = b.hidden;
  const int64_t pos_rows = b.max_pos + (b.roberta ? 2 : 0);
  add("embeddings.word_embeddings.weight", {b.vocab, H});
  add("embeddings.position_embeddings.weight", {pos_rows, H});
  add("embeddings.token_type_embeddings.weight", {b.types, H});
  add("embeddings.LayerNorm.weight", {H});
  add("embeddings.LayerNorm.bias", {H});
  for (int64_t l = 0; l < b.layers; ++l) {
    std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* m :
         {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
      add(p + m + ".weight", {H, H});
      add(p + m + ".bias", {H});
    }
    add(p + "attention.output.LayerNorm.weight", {H});
    add(p + "attention.output.LayerNorm.bias", {H});
    add(p + "intermediate.dense.weight", {b.ffn, H});
    add(p + "intermediate.dense.bias", {b.ffn});
    add(p + "output.dense.weight", {H, b.ffn});
    add(p + "output.dense.bias", {H});
    add(p + "output.LayerNorm.weight", {H});
    add(p + "output.LayerNorm.bias", {H});
  }
  json::Object header;
  std::vector<float> data;
  for (auto& [name, shape] : tensors) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const bool norm_w = name.ends_with("LayerNorm.weight");
    // Matrices at 1/sqrt(fan-in) * 1.5 (scores of order one: attention far from uniform), biases
    // and LayerNorm parameters random too (a wrong norm or bias shows).
    const float sc = shape.size() == 2 ? 1.5f / std::sqrt(float(shape[1])) : 0.3f;
    const size_t b0 = data.size() * 4;
    for (int64_t i = 0; i < n; ++i) data.push_back(norm_w ? 1.f + 0.3f * nd(rng) : sc * nd(rng));
    json::Array sh;
    for (int64_t s : shape) sh.push_back(json::Value(s));
    json::Object e;
    e.emplace_back("dtype", json::Value("F32"));
    e.emplace_back("shape", json::Value(std::move(sh)));
    e.emplace_back("data_offsets",
                   json::Value(json::Array{json::Value(int64_t(b0)), json::Value(int64_t(data.size() * 4))}));
    header.emplace_back(name, json::Value(std::move(e)));
  }
  std::string hs = json::Value(std::move(header)).dump();
  while (hs.size() % 8) hs += ' ';
  std::ofstream f(dir / "model.safetensors", std::ios::binary);
  uint64_t hl = hs.size();
  f.write(reinterpret_cast<const char*>(&hl), 8);
  f.write(hs.data(), std::streamsize(hs.size()));
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * 4));
  f.close();
  json::Object cfg;
  cfg.emplace_back("architectures", json::Value(json::Array{json::Value(b.roberta ? "RobertaModel" : "BertModel")}));
  cfg.emplace_back("model_type", json::Value(b.roberta ? "roberta" : "bert"));
  cfg.emplace_back("vocab_size", json::Value(b.vocab));
  cfg.emplace_back("hidden_size", json::Value(b.hidden));
  cfg.emplace_back("num_hidden_layers", json::Value(b.layers));
  cfg.emplace_back("num_attention_heads", json::Value(b.heads));
  cfg.emplace_back("intermediate_size", json::Value(b.ffn));
  cfg.emplace_back("hidden_act", json::Value("gelu"));
  cfg.emplace_back("max_position_embeddings", json::Value(pos_rows));
  cfg.emplace_back("type_vocab_size", json::Value(b.types));
  cfg.emplace_back("layer_norm_eps", json::Value(1e-12));
  cfg.emplace_back("pad_token_id", json::Value(int64_t(1)));
  std::ofstream(dir / "config.json") << json::Value(std::move(cfg)).dump();
  if (!b.pooling.empty()) {
    std::ofstream(dir / "modules.json")
        << R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
        << R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])";
    fs::create_directories(dir / "1_Pooling");
    std::ofstream(dir / "1_Pooling" / "config.json")
        << R"({"word_embedding_dimension":)" << b.hidden << R"(,"pooling_mode_cls_token":)"
        << (b.pooling == "cls" ? "true" : "false") << R"(,"pooling_mode_mean_tokens":)"
        << (b.pooling == "mean" ? "true" : "false") << "}";
  }
}

ModelFile open_any(const fs::path& p) {
  OpenOptions o;
  o.progress = false;
  o.any_architecture = true;
  return open_model(p, o);
}

// Every engine against the f64 reference: hidden states and pooled embeddings of several
// sequences in one call (packed into one pass, and split over passes by max_batch_tokens).
void check_against_reference(const ModelFile& m, double tol, const std::vector<std::vector<int32_t>>& seqs) {
  reference::ForwardRef ref(m);
  for (bool gpu : {false, true}) {
    for (int max_batch : {4096, 20}) {
      SCOPED_TRACE(std::string(gpu ? "gpu" : "cpu") + " max_batch " + std::to_string(max_batch));
      EncoderOptions eo;
      eo.max_batch_tokens = max_batch;
      eo.threads = 2;
      EncoderModel enc(m, gpu ? std::optional<Context>(ctx()) : std::nullopt, eo);
      EXPECT_EQ(enc.on_gpu(), gpu);
      std::vector<float> h = enc.hidden(seqs), e = enc.embed(seqs);
      ASSERT_EQ(e.size(), seqs.size() * size_t(enc.dim()));
      size_t row = 0;
      for (size_t s = 0; s < seqs.size(); ++s) {
        std::vector<double> rh = ref.hidden(seqs[s]);
        std::span<const float> gh(h.data() + row * size_t(enc.dim()), rh.size());
        EXPECT_LT(max_rel(gh, rh), tol) << "hidden of sequence " << s;
        std::vector<double> re = ref.embedding(seqs[s]);
        EXPECT_LT(max_rel(std::span<const float>(e.data() + s * size_t(enc.dim()), re.size()), re), tol)
            << "embedding of sequence " << s;
        row += seqs[s].size();
      }
    }
  }
}

}  // namespace

TEST(EncoderModel, BertFromHfFolderMatchesReferenceOnBothEngines) {
  fs::path dir = test::temp_dir("encoder_bert");
  write_tiny_bert(dir, TinyBert{}, 1);
  ModelFile m = open_any(dir);
  EXPECT_EQ(m.config().pooling, Pooling::Cls);
  // Lengths around the 20-token pass limit and past the kernel's 64-key chunk.
  check_against_reference(m, 2e-4,
                          {{2, 5, 7, 11, 3},
                           {1},
                           {4, 8, 15, 16, 23, 42, 50, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
                           std::vector<int32_t>(40, 0)});
  // The same token at every position: only the positions tell them apart.
  EncoderModel enc(m, std::nullopt);
  auto h = enc.hidden(std::vector<std::vector<int32_t>>{{7, 7, 7}});
  EXPECT_GT(std::abs(h[0] - h[size_t(enc.dim())]), 1e-3);
  EXPECT_THROW(enc.embed(std::vector<std::vector<int32_t>>{std::vector<int32_t>(41, 1)}), wgc::LimitError);
  EXPECT_THROW(enc.embed(std::vector<std::vector<int32_t>>{{1, 53}}), wgc::Error);
  EXPECT_THROW(enc.embed(std::vector<std::vector<int32_t>>{{}}), wgc::Error);
}

TEST(EncoderModel, RobertaPositionsOffsetAndMeanPooling) {
  fs::path dir = test::temp_dir("encoder_roberta");
  TinyBert b;
  b.roberta = true;
  b.pooling = "mean";
  b.heads = 4;
  b.hidden = 40;
  write_tiny_bert(dir, b, 2);
  ModelFile m = open_any(dir);
  EXPECT_EQ(m.config().position_offset, 2);
  EXPECT_EQ(m.config().pooling, Pooling::Mean);
  check_against_reference(m, 2e-4, {{0, 5, 9, 2}, {0, 17, 33, 40, 41, 8, 2}});
  EncoderModel enc(m, std::nullopt);
  EXPECT_EQ(enc.max_tokens(), 40);
}

TEST(EncoderModel, SynthQ8GgufMatchesReference) {
  using namespace synth;
  ModelShape s = find_shape("bge-base");
  s.hidden = 64;
  s.layers = 2;
  s.heads = s.kv_heads = 4;
  s.head_dim = 16;
  s.ffn = 128;
  s.vocab = 300;
  s.context = 48;
  fs::path file = test::temp_dir("encoder_synth") / "bge-tiny-q8_0.gguf";
  SynthModel sm(s, TensorType::Q8_0, 3);
  GgufWriteOptions wo;
  wo.progress = false;
  sm.write(file, wo);
  ModelFile m = open_any(file);
  // Q8_0 weights are exact in both; the CPU engine quantizes activations to 8 bits too.
  check_against_reference(m, 3e-2, {{101, 7, 250, 3, 102}, {101, 102}});
}

// --- transformers' tiny embedding models (tests/data/arch, made by scripts/make_arch_fixtures.py) ----

namespace {

fs::path arch_dir(const std::string& name) { return fs::path(WGC_SOURCE_DIR) / "tests/data/arch" / name; }

struct Golden {
  SafetensorsFile file;
  bool has(const std::string& name) const { return file.find(name) != nullptr; }
  template <class T>
  std::vector<T> get(const std::string& name) const {
    return test::tensor_values<T>(file, name);
  }
};

double rel_err(std::span<const float> got, const std::vector<float>& want) {
  double mx = 0, err = got.size() == want.size() ? 0 : INFINITY;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    mx = std::max(mx, std::abs(double(want[i])));
    err = std::max(err, std::isfinite(got[i]) ? std::abs(double(got[i]) - want[i]) : INFINITY);
  }
  return err / std::max(mx, 1e-30);
}

// Both prompts in one call (packed into one pass for the encoder), on both engines, from the Hugging
// Face folder and from llama.cpp's BF16 GGUF: the embeddings (and the encoder's last hidden states)
// against transformers' float64 ones; the tokenizer of each file gives the prompts' ids.
void check_fixture(const std::string& name, double tol) {
  const fs::path dir = arch_dir(name);
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
  json::Value info = json::parse_file(dir / "golden.json");
  std::vector<std::vector<int32_t>> seqs;
  std::vector<std::vector<float>> emb, last;
  for (int p = 0; g.has(test::prompt_key(p, "tokens")); ++p) {
    seqs.push_back(g.get<int32_t>(test::prompt_key(p, "tokens")));
    emb.push_back(g.get<float>(test::prompt_key(p, "embedding")));
    if (g.has(test::prompt_key(p, "last_hidden"))) last.push_back(g.get<float>(test::prompt_key(p, "last_hidden")));
  }
  ASSERT_EQ(seqs.size(), 2u);
  for (fs::path model : {dir, dir / (name + "-bf16.gguf")}) {
    SCOPED_TRACE(model.string());
    ASSERT_TRUE(fs::exists(model));
    ModelFile m = open_any(model);
    // The tokenizer: the prompts' ids from their text (golden.json has the text decoded with the
    // special tokens; BERT's [CLS]/[SEP] come from the post-processor, Qwen's <|endoftext|> is in it).
    Tokenizer tok = load_tokenizer(model);
    for (size_t p = 0; p < seqs.size(); ++p) {
      std::string text = info["prompts"][p]["text"].as_string();
      EXPECT_EQ(tok.decode(seqs[p]), text);
      if (m.config().is_encoder()) {  // [CLS]/[SEP] or <s>/</s> from the post-processor
        const std::string plain = tok.decode(seqs[p], true);
        EXPECT_EQ(tok.encode(plain, true), seqs[p]) << plain;
      } else {
        EXPECT_EQ(tok.encode(text, false), seqs[p]) << text;
      }
    }
    for (bool gpu : {false, true}) {
      SCOPED_TRACE(gpu ? "gpu" : "cpu");
      EmbeddingOptions eo;
      eo.threads = 2;
      eo.progress = false;
      EmbeddingModel em(m, gpu ? std::optional<Context>(ctx()) : std::nullopt, eo);
      std::vector<float> e = em.embed(seqs);
      for (size_t p = 0; p < seqs.size(); ++p)
        EXPECT_LT(rel_err(std::span<const float>(e).subspan(p * size_t(em.dim()), size_t(em.dim())), emb[p]), tol)
            << "embedding of prompt " << p;
      if (last.empty() || !m.config().is_encoder()) continue;  // the encoder's own hidden states
      EncoderModel enc(m, gpu ? std::optional<Context>(ctx()) : std::nullopt);
      std::vector<float> h = enc.hidden(seqs);
      size_t row = 0;
      for (size_t p = 0; p < seqs.size(); ++p) {
        const size_t n = seqs[p].size() * size_t(enc.dim());
        EXPECT_LT(rel_err(std::span<const float>(h).subspan(row, n), last[p]), tol) << "hidden of prompt " << p;
        row += n;
      }
    }
  }
}

}  // namespace

TEST(EmbeddingFixture, BertMatchesTransformers) { check_fixture("bert", 1e-4); }
TEST(EmbeddingFixture, RobertaMatchesTransformers) { check_fixture("roberta", 1e-4); }
TEST(EmbeddingFixture, Qwen3EmbeddingMatchesTransformers) { check_fixture("qwen3-embedding", 1e-4); }
// XLM-RoBERTa: RoBERTa's layers, a SentencePiece Unigram tokenizer (tokenizer.json and llama.cpp's
// "t5" GGUF vocabulary), CLS pooling.
TEST(EmbeddingFixture, XlmRobertaMatchesTransformers) { check_fixture("xlmr", 1e-4); }

// ModernBERT: rotary positions with the global and local layers' own bases, local layers whose
// window (|i - j| <= 4) is narrower than the prompts, GeGLU, bias-free LayerNorms, mean pooling.
TEST(EmbeddingFixture, ModernBertMatchesTransformers) {
  const fs::path dir = arch_dir("modernbert");
  WGC_REQUIRE_FILE(dir / "golden.json");
  // The window binds (transformers' outputs without it differ), so matching them tests it.
  json::Value info = json::parse_file(dir / "golden.json");
  ASSERT_TRUE(info.find("window_effect"));
  for (const auto& w : info["window_effect"].items()) EXPECT_GT(w.as_double(), 1e-3);
  const ModelConfig c = open_any(dir).config();
  EXPECT_EQ(c.architecture, Architecture::ModernBert);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(c.sliding_window, 8);
  EXPECT_EQ(c.rope_theta, 160000.0);
  EXPECT_EQ(c.sliding_rope_theta, 10000.0);
  check_fixture("modernbert", 1e-4);
}

// nomic-bert (nomic-embed-text's architecture: rotary q/k through a fused Wqkv, post-norm layers,
// SwiGLU, token types without positions, mean pooling). transformers cannot run it (remote code),
// so the reference is llama.cpp's (node-llama-cpp 3.21.1): a tiny model wgc synth-model wrote (F32,
// a synthetic WordPiece vocabulary), its Hugging Face form (the same bytes under nomic's names),
// and llama.cpp's ids and mean-pooled, unnormalised embeddings of five texts, one of them longer
// than a 64-key chunk of the GPU attention (scripts/make_nomic_bert_fixture.sh). Both file forms,
// both engines, all texts packed into one pass; each form's tokenizer gives llama.cpp's ids.
TEST(EmbeddingFixture, NomicBertMatchesLlamaCpp) {
  const fs::path dir = arch_dir("nomic-bert");
  WGC_REQUIRE_FILE(dir / "reference.json");
  json::Value ref = json::parse_file(dir / "reference.json");
  ASSERT_FALSE(ref["normalized"].as_bool());
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> seqs;
  std::vector<std::vector<float>> want;
  for (const auto& c : ref["cases"].items()) {
    texts.push_back(c["text"].as_string());
    seqs.emplace_back();
    for (const auto& x : c["ids"].items()) seqs.back().push_back(int32_t(x.as_int()));
    want.emplace_back();
    for (const auto& x : c["embedding"].items()) want.back().push_back(float(x.as_double()));
  }
  ASSERT_EQ(seqs.size(), 5u);
  EXPECT_GT(seqs.back().size(), 64u);  // more keys than one chunk of the GPU kernel
  for (fs::path model : {dir, dir / "nomic-bert-f32.gguf"}) {
    SCOPED_TRACE(model.string());
    ModelFile m = open_any(model);
    const ModelConfig& c = m.config();
    EXPECT_EQ(c.architecture, Architecture::NomicBert);
    EXPECT_EQ(c.pooling, Pooling::Mean);
    EXPECT_EQ(c.rope_theta, 1000.0);
    EXPECT_EQ(c.rope_dim, 24);
    EXPECT_EQ(c.max_position_embeddings, 128);
    Tokenizer tok = load_tokenizer(model);
    for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(embedding_tokens(tok, c, texts[i]), seqs[i]) << texts[i];
    for (bool gpu : {false, true}) {
      SCOPED_TRACE(gpu ? "gpu" : "cpu");
      EmbeddingOptions eo;
      eo.threads = 2;
      eo.progress = false;
      EmbeddingModel em(m, gpu ? std::optional<Context>(ctx()) : std::nullopt, eo);
      ASSERT_EQ(em.dim(), 72);
      // llama.cpp's vectors are pooled, not normalised (wgc's normalisation: EncoderPooling).
      std::vector<float> e = em.embed(seqs, false);
      for (size_t i = 0; i < seqs.size(); ++i)
        EXPECT_LT(rel_err(std::span<const float>(e).subspan(i * 72, 72), want[i]), 1e-4) << "text " << i;
    }
  }
}

// Qwen3-Embedding's GGUF does not say that its tokenizer appends <|endoftext|>; the embedding
// pipeline appends it, so both file forms give the tokens transformers pooled.
TEST(EmbeddingFixture, DecoderEmbeddingTokensEndWithEndOfText) {
  const fs::path dir = arch_dir("qwen3-embedding");
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
  json::Value info = json::parse_file(dir / "golden.json");
  for (fs::path model : {dir, dir / "qwen3-embedding-bf16.gguf"}) {
    ModelFile m = open_any(model);
    Tokenizer tok = load_tokenizer(model);
    for (int p = 0; g.has(test::prompt_key(p, "tokens")); ++p) {
      std::string text = info["prompts"][size_t(p)]["text"].as_string();
      ASSERT_TRUE(text.ends_with("<|endoftext|>"));
      text.resize(text.size() - 13);
      EXPECT_EQ(embedding_tokens(tok, m.config(), text), g.get<int32_t>(test::prompt_key(p, "tokens")))
          << model << " " << text;
    }
  }
}

// `wgc embed` from text, as a user runs it: the bert fixture's first prompt through the command's
// own tokenizer, engine and pooling gives transformers' embedding (printed JSON and written .npy);
// a language model is refused, naming why.
TEST(EmbedCli, TextToTransformersEmbedding) {
  const fs::path dir = arch_dir("bert");
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
  const std::vector<float> want = g.get<float>("p0.embedding");
  for (const char* backend : {"cpu", "auto"}) {
    auto r = test::run_cli("embed --backend " + std::string(backend) + " --json --model " + test::quote(dir.string()) +
                           " 'Hello world! How are you today?' 'second text'");
    ASSERT_EQ(r.rc, 0) << r.err;
    json::Value v = json::parse(r.out);
    EXPECT_EQ(v["dim"].as_int(), 64);
    EXPECT_EQ(v["tokens"][0].as_int(), 13);
    std::vector<float> got;
    for (const auto& x : v["embeddings"][0].items()) got.push_back(float(x.as_double()));
    EXPECT_LT(rel_err(got, want), 1e-4) << backend;
  }
  const fs::path out = test::temp_dir("embed_cli") / "e.npy";
  auto r = test::run_cli("embed --model " + test::quote((dir / "bert-bf16.gguf").string()) + " --out " +
                         test::quote(out.string()) + " 'Hello world! How are you today?' x y");
  ASSERT_EQ(r.rc, 0) << r.err;
  npy::Array a = npy::read(out);
  ASSERT_EQ(a.shape, (std::vector<int64_t>{3, 64}));
  std::vector<float> first(64);
  std::memcpy(first.data(), a.data.data(), 64 * 4);
  EXPECT_LT(rel_err(first, want), 1e-4);
  r = test::run_cli("embed --model " + test::quote((dir / "bert-bf16.gguf").string()) + " --out " +
                    test::quote(out.string()) + " again");
  EXPECT_NE(r.rc, 0);                // the file exists: refused without --force
  r = test::run_cli("embed hello");  // the built-in language model
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(test::has(r.err, "not an embedding model")) << r.err;
}
