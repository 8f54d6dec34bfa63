// The float64 reference forward (src/llm/reference) against transformers: the shared Llama fixtures
// (every format they come in), and every architecture of tests/data/arch (logits at every position,
// greedy tokens, embeddings, hidden states, rope frequencies, through the Hugging Face folder and
// the GGUF that llama.cpp's converter wrote). Plus the identities each feature must keep.
#include "llm/formats/model_file.h"
#include "llm/formats/safetensors.h"
#include "llm/formats/tensor_names.h"
#include "llm/reference/forward_ref.h"
#include "test_util.h"
#include "util/json.h"

#include <cmath>
#include <cstring>

using namespace wgc::llm;
using namespace wgc::llm::reference;
namespace fs = std::filesystem;
namespace json = wgc::json;

namespace {

OpenOptions quiet() {
  OpenOptions o;
  o.progress = false;
  o.prefault = false;
  o.any_architecture = true;
  return o;
}

struct Golden {
  SafetensorsFile file;
  bool has(const std::string& name) const { return file.find(name) != nullptr; }
  template <class T>
  std::vector<T> get(const std::string& name) const {
    return wgc::test::tensor_values<T>(file, name);
  }
};

// max |got - want| / max |want| over want.size() values, got[offset ..].
double rel_err(const std::vector<double>& got, size_t offset, const std::vector<float>& want) {
  double mx = 0, err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    mx = std::max(mx, std::abs(double(want[i])));
    err = std::max(err, std::abs(got[offset + i] - double(want[i])));
  }
  return err / std::max(mx, 1e-30);
}

// "p{i}.{suffix}" (appended piecewise: GCC 12 warns, wrongly, on "p" + std::to_string(i)).
std::string pkey(int i, std::string_view suffix = "") {
  std::string k = "p";
  k += std::to_string(i);
  k += '.';
  k += suffix;
  return k;
}

fs::path arch_dir(const std::string& name) { return fs::path(WGC_SOURCE_DIR) / "tests/data/arch" / name; }

}  // namespace

// --- transformers' tiny Llamas (../shared/fixtures) -------------------------------------------------

TEST(ForwardRef, SharedLlamaFixtures) {
  struct Case {
    std::string folder, logits_key, file;
    double tol;
  };
  const Case cases[] = {
      {"tiny-llama2-f32", "logits_last4", "", 2e-5},
      {"tiny-llama2-f32", "logits_last4", "tiny-llama2-f32-f32.gguf", 2e-5},
      {"tiny-llama2-f32", "logits_last4", "tiny-llama2-f32-q8_0.gguf", 5e-2},
      // (Its GGUF is left out: that converter missed the rope keys of transformers 5's config.)
      {"tiny-llama3-bf16", "logits_last2", "", 2e-5},
  };
  for (const Case& c : cases) {
    fs::path dir = wgc::test::fixtures_dir() / c.folder;
    fs::path model = c.file.empty() ? dir : dir / c.file;
    WGC_REQUIRE_FILE(model);
    SCOPED_TRACE(model.string());
    ModelFile m = open_model(model, quiet());
    ForwardRef ref(m);
    Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
    for (int p = 0; g.has(pkey(p, "tokens")); ++p) {
      const std::string pre = pkey(p);
      auto tokens = g.get<int32_t>(pre + "tokens");
      auto want = g.get<float>(pre + c.logits_key);
      auto got = ref.logits(tokens);
      const size_t V = size_t(m.config().vocab_size), k = want.size() / V;
      EXPECT_LT(rel_err(got, (tokens.size() - k) * V, want), c.tol) << pre;
    }
  }
}

// --- tests/data/arch: every architecture, both formats --------------------------------------------------

namespace {

// tol: the Hugging Face folder; gguf_tol: the GGUF (Gemma's converter adds the 1 to its norm weights in
// bf16, rounding them by up to 2^-9: a few 1e-3 on the logits).
// gguf_positions >= 0: compare only the logits of the first positions through the GGUF (Mistral: the
// converter drops the window, so only the positions it does not reach agree).
void check_decoder(const std::string& name, double tol, double gguf_tol, int gguf_positions = -1) {
  fs::path dir = arch_dir(name);
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
  json::Value info = json::parse_file(dir / "golden.json");
  for (fs::path model : {dir, dir / (name + "-bf16.gguf")}) {
    if (!fs::exists(model)) {
      ADD_FAILURE() << model << " missing";
      continue;
    }
    SCOPED_TRACE(model.string());
    ModelFile m = open_model(model, quiet());
    ForwardRef ref(m);
    for (int p = 0; g.has(pkey(p, "tokens")); ++p) {
      const std::string pre = pkey(p);
      auto tokens = g.get<int32_t>(pre + "tokens");
      auto want = g.get<float>(pre + "logits");
      auto got = ref.logits(tokens);
      ASSERT_EQ(got.size(), want.size()) << pre;
      const bool gguf = model.extension() == ".gguf";
      if (gguf && gguf_positions >= 0) {
        const size_t V = got.size() / tokens.size();
        want.resize(size_t(gguf_positions) * V);
        EXPECT_LT(rel_err(got, 0, want), gguf_tol) << pre << " logits of the first " << gguf_positions << " positions";
        continue;
      }
      EXPECT_LT(rel_err(got, 0, want), gguf ? gguf_tol : tol) << pre << " logits at every position";
      const double margin = info["prompts"][size_t(p)]["last_top1_margin"].as_double();
      auto greedy = ref.greedy(tokens, 8);
      auto want_greedy = g.get<int32_t>(pre + "greedy");
      if (margin > (gguf ? 0.1 : 1e-3)) {
        EXPECT_EQ(greedy, want_greedy) << pre << " greedy";
      }
    }
  }
}

void check_encoder(const std::string& name, double tol) {
  fs::path dir = arch_dir(name);
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
  for (fs::path model : {dir, dir / (name + "-bf16.gguf")}) {
    if (!fs::exists(model)) {
      ADD_FAILURE() << model << " missing";
      continue;
    }
    SCOPED_TRACE(model.string());
    ModelFile m = open_model(model, quiet());
    ForwardRef ref(m);
    for (int p = 0; g.has(pkey(p, "tokens")); ++p) {
      const std::string pre = pkey(p);
      auto tokens = g.get<int32_t>(pre + "tokens");
      EXPECT_LT(rel_err(ref.hidden(tokens), 0, g.get<float>(pre + "last_hidden")), tol) << pre << " hidden";
      EXPECT_LT(rel_err(ref.embedding(tokens), 0, g.get<float>(pre + "embedding")), tol) << pre << " embedding";
    }
  }
}

}  // namespace

