// The whole model against logits and greedy continuations computed by Hugging Face transformers
// (../shared/fixtures, ../shared/models/wgc-tiny-dict), from every file form of each model, on both
// engines with the same tolerances: the GPU engine (SwiftShader in CI: this keeps the WGSL kernels
// covered) and the CPU engine.
#include "llm/formats/safetensors.h"
#include "llm/model/llama.h"
#include "ops/llm/llm_ops.h"
#include "test_llm_util.h"

#include <cstring>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;

namespace {

struct Golden {
  SafetensorsFile file;
  template <class T>
  std::vector<T> get(const std::string& name) const {
    return test::tensor_values<T>(file, name);
  }
  std::vector<int64_t> shape(const std::string& name) const { return file.find(name)->shape; }
};

struct Expect {
  double tolerance;          // max |diff| / max |ref| over the compared logits
  double min_greedy_margin;  // compare greedy continuations only where the top-1 margin exceeds this
};

// Compares the last-k logits of every prompt and, where the margin allows, the greedy tokens.
EngineOptions small_engine(int max_ctx, int max_batch, Device device) {
  EngineOptions o;
  o.device = device;
  o.max_ctx = max_ctx;
  o.max_batch = max_batch;
  o.progress = false;
  return o;
}

void check_model(const std::filesystem::path& model_path, const std::filesystem::path& golden_dir, Expect e,
                 EngineOptions eo) {
  ModelFile mf = open_model(model_path, {false, false});
  LlamaModel model(ctx(), mf, eo);
  ASSERT_EQ(model.device(), eo.device);
  Golden g{SafetensorsFile::open(golden_dir / "golden.safetensors")};
  int64_t vocab = mf.config().vocab_size;
  for (int p = 0;; ++p) {
    std::string pre = "p" + std::to_string(p) + ".";
    if (!g.file.find(pre + "tokens")) break;
    auto tokens = g.get<int32_t>(pre + "tokens");
    std::string lname = g.file.find(pre + "logits_last4") ? pre + "logits_last4" : pre + "logits_last2";
    auto want = g.get<float>(lname);
    size_t k = size_t(g.shape(lname)[0]);
    model.rewind(0);
    auto all = model.all_logits(tokens);
    std::vector<float> got(all.end() - std::ptrdiff_t(k * size_t(vocab)), all.end());
    EXPECT_LT(test::rel_error(got, want), e.tolerance) << model_path << " prompt " << p;

    // Greedy: the reference generated 16 tokens without stopping at EOS; the first 8 are compared
    // (each step is a full forward pass, slow on SwiftShader), step by step: each token must be the
    // reference's, except at a near-tie here (the reference's token within min_greedy_margin of the
    // best logit), after which the continuations may part.
    auto greedy = g.get<int32_t>(pre + "greedy");
    greedy.resize(std::min<size_t>(greedy.size(), 8));
    std::vector<float> last(want.end() - vocab, want.end());
    std::vector<float> sorted = last;
    std::nth_element(sorted.begin(), sorted.begin() + 1, sorted.end(), std::greater<>());
    if (sorted[0] - sorted[1] < e.min_greedy_margin) continue;
    model.rewind(0);
    EXPECT_EQ(model.greedy(tokens), greedy[0]) << model_path << " prompt " << p;  // the engine's own argmax
    model.rewind(0);
    std::vector<float> l = model.logits(tokens);
    for (size_t i = 0; i < greedy.size(); ++i) {
      const auto best = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
      if (best != greedy[i]) {
        EXPECT_LT(l[size_t(best)] - l[size_t(greedy[i])], e.min_greedy_margin)
            << model_path << " prompt " << p << " step " << i << ": " << best << " instead of " << greedy[i];
        break;
      }
      if (i + 1 < greedy.size()) l = model.logits(std::span(&greedy[i], 1));
    }
  }
}

std::filesystem::path fx(const char* rel) { return test::fixtures_dir() / rel; }

class LlamaFixtures : public testing::TestWithParam<Device> {
 protected:
  EngineOptions engine(int max_ctx = 256, int max_batch = 64) const {
    return small_engine(max_ctx, max_batch, GetParam());
  }
};
class LlamaModelOn : public LlamaFixtures {};

std::string device_name(const testing::TestParamInfo<Device>& i) { return std::string(to_string(i.param)); }

}  // namespace

INSTANTIATE_TEST_SUITE_P(Engines, LlamaFixtures, testing::Values(Device::Gpu, Device::Cpu), device_name);
INSTANTIATE_TEST_SUITE_P(Engines, LlamaModelOn, testing::Values(Device::Gpu, Device::Cpu), device_name);

