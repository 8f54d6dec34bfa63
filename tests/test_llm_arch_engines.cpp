// The dense architectures beyond Llama on every engine, against the float64 reference forward
// (src/llm/reference: checked itself against transformers on tests/data/arch): synthetic models of
// the real shapes shrunk to test size (src/llm/synth), the GPU single-stream engine (SwiftShader
// in CI) and the CPU engine on a prompt (every position's logits, in two prefill chunks) and
// decode steps, and the serving engine (BatchedLlama) on both: its logits equal the reference's,
// and a sequence's bits are the same alone or among others whatever its prompt's chunking.
#include "llm/formats/safetensors.h"
#include "llm/model/llama.h"
#include "llm/model/llama_batched.h"
#include "llm/reference/forward_ref.h"
#include "llm/synth/synth_model.h"
#include "test_serving_util.h"
#include "test_util.h"
#include "util/json.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;
using wgc::test::Blocks;
using wgc::test::ctx;
using wgc::test::feed;
using wgc::test::Seq;

namespace {

// Test-sized dimensions, every feature of the shape kept (a sliding window of 5 keys).
synth::ModelShape shrink(synth::ModelShape s) {
  s.hidden = 64;
  s.layers = s.name == "gemma-3-12b" ? 6 : 2;  // Gemma 3: five sliding layers, then a global one
  s.kv_heads = 2;
  s.heads = 4;
  s.head_dim = s.arch == "gemma3" || s.arch == "gemma2" ? 32 : 16;  // Gemma: heads * head_dim != hidden
  s.ffn = 128;
  s.vocab = 512;
  s.context = 256;
  if (s.sliding_window) s.sliding_window = 5;
  if (s.rope_dim) s.rope_dim = s.head_dim / 2;  // partial rotary (GLM-4: half)
  return s;
}

std::vector<int32_t> ids(int n, int seed, int vocab) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(int32_t((i * 7919 + seed * 104729 + 13) % vocab));
  return v;
}

// Rows [from, from + n) of a [tokens][vocab] reference as floats.
std::vector<float> rows(const std::vector<double>& ref, size_t from, size_t n, size_t vocab) {
  return {ref.begin() + long(from * vocab), ref.begin() + long((from + n) * vocab)};
}

EngineOptions engine(Device device, int max_ctx = 64) {
  EngineOptions eo;
  eo.device = device;
  eo.max_ctx = max_ctx;
  eo.max_batch = 16;  // a 19-token prompt runs in two chunks
  eo.progress = false;
  eo.q8_activations = false;
  return eo;
}

