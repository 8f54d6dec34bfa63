// `wgc synth-model`'s shapes of issue 34's architectures: the real sizes (parameter counts as Hugging
// Face reports them), and each read back through GGUF -> ModelConfig -> open_model's tensor check
// (the name table) -> the float64 reference forward, on copies shrunk to test size.
#include "llm/formats/gguf.h"
#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"
#include "llm/formats/tensor_names.h"
#include "llm/reference/forward_ref.h"
#include "llm/synth/synth_model.h"
#include "test_util.h"
#include "util/json.h"

#include <cmath>

using namespace wgc::llm;
using namespace wgc::llm::synth;
namespace fs = std::filesystem;

TEST(SynthArch, RealShapesHaveTheRealSizes) {
  struct Want {
    const char* name;
    int64_t params;  // Hugging Face's count (bge-base: without BertModel's pooler, which GGUF drops)
  };
  for (Want want : {Want{"gemma-2-9b", 9241705984}, Want{"phi-3-mini", 3821079552}, Want{"phi-4", 14659507200},
                    Want{"mistral-7b", 7241732096}, Want{"mixtral-8x7b", 46702792704},
                    Want{"qwen3-30b-a3b", 30532122624}, Want{"bge-base", 109482240 - 590592}}) {
    SynthModel m(find_shape(want.name), TensorType::Q4_0);
    EXPECT_EQ(m.params(), want.params) << want.name;
  }
  // Gemma 3 12B's language model (its vision tower aside): the formula of its shapes.
  const int64_t g3_layer = 3840 * 4096 * 2 + 3840 * 2048 * 2 + 3 * 3840 * 15360 + 4 * 3840 + 2 * 256;
  EXPECT_EQ(SynthModel(find_shape("gemma-3-12b"), TensorType::Q4_0).params(), 262208 * 3840 + 48 * g3_layer + 3840);
}

namespace {

// The shape with test-sized dimensions (every feature kept).
ModelShape shrink(ModelShape s) {
  s.hidden = 64;
  s.layers = s.name == "gemma-3-12b" ? 6 : 2;
  s.kv_heads = s.kv_heads == s.heads ? 4 : 2;
  s.heads = 4;
  s.head_dim = s.arch == "gemma2" ? 32 : 16;
  s.ffn = 128;
  s.vocab = 512;
  s.context = 256;
  if (s.sliding_window) s.sliding_window = 5;
  if (s.rope_dim) s.rope_dim = s.head_dim / 2;  // partial rotary (GLM-4: half)
  if (s.n_experts) {
    s.n_experts = 4;
    s.n_experts_used = 2;
    s.expert_ffn = 32;
    if (s.arch == "llama") s.ffn = 32;  // Mixtral: feed_forward_length is the experts' size
  }
  if (s.type_vocab) s.type_vocab = 2;
  s.rope_original_context = 64;
  return s;
}

}  // namespace