TEST_P(LlamaFixtures, TinyLlama2SafetensorsF32) {
  WGC_REQUIRE_FILE(fx("tiny-llama2-f32/model.safetensors"));
  check_model(fx("tiny-llama2-f32"), fx("tiny-llama2-f32"), {1e-4, 0.01}, engine());
}

TEST_P(LlamaFixtures, TinyLlama2GgufF32) {
  WGC_REQUIRE_FILE(fx("tiny-llama2-f32/tiny-llama2-f32-f32.gguf"));
  check_model(fx("tiny-llama2-f32/tiny-llama2-f32-f32.gguf"), fx("tiny-llama2-f32"), {1e-4, 0.01}, engine());
}

TEST_P(LlamaFixtures, TinyLlama2GgufQ8_0) {
  WGC_REQUIRE_FILE(fx("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf"));
  check_model(fx("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf"), fx("tiny-llama2-f32"), {5e-2, 0.05}, engine());
}

// CPU adapters pick the one-invocation-per-output prefill kernel; the GPUs' register-tiled one
// (the H200's default) must match the fixtures too.
TEST(LlamaFixturesGpu, RegTilePrefillMatchesToo) {
  WGC_REQUIRE_FILE(fx("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf"));
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/model.safetensors"));
  EngineOptions eo = small_engine(256, 64, Device::Gpu);
  eo.tuning = with_tuning(eo.tuning, "matmul=regtile");
  check_model(fx("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf"), fx("tiny-llama2-f32"), {5e-2, 0.05}, eo);
  check_model(fx("tiny-llama3-bf16"), fx("tiny-llama3-bf16"), {1e-4, 0.01}, eo);
}