// The model of shape s in weights of `type` against the reference on every engine.
// want_rope: the scaling the file must carry (the test is about it).
void check_engines(const synth::ModelShape& s, const std::string& shape, TensorType type, double tol,
                   RopeScalingType want_rope = RopeScalingType::None) {
  const fs::path path = test::temp_dir("arch_engines") / (shape + "-" + std::string(to_string(type)) + ".gguf");
  GgufWriteOptions wo;
  wo.progress = false;
  synth::SynthModel(s, type, 7).write(path, wo);
  OpenOptions oo;
  oo.progress = false;
  oo.prefault = false;
  const ModelFile f = open_model(path, oo);
  ASSERT_EQ(f.config().sliding_window.value_or(0), s.sliding_window);
  ASSERT_EQ(f.config().rope_scaling.type, want_rope);
  const size_t V = size_t(s.vocab);
  const std::vector<int32_t> all = ids(22, 1, int(s.vocab));
  const std::vector<double> want = reference::ForwardRef(f).logits(all);
  for (Device device : {Device::Gpu, Device::Cpu}) {
    const std::string what = shape + " " + std::string(to_string(type)) + " " + std::string(to_string(device));
    LlamaModel m(ctx(), f, engine(device));
    ASSERT_EQ(m.device(), device);
    // the prompt (two chunks), then three decode steps
    EXPECT_LT(test::rel_error(m.all_logits(std::span(all).first(19)), rows(want, 0, 19, V)), tol) << what << " prompt";
    for (size_t t = 19; t < all.size(); ++t)
      EXPECT_LT(test::rel_error(m.logits(std::span(all).subspan(t, 1)), rows(want, t, 1, V)), tol)
          << what << " decode at " << t;

    // The serving engine: the prompt alone in one step, then decode steps; the same sequence's
    // prompt in chunks of 5 + 9 + 5 among others prefilling and decoding: the same bits.
    BatchedOptions bo;
    bo.max_tokens = 48;
    bo.max_rows = 4;
    bo.block_tokens = 8;
    bo.blocks = 24;
    bo.split_len = 16;
    BatchedLlama bl(m, bo);
    Blocks pool(bo.blocks);
    Seq a{all, 0, {}};
    std::vector<std::vector<float>> alone;
    alone.push_back(feed(bl, pool, {&a}, {19})[0]);
    for (int i = 0; i < 3; ++i) alone.push_back(feed(bl, pool, {&a}, {1})[0]);
    for (size_t i = 0; i < alone.size(); ++i)
      EXPECT_LT(test::rel_error(alone[i], rows(want, 18 + i, 1, V)), tol) << what << " serving, token " << 18 + i;
    pool = Blocks(bo.blocks);
    Seq a2{all, 0, {}}, b{ids(30, 2, int(s.vocab)), 0, {}},
        c{ids(15, 3, int(s.vocab)), 0, {}};  // 12 prefilled, 3 decoded
    feed(bl, pool, {&b, &a2, &c}, {17, 5, 12});
    feed(bl, pool, {&a2, &b, &c}, {9, 1, 1});
    auto r = feed(bl, pool, {&b, &c, &a2}, {1, 0, 5});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(std::memcmp(r[1].data(), alone[0].data(), V * 4), 0) << what << ": serving prompt among others";
    for (int i = 0; i < 3; ++i) {
      auto got = feed(bl, pool, {&c, &a2, &b}, {i == 1 ? 0 : 1, 1, 1});
      EXPECT_EQ(std::memcmp(got[i == 1 ? 0 : 1].data(), alone[size_t(i + 1)].data(), V * 4), 0)
          << what << ": serving decode step " << i << " among others";
    }
  }
}

// --- transformers' fixtures (tests/data/arch, scripts/make_arch_fixtures.py) ---------------------------

struct Golden {
  SafetensorsFile file;
  bool has(const std::string& name) const { return file.find(name) != nullptr; }
  template <class T>
  std::vector<T> get(const std::string& name) const {
    return test::tensor_values<T>(file, name);
  }
};