TEST(SynthArch, ReadBackThroughModelConfigAndTheReference) {
  const fs::path dir = wgc::test::temp_dir("synth_arch");
  struct Want {
    const char* shape;
    Architecture arch;
  };
  for (Want want : {Want{"gemma-2-9b", Architecture::Gemma2}, Want{"gemma-3-12b", Architecture::Gemma3},
                    Want{"phi-3-mini", Architecture::Phi3}, Want{"mistral-7b", Architecture::Llama},
                    Want{"mixtral-8x7b", Architecture::Mixtral}, Want{"qwen3-30b-a3b", Architecture::Qwen3Moe},
                    Want{"glm-4-9b", Architecture::Glm4}, Want{"bge-base", Architecture::Bert}}) {
    SCOPED_TRACE(want.shape);
    const ModelShape& real = find_shape(want.shape);
    ModelShape s = shrink(real);
    fs::path file = dir / (std::string(want.shape) + ".gguf");
    SynthModel m(s, TensorType::Q8_0, 7);
    GgufWriteOptions wo;
    wo.progress = false;
    m.write(file, wo);
    OpenOptions oo;
    oo.progress = false;
    oo.any_architecture = true;
    ModelFile f = open_model(file, oo);  // every tensor the config implies, named by the table
    const ModelConfig& c = f.config();
    EXPECT_EQ(c.architecture, want.arch);
    EXPECT_EQ(c.hidden_size, 64);
    EXPECT_EQ(c.n_layers, s.layers);
    EXPECT_EQ(c.head_dim, s.head_dim);
    EXPECT_EQ(c.n_experts, s.n_experts);
    EXPECT_EQ(c.n_experts_used, s.n_experts_used);
    if (s.n_experts) {
      EXPECT_EQ(c.expert_ffn_size, 32);
    }
    EXPECT_EQ(c.qk_norm, s.qk_norm);
    EXPECT_EQ(c.norm_placement,
              s.sandwich_norms ? NormPlacement::Sandwich : (s.encoder ? NormPlacement::Post : NormPlacement::Pre));
    EXPECT_EQ(c.fused_qkv, s.fused_qkv);
    EXPECT_EQ(c.fused_gate_up, s.fused_gate_up);
    EXPECT_EQ(c.attn_logit_softcap, real.attn_softcap);
    EXPECT_EQ(c.final_logit_softcap, real.final_softcap);
    if (real.sliding_window) {
      EXPECT_EQ(c.sliding_window, 5);
    }
    if (want.arch == Architecture::Gemma3) {
      EXPECT_EQ(c.sliding_layers, (std::vector<bool>{true, true, true, true, true, false}));
      EXPECT_EQ(c.layer_rope_theta(0), 10000);
      EXPECT_EQ(c.layer_rope_theta(5), 1e6);
      EXPECT_EQ(c.layer_rope_scaling(5).type, RopeScalingType::Linear);
    }
    if (want.arch == Architecture::Bert) {
      EXPECT_TRUE(c.embedding_model);
      EXPECT_EQ(c.pooling, Pooling::Cls);
      EXPECT_FALSE(c.causal);
      EXPECT_EQ(c.type_vocab_size, 2);
    }
    EXPECT_EQ(engine_runs(c), want.arch == Architecture::Llama || want.arch == Architecture::Gemma2 ||
                                  want.arch == Architecture::Gemma3 || want.arch == Architecture::Mixtral ||
                                  want.arch == Architecture::Qwen3Moe || want.arch == Architecture::Phi3 ||
                                  want.arch == Architecture::Glm4);
    // Experts come out of the merged tensors one by one, as views.
    if (s.n_experts) {
      ModelTensor e3 = role_tensor(f, TensorRole::ExpertsDown, 1, 3);
      EXPECT_EQ(e3.shape, (std::vector<int64_t>{64, 32}));
      const ModelTensor& all = *f.find(tensor_names(c.architecture, TensorRole::ExpertsDown, 1).hf);
      EXPECT_EQ(e3.data.data(), all.data.data() + 3 * all.data.size() / 4);
    }
    // layer(i) finds each layer's tensors through the same table (GGUF names mapped to canonical
    // ones): what the config needs, and nothing else (experts are sliced per expert instead).
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const LayerTensors lt = f.layer(l);
      size_t found = 0, needed = 0;
      for (const ExpectedTensor& e : expected_layer_tensors(c, l)) {
        if (is_expert_role(e.role)) continue;
        ++needed;
        const ModelTensor* t = lt[e.role];
        ASSERT_NE(t, nullptr) << to_string(e.role);
        EXPECT_EQ(t->file_name, tensor_names(c.architecture, e.role, l).gguf);
        EXPECT_EQ(t->shape, e.shape) << t->name;
      }
      for (const ModelTensor* t : lt.t) found += t != nullptr;
      EXPECT_EQ(found, needed) << "layer " << l;
    }
    EXPECT_EQ(f.layer(0)[TensorRole::FfnGateUp] != nullptr, s.fused_gate_up);
    EXPECT_THROW(f.layer(c.n_layers), wgc::Error);
    // The reference runs every architecture from the file alone.
    reference::ForwardRef ref(f);
    std::vector<int32_t> tokens = {1, 7, 300, 42, 9, 8, 77, 500};
    if (c.embedding_model) {
      auto e = ref.embedding(tokens);
      double n = 0;
      for (double x : e) n += x * x;
      EXPECT_NEAR(n, 1.0, 1e-12);
    } else {
      auto lg = ref.logits(tokens);
      ASSERT_EQ(lg.size(), tokens.size() * 512);
      for (double x : lg) ASSERT_TRUE(std::isfinite(x));
      if (c.final_logit_softcap > 0) {
        for (double x : lg) ASSERT_LE(std::abs(x), c.final_logit_softcap);
      }
    }
  }
  // Unopened by default: the engines do not run these yet.
  OpenOptions strict;
  strict.progress = false;
  std::string msg;
  try {
    open_model(dir / "bge-base.gguf", strict);
  } catch (const wgc::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("models are read (wgc inspect) but not run yet"), std::string::npos) << msg;
}