// GPUs' one-token F16 steps through matvec.wgsl (matvec_kx 0) with the knobs that change its
// kernels (weights prefetched, the down projection's columns split, SwiGLU's rows per workgroup
// and lanes) must match the fixtures too. CPU adapters run other kernels (no fused steps): skipped.
TEST(LlamaFixturesGpu, F16DecodeKnobsMatchToo) {
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"));
  if (ctx().adapter().is_cpu()) GTEST_SKIP() << "CPU adapters do not run the fused one-token steps";
  ModelConfig truth = config_from_hf_dir(fx("tiny-llama3-bf16"));
  EngineOptions eo = small_engine(256, 64, Device::Gpu);
  eo.rope_theta = truth.rope_theta;
  eo.rope_scaling = truth.rope_scaling;
  // hidden 16, ffn 48: 2 lanes per row make the 48-column down projection splittable
  eo.tuning = with_tuning(
      eo.tuning,
      "matvec_kx=0/matvec_wg=64/matvec_tpr=2/matvec_unroll=1/matvec_pf=1/matvec_split=2/matvec_split_cols=16/"
      "swiglu_wg_rows=16");
  LlmOps probe(ctx());
  probe.tuning = *eo.tuning;
  ASSERT_EQ(probe.matvec_splits(TensorType::F16, 48), 2u);
  check_model(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"), fx("tiny-llama3-bf16"), {1e-2, 0.05}, eo);
  // The attention's combine and the final norm in passes of their own (the plan's defaults fold
  // them into the o and output projections).
  eo.plan_off = {"attention_o_combine", "output_norm_linear"};
  check_model(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"), fx("tiny-llama3-bf16"), {1e-2, 0.05}, eo);
}

namespace {

// The golden prompt's first n tokens and the prompt pass's logits for them (rows of vocab): what
// one-token steps are checked against.
struct PromptRows {
  std::vector<int32_t> tokens;
  size_t vocab = 0;
  std::vector<float> all;
};
PromptRows prompt_rows(const ModelFile& mf, const EngineOptions& eo, size_t n) {
  Golden g{SafetensorsFile::open(fx("tiny-llama3-bf16") / "golden.safetensors")};
  PromptRows r;
  r.tokens = g.get<int32_t>("p0.tokens");
  r.tokens.resize(std::min(r.tokens.size(), n));
  r.vocab = size_t(mf.config().vocab_size);
  LlamaModel ref_model(ctx(), mf, eo);
  r.all = ref_model.all_logits(r.tokens);
  return r;
}
// Feeds the tokens one at a time (after the first) and compares each step's logits with the row.
void expect_steps_match(LlamaModel& model, const PromptRows& r, const std::string& what) {
  model.logits(std::span(r.tokens).first(1));
  for (size_t i = 1; i < r.tokens.size(); ++i) {
    auto got = model.logits(std::span(&r.tokens[i], 1));
    const auto row = r.all.begin() + std::ptrdiff_t(i * r.vocab);
    EXPECT_LT(test::rel_error(got, std::vector<float>(row, row + std::ptrdiff_t(r.vocab))), 1e-3)
        << what << " token " << i;
  }
}

}  // namespace

// GPUs' one-token F16 steps (the recorded step, position read on the GPU) against the prompt
// pass's rows, token by token: the step with the attention's combine and the final norm passes
// of their own, and folded into the o and output projections (the default) through matvec.wgsl
// (matvec_kx 0) at its default and two other shapes, and through the kx schedule at another one.
// (check_model's greedy steps compare argmaxes only.) CPU adapters run other kernels: skipped.
TEST(LlamaFixturesGpu, F16DecodeStepsMatchThePromptPass) {
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"));
  if (ctx().adapter().is_cpu()) GTEST_SKIP() << "CPU adapters do not run the fused one-token steps";
  ModelFile mf = open_model(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"), {false, false});
  EngineOptions eo = small_engine(256, 64, Device::Gpu);
  const PromptRows rows = prompt_rows(mf, eo, 12);
  // (at 4 lanes a row the SwiGLU workgroup takes 64 gate and up rows)
  {
    EngineOptions e2 = eo;
    e2.plan_off = {"attention_o_combine", "output_norm_linear"};
    LlamaModel model(ctx(), mf, e2);
    expect_steps_match(model, rows, "without attention_o_combine, output_norm_linear");
  }
  for (const char* spec :
       {"matvec_kx=0", "matvec_kx=0/matvec_wg=64/matvec_tpr=2/matvec_unroll=1/swiglu_wg_rows=16",
        "matvec_kx=0/matvec_tpr=4/swiglu_wg_rows=64", "matvec_kx=7/kx_wg=64/kx_rows=4/kx_loads=2/kx_groups=3"}) {
    EngineOptions e2 = eo;
    e2.tuning = with_tuning(e2.tuning, spec);
    LlamaModel model(ctx(), mf, e2);
    expect_steps_match(model, rows, std::string("'") + spec + "'");
  }
}

// The CPU engine on every kernel level this processor runs (the default is the best one).
TEST(LlamaFixturesCpu, EveryKernelLevel) {
  WGC_REQUIRE_FILE(fx("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf"));
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/model.safetensors"));
  for (llm::cpu::Isa isa : llm::cpu::supported_isas()) {
    SCOPED_TRACE(std::string(llm::cpu::to_string(isa)));
    EngineOptions eo = small_engine(256, 64, Device::Cpu);
    eo.cpu_isa = isa;
    check_model(fx("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf"), fx("tiny-llama2-f32"), {5e-2, 0.05}, eo);
    check_model(fx("tiny-llama3-bf16"), fx("tiny-llama3-bf16"), {1e-4, 0.01}, eo);
  }
}

TEST_P(LlamaFixtures, TinyLlama3SafetensorsBf16) {
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/model.safetensors"));
  check_model(fx("tiny-llama3-bf16"), fx("tiny-llama3-bf16"), {1e-4, 0.01}, engine());
}

TEST_P(LlamaFixtures, TinyLlama3GgufF16) {
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"));
  // This GGUF was written by a converter that predates transformers 5's `rope_parameters`: it has
  // no rope.freq_base and no rope_freqs tensor, so by its own metadata theta is 10000 without
  // scaling (llama.cpp reads it the same way). The model's config.json states the real values;
  // pass them as overrides, as a llama.cpp user would with --rope-freq-base.
  ModelConfig truth = config_from_hf_dir(fx("tiny-llama3-bf16"));
  EngineOptions eo = engine();
  eo.rope_theta = truth.rope_theta;
  eo.rope_scaling = truth.rope_scaling;
  check_model(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"), fx("tiny-llama3-bf16"), {1e-2, 0.05}, eo);
}

TEST_P(LlamaFixtures, WgcTinyDictQ8_0) {
  auto dir = test::models_dir() / "wgc-tiny-dict";
  WGC_REQUIRE_FILE(dir / "wgc-tiny-dict-q8_0.gguf");
  check_model(dir / "wgc-tiny-dict-q8_0.gguf", dir, {5e-2, 0.05}, engine());
}

// The copy shipped in models/ (llama.rope.freq_base added to the file above, nothing else
// changed) gives the same goldens, and loads without notes.
TEST_P(LlamaFixtures, WgcTinyDictShippedCopy) {
  auto dir = test::models_dir() / "wgc-tiny-dict";
  auto shipped = test::default_model();
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  WGC_REQUIRE_FILE(shipped);
  check_model(shipped, dir, {5e-2, 0.05}, engine());
  ModelFile mf = open_model(shipped, {false, false});
  EXPECT_TRUE(mf.config().notes.empty()) << mf.config().notes.front();
  EXPECT_EQ(mf.config().rope_theta, 10000.0);
}

TEST_P(LlamaModelOn, KvCacheStepsEqualOnePrefill) {
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/model.safetensors"));
  ModelFile mf = open_model(fx("tiny-llama3-bf16"), {false, false});
  LlamaModel model(ctx(), mf, engine(64, 16));
  std::vector<int32_t> toks = {
      9906,  11,   1917, 0,    578, 4062, 14198, 39935, 35308, 927, 279,
      16053, 5679, 13,   1115, 374, 264,  1296,  315,   279,   4332};  // 21 tokens: crosses the 16-token batch
  auto once = model.all_logits(toks);
  model.rewind(0);
  std::vector<float> stepped;
  for (int32_t t : toks) {
    auto l = model.logits(std::span(&t, 1));
    stepped.insert(stepped.end(), l.begin(), l.end());
  }
  EXPECT_LT(test::rel_error(stepped, once), 1e-5);
}

// decode_greedy (the next step reads the argmax on the GPU, steps recorded ahead; with next_token
// also its embedding and position) gives the tokens of one-at-a-time greedy() calls without
// next_token, keeps only the handed-out tokens in the cache when stopped early, stops at the end
// of the context, and goes on after a rewind (the GPU's position then past the host's).
TEST_P(LlamaModelOn, DecodeGreedyEqualsStepByStep) {
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/model.safetensors"));
  ModelFile mf = open_model(fx("tiny-llama3-bf16"), {false, false});
  const std::vector<int32_t> prompt = {9906, 11, 1917, 0, 578};
  const int steps = 12;
  std::vector<int32_t> want;
  {
    EngineOptions eo = engine(64, 16);
    eo.plan_off = {"next_token"};
    LlamaModel model(ctx(), mf, eo);
    int32_t id = model.greedy(prompt);
    for (int i = 0; i < steps; ++i) want.push_back(id = model.greedy(std::span(&id, 1)));
  }
  for (auto [ahead, next] : std::vector<std::pair<int, bool>>{{1, true}, {2, true}, {3, true}, {2, false}}) {
    EngineOptions eo = engine(64, 16);
    eo.decode_ahead = ahead;
    if (!next) eo.plan_off = {"next_token"};
    LlamaModel model(ctx(), mf, eo);
    int32_t first = model.greedy(prompt);
    // Stop after 5 tokens (steps in flight are dropped), then go on from the last one.
    std::vector<int32_t> got;
    auto take = [&](int32_t id) {
      got.push_back(id);
      return got.size() != 5;
    };
    DecodeStats st = model.decode_greedy(first, steps, take);
    EXPECT_EQ(st.tokens, 5);
    EXPECT_GE(st.recorded, 5);
    EXPECT_LE(st.recorded, 5 + ahead - 1);
    EXPECT_EQ(model.n_past(), int(prompt.size()) + 5);
    st = model.decode_greedy(got.back(), steps - 5, [&](int32_t id) {
      got.push_back(id);
      return true;
    });
    EXPECT_EQ(st.tokens, steps - 5);
    EXPECT_EQ(got, want) << "decode_ahead " << ahead << " next_token " << next;
    EXPECT_EQ(model.n_past(), int(prompt.size()) + steps);
    // The context (64) ends the decoding: 64 - n_past more tokens at most.
    int n = 0;
    st = model.decode_greedy(got.back(), 1000, [&](int32_t) { return ++n > 0; });
    EXPECT_EQ(st.tokens, 64 - int(prompt.size()) - steps);
    EXPECT_EQ(model.n_past(), 64);
    EXPECT_THROW(model.decode_greedy(got.back(), 1, [](int32_t) { return true; }), Error);
    // Back to 3 tokens in: the same 3 after them, then one greedy() step.
    model.rewind(int(prompt.size()) + 3);
    std::vector<int32_t> again;
    model.decode_greedy(got[2], 3, [&](int32_t id) {
      again.push_back(id);
      return true;
    });
    EXPECT_EQ(again, std::vector<int32_t>(want.begin() + 3, want.begin() + 6)) << "ahead " << ahead;
    EXPECT_EQ(model.greedy(std::span(&again.back(), 1)), want[6]) << "ahead " << ahead;
  }
}

TEST_P(LlamaModelOn, ErrorsAreClear) {
  WGC_REQUIRE_FILE(fx("tiny-llama2-f32/model.safetensors"));
  ModelFile mf = open_model(fx("tiny-llama2-f32"), {false, false});
  LlamaModel model(ctx(), mf, engine(8, 8));
  std::vector<int32_t> bad = {1, 99999};
  EXPECT_THROW(model.logits(bad), Error);
  std::vector<int32_t> nine(9, 1);
  try {
    model.logits(nine);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context"), std::string::npos) << e.what();
  }
}