TEST(ForwardRefArch, Gemma2) { check_decoder("gemma2", 1e-5, 3e-2); }
TEST(ForwardRefArch, Gemma3) { check_decoder("gemma3", 1e-5, 3e-2); }
TEST(ForwardRefArch, Phi3) { check_decoder("phi3", 1e-5, 1e-5); }
TEST(ForwardRefArch, MistralSlidingWindow) { check_decoder("mistral", 1e-5, 1e-5, 5); }
TEST(ForwardRefArch, Llama3Rope) { check_decoder("llama3-rope", 1e-5, 1e-5); }
TEST(ForwardRefArch, Yarn) { check_decoder("llama-yarn", 1e-5, 1e-5); }
TEST(ForwardRefArch, Mixtral) { check_decoder("mixtral", 1e-5, 1e-5); }
TEST(ForwardRefArch, Qwen2Moe) { check_decoder("qwen2moe", 1e-5, 1e-5); }
TEST(ForwardRefArch, Qwen3Moe) { check_decoder("qwen3moe", 1e-5, 1e-5); }
TEST(ForwardRefArch, Olmoe) { check_decoder("olmoe", 1e-5, 1e-5); }
TEST(ForwardRefArch, Bert) { check_encoder("bert", 1e-5); }
TEST(ForwardRefArch, Roberta) { check_encoder("roberta", 1e-5); }
TEST(ForwardRefArch, Qwen3Embedding) { check_encoder("qwen3-embedding", 1e-5); }

// The rope frequencies transformers used (its inv_freq buffers, float32) against rope_inv_freq()
// from the config each fixture's files give.
TEST(ForwardRefArch, RopeFrequenciesAsTransformers) {
  int checked = 0;
  for (std::string name : {"phi3", "llama3-rope", "llama-yarn", "gemma3", "mistral"}) {
    fs::path dir = arch_dir(name);
    if (!fs::exists(dir / "golden.safetensors")) continue;
    Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
    ModelFile m = open_model(dir, quiet());
    const ModelConfig& c = m.config();
    for (const auto& t : g.file.tensors()) {
      // "p{i}.rope.model.rotary_emb.inv_freq" (or a per-layer-type buffer: "..._inv_freq" names it).
      // (transformers also keeps the unscaled frequencies, "original_inv_freq", for dynamic rope
      // types: not what the model rotates by.)
      if (t.name.find(".rope.") == std::string::npos || t.name.find("original_inv_freq") != std::string::npos) continue;
      const int p = t.name[1] - '0';
      auto tokens = g.get<int32_t>(pkey(p, "tokens"));
      const bool sliding_buffer =
          t.name.find("sliding") != std::string::npos || t.name.find("local") != std::string::npos;
      int64_t layer = -1;
      for (int64_t l = 0; l < c.n_layers; ++l)
        if (c.layer_is_sliding(l) == sliding_buffer) {
          layer = l;
          break;
        }
      auto want = g.get<float>(t.name);
      auto got = c.rope_inv_freq(layer, int64_t(tokens.size()));
      ASSERT_EQ(got.size(), want.size()) << name << " " << t.name;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6 * std::abs(want[i]) + 1e-12) << name << " " << t.name << " pair " << i;
      ++checked;
    }
  }
  if (!checked) GTEST_SKIP() << "no fixtures in tests/data/arch (scripts/make_arch_fixtures.py makes them)";
}

// --- the pieces ---------------------------------------------------------------------------------

TEST(ForwardRef, Activations) {
  EXPECT_DOUBLE_EQ(silu(0), 0);
  EXPECT_NEAR(silu(1), 1 / (1 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(gelu(1), 0.8413447460685429, 1e-15);       // Phi(1)
  EXPECT_NEAR(gelu_tanh(1), 0.8411919906082768, 1e-15);  // the tanh form
  EXPECT_DOUBLE_EQ(softcap(3, 0), 3);
  EXPECT_NEAR(softcap(100, 5), 5 * std::tanh(20.0), 1e-15);
}