// The window as the reference applies it: the same weights with and without a window of 5 give the
// same logits at positions 0..4 and different ones after.
TEST(SynthArch, SlidingWindowOnlyCutsFarKeys) {
  const fs::path dir = wgc::test::temp_dir("synth_window");
  ModelShape s = shrink(find_shape("mistral-7b"));
  std::vector<std::vector<double>> logits;
  for (int64_t window : {5, 0}) {
    s.sliding_window = window;
    fs::path file = dir / ("w" + std::to_string(window) + ".gguf");
    GgufWriteOptions wo;
    wo.progress = false;
    SynthModel(s, TensorType::F32, 3).write(file, wo);
    OpenOptions oo;
    oo.progress = false;
    ModelFile f = open_model(file, oo);
    EXPECT_EQ(f.config().sliding_window.value_or(0), window);
    logits.push_back(reference::ForwardRef(f).logits(std::vector<int32_t>{3, 1, 4, 1, 5, 9, 2, 6, 5}));
  }
  const size_t V = 512;
  for (size_t t = 0; t < 9; ++t) {
    double diff = 0;
    for (size_t i = 0; i < V; ++i) diff = std::max(diff, std::abs(logits[0][t * V + i] - logits[1][t * V + i]));
    if (t < 5)
      EXPECT_EQ(diff, 0) << "position " << t;
    else
      EXPECT_GT(diff, 1e-9) << "position " << t;
  }
}

// `wgc inspect` says what the layers do: experts, windows, soft-caps.
TEST(SynthArch, InspectShowsTheArchitecture) {
  WGC_REQUIRE_FILE(fs::path(WGC_CLI_PATH));
  const fs::path dir = wgc::test::temp_dir("synth_inspect");
  GgufWriteOptions wo;
  wo.progress = false;
  fs::path moe = dir / "moe.gguf", gemma = dir / "gemma.gguf";
  SynthModel(shrink(find_shape("qwen3-30b-a3b")), TensorType::Q8_0, 1).write(moe, wo);
  SynthModel(shrink(find_shape("gemma-2-9b")), TensorType::Q8_0, 1).write(gemma, wo);
  auto r = wgc::test::run_cli("inspect " + wgc::test::quote(moe.string()));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("experts        4, 2 per token (weights renormalised), ffn 32"), std::string::npos) << r.out;
  r = wgc::test::run_cli("inspect --json " + wgc::test::quote(gemma.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto v = wgc::json::parse(r.out, "inspect --json");
  EXPECT_EQ(v["config"]["architecture"].as_string(), "gemma2");
  EXPECT_EQ(v["config"]["norm_placement"].as_string(), "sandwich");
  EXPECT_EQ(v["config"]["attn_logit_softcap"].as_double(), 50);
  EXPECT_EQ(v["config"]["sliding_layers"].size(), 1u);  // layer 0 of 2
  EXPECT_EQ(v["config"]["activation"].as_string(), "gelu_tanh");
}