// The fixture's Hugging Face folder and its GGUF copy on the GPU and CPU engines: logits at every
// position of each prompt (one pass, in chunks of 16) against transformers', and its greedy tokens
// (where the top-1 margin is clear) by decode steps. gguf_positions >= 0: only the first positions
// through the GGUF (Mistral: llama.cpp's converter drops the window). short_ctx > 0 (LongRoPE): a
// prompt of at most short_ctx tokens runs on an engine of that context (the short factors, as
// transformers uses while the sequence is that short), its greedy tokens as far as the context
// holds them; the others on a context of 64 (the long factors, as transformers for longer sequences).
void check_fixture(const std::string& name, double tol, int gguf_positions = -1, double gguf_tol = 0,
                   int short_ctx = 0) {
  const fs::path dir = fs::path(WGC_SOURCE_DIR) / "tests/data/arch" / name;
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  const Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
  const json::Value info = json::parse_file(dir / "golden.json");
  for (const fs::path& model : {dir, dir / (name + "-bf16.gguf")}) {
    OpenOptions oo;
    oo.progress = false;
    oo.prefault = false;
    const ModelFile f = open_model(model, oo);
    const bool gguf = model.extension() == ".gguf";
    for (Device device : {Device::Gpu, Device::Cpu}) {
      LlamaModel long_m(ctx(), f, engine(device));
      std::optional<LlamaModel> short_m;
      if (short_ctx > 0) short_m.emplace(ctx(), f, engine(device, short_ctx));
      const std::string what = model.filename().string() + " " + std::string(to_string(device));
      for (int p = 0; g.has(test::prompt_key(p, "tokens")); ++p) {
        const auto tokens = g.get<int32_t>(test::prompt_key(p, "tokens"));
        auto want = g.get<float>(test::prompt_key(p, "logits"));
        const bool in_short = short_m && int(tokens.size()) <= short_ctx;
        LlamaModel& m = in_short ? *short_m : long_m;
        m.rewind(0);
        auto got = m.all_logits(tokens);
        ASSERT_EQ(got.size(), want.size()) << what;
        if (gguf && gguf_positions >= 0) {
          const size_t V = want.size() / tokens.size();
          want.resize(size_t(gguf_positions) * V);
          got.resize(want.size());
        }
        EXPECT_LT(test::rel_error(got, want), gguf && gguf_tol > 0 ? gguf_tol : tol)
            << what << " prompt " << p << " logits";
        if (gguf && gguf_positions >= 0) continue;
        if (info["prompts"][size_t(p)]["last_top1_margin"].as_double() <= (gguf ? 0.1 : 1e-3)) continue;
        auto want_greedy = g.get<int32_t>(test::prompt_key(p, "greedy"));
        // (transformers' later tokens come from sequences past short_ctx: the long factors)
        if (in_short) want_greedy.resize(std::min(want_greedy.size(), size_t(short_ctx) - tokens.size() + 1));
        std::vector<int32_t> greedy;
        const size_t V = want.size() / tokens.size();
        std::vector<float> last(got.end() - long(V), got.end());
        for (size_t i = 0; i < want_greedy.size(); ++i) {
          const int32_t t = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
          greedy.push_back(t);
          if (i + 1 < want_greedy.size()) last = m.logits(std::span(&t, 1));
        }
        EXPECT_EQ(greedy, want_greedy) << what << " prompt " << p << " greedy";
      }
    }
  }
}

}  // namespace

TEST(ArchFixtureEngines, MistralSlidingWindow) { check_fixture("mistral", 2e-4, 5); }
// (1 + w) norms (the folder; the GGUF has the 1 added, in bf16), sandwich norms, GeGLU, q/k norms,
// sqrt(hidden) embedding scale, query_pre_attn_scalar, five sliding layers (base 1e4) and a global
// one (1e6, linear x8), tied embeddings.
TEST(ArchFixtureEngines, Gemma3) { check_fixture("gemma3", 2e-4, -1, 3e-2); }
// Gemma 2: attention soft-cap 5 and a final one at half the largest raw logit (both bind), window 6
// on even layers, GeGLU, sandwich and (1 + w) norms, head_dim 32 x 4 heads != hidden 64, tied.
TEST(ArchFixtureEngines, Gemma2) { check_fixture("gemma2", 2e-4, -1, 3e-2); }
TEST(ArchFixtureEngines, Llama3Rope) { check_fixture("llama3-rope", 2e-4); }
// Phi-3: fused qkv_proj and gate_up_proj (GGUF: attn_qkv, ffn_up), partial rotary (8 of 16
// features), LongRoPE from an original context of 16 (factor 4: cos and sin times sqrt(1.5)), a
// window of 12 keys. Prompts of 11 and 27 tokens: the short one on a context of 16 (short
// factors), the long one on 64 (long factors), as transformers picks them by the sequence length.
TEST(ArchFixtureEngines, Phi3) { check_fixture("phi3", 2e-4, -1, 3e-2, 16); }
TEST(ArchFixtureEngines, Yarn) { check_fixture("llama-yarn", 2e-4); }
// GLM-4: sandwich norms under its own names, gate|up fused, q/k/v biases, 8 of 16 features rotated
// by interleaved pairs (2i, 2i + 1). None of it new to the engines: the layer plan's steps.
TEST(ArchFixtureEngines, Glm4) { check_fixture("glm4", 2e-4, -1, 3e-2); }

// Mistral 7B v0.1's layers with a window of 5 keys (the prompt is 19): the window cuts keys in
// prefill chunks, decode steps and the serving engine's paged attention.
TEST(ArchEngines, MistralSlidingWindow) {
  check_engines(shrink(synth::find_shape("mistral-7b")), "mistral", TensorType::F32, 1e-4);
}
TEST(ArchEngines, MistralSlidingWindowQ8_0) {
  check_engines(shrink(synth::find_shape("mistral-7b")), "mistral", TensorType::Q8_0, 3e-2);
}

// Phi-3 mini's layers (fused qkv and gate_up) with partial rotary (8 of 16 features) and a window
// of 5: every rope path (f32 and 8-bit fused epilogues, the serving engine's) on reordered q/k rows.
TEST(ArchEngines, Phi3PartialRotary) {
  synth::ModelShape s = shrink(synth::find_shape("phi-3-mini"));
  s.rope_dim = 8;
  s.sliding_window = 5;
  check_engines(s, "phi3", TensorType::F32, 1e-4);
  check_engines(s, "phi3", TensorType::Q8_0, 3e-2);
}

// GLM-4 9B's layers: sandwich norms, fused gate|up, q/k/v biases, half of each head rotated by
// interleaved pairs (reordered q/k rows on every rope path, f32 and 8-bit).
TEST(ArchEngines, Glm4) {
  const synth::ModelShape s = shrink(synth::find_shape("glm-4-9b"));
  check_engines(s, "glm4", TensorType::F32, 1e-4);
  check_engines(s, "glm4", TensorType::Q8_0, 3e-2);
}

// Gemma 3: sandwich norms, GeGLU, q/k norms, sqrt(hidden) embedding scale, query_pre_attn_scalar,
// five sliding layers (window 5, rope base 1e4) and a global one (1e6, linear x8), tied embeddings.
TEST(ArchEngines, Gemma3) {
  const synth::ModelShape s = shrink(synth::find_shape("gemma-3-12b"));
  check_engines(s, "gemma3", TensorType::F32, 1e-4, RopeScalingType::Linear);
  // (the CPU engine's 8-bit activations through six layers of random weights: a little more error)
  check_engines(s, "gemma3", TensorType::Q8_0, 5e-2, RopeScalingType::Linear);
}

// Gemma 2: soft-caps that bind (attention 1, logits 0.5: the random scores and logits are small),
// a window of 5 on even layers, GeGLU, sandwich norms, tied embeddings.
TEST(ArchEngines, Gemma2) {
  synth::ModelShape s = shrink(synth::find_shape("gemma-2-9b"));
  s.attn_softcap = 1;
  s.final_softcap = 0.5;
  check_engines(s, "gemma2", TensorType::F32, 1e-4);
}

// YaRN (factor 4 from an original context of 8: pair 0 kept, the others interpolated; cos and sin
// times 0.1 ln 4 + 1) and linear scaling (x2), on Mistral's layers without the window.
TEST(ArchEngines, YarnAndLinearRopeScaling) {
  synth::ModelShape s = shrink(synth::find_shape("mistral-7b"));
  s.sliding_window = 0;
  s.rope_original_context = 8;
  s.rope_yarn_factor = 4;
  check_engines(s, "yarn", TensorType::F32, 1e-4, RopeScalingType::Yarn);
  s.rope_yarn_factor = 0;
  s.rope_linear_factor = 2;
  check_engines(s, "linear", TensorType::F32, 1e-4, RopeScalingType::Linear);
}
