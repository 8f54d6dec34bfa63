// The engines with a KV cache in 16 and 8 bits (EngineOptions::cache_type): the GPU single-stream
// engine's logits at every position of transformers' fixtures (tests/data/arch) drift from the f32
// cache's by a bounded amount (printed: docs/llm_engine.md quotes it) and stay within reach of
// transformers', greedy tokens unchanged; the serving engine (BatchedLlama, paged pool) with a
// packed pool gives a sequence the same bits alone or among others and the single-stream engine's
// logits; the plan keeps the f32-only RoPE epilogues off packed caches; the CPU engine refuses them.
#include "llm/formats/safetensors.h"
#include "llm/model/layer_plan.h"
#include "llm/model/llama.h"
#include "llm/model/llama_batched.h"
#include "test_llm_util.h"
#include "util/json.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;
using wgc::test::ctx;

namespace {

EngineOptions engine(Device device, KvType kv, int max_ctx = 64) {
  EngineOptions eo;
  eo.device = device;
  eo.max_ctx = max_ctx;
  eo.max_batch = 16;  // longer prompts run in chunks
  eo.progress = false;
  eo.cache_type = kv;
  return eo;
}

// Every prompt of fixture `name` (the Hugging Face folder) on the GPU engine with an f32 cache and
// with `kv`: the logits at every prompt position, then at 6 greedy decode steps; returns the
// largest rel_error between the two (per position, over the vocabulary) and checks the greedy
// tokens are the f32 engine's, and the packed engine's prompt logits no more than `tol` further
// from transformers' than the f32 engine's.
double drift(const std::string& name, KvType kv, double tol) {
  const fs::path dir = fs::path(WGC_SOURCE_DIR) / "tests/data/arch" / name;
  const SafetensorsFile g = SafetensorsFile::open(dir / "golden.safetensors");
  OpenOptions oo;
  oo.progress = false;
  oo.prefault = false;
  const ModelFile f = open_model(dir, oo);
  LlamaModel base(ctx(), f, engine(Device::Gpu, KvType::F32));
  LlamaModel packed(ctx(), f, engine(Device::Gpu, kv));
  const std::string what = name + " " + std::string(to_string(kv));
  double worst = 0;
  for (int p = 0; g.find(test::prompt_key(p, "tokens")); ++p) {
    const auto tokens = test::tensor_values<int32_t>(g, test::prompt_key(p, "tokens"));
    if (tokens.size() + 6 > 64) continue;
    base.rewind(0);
    packed.rewind(0);
    const auto lb = base.all_logits(tokens), lp = packed.all_logits(tokens);
    const size_t V = lb.size() / tokens.size();
    for (size_t t = 0; t < tokens.size(); ++t) {
      const std::vector<float> a(lp.begin() + long(t * V), lp.begin() + long((t + 1) * V));
      const std::vector<float> b(lb.begin() + long(t * V), lb.begin() + long((t + 1) * V));
      worst = std::max(worst, test::rel_error(a, b));
    }
    // against transformers: no further than the f32 cache's own error (Phi-3's short prompt runs
    // other LongRoPE factors on this context than transformers: both are far there) plus tol
    const auto want = test::tensor_values<float>(g, test::prompt_key(p, "logits"));
    EXPECT_LT(test::rel_error(lp, want), test::rel_error(lb, want) + tol)
        << what << " prompt " << p << " vs transformers";
    // greedy decode steps on both engines: the same tokens, each step's logits compared
    std::vector<float> last_b(lb.end() - long(V), lb.end()), last_p(lp.end() - long(V), lp.end());
    for (int s = 0; s < 6; ++s) {
      const auto tb = int32_t(std::max_element(last_b.begin(), last_b.end()) - last_b.begin());
      const auto tp = int32_t(std::max_element(last_p.begin(), last_p.end()) - last_p.begin());
      EXPECT_EQ(tp, tb) << what << " prompt " << p << " greedy step " << s;
      if (tp != tb) break;
      last_b = base.logits(std::span(&tb, 1));
      last_p = packed.logits(std::span(&tp, 1));
      worst = std::max(worst, test::rel_error(last_p, last_b));
    }
  }
  std::printf("[ drift    ] %-12s %-5s cache: max logits drift from the f32 cache %.3g (rel_error per position)\n",
              name.c_str(), std::string(to_string(kv)).c_str(), worst);
  return worst;
}

}  // namespace

// f16 on every dense fixture (head_dim 16 and 32, GQA, sliding windows, soft-caps, partial rotary,
// LongRoPE, YaRN); q8_0 where head_dim is a multiple of 32 (Gemma 2). The bounds hold the measured
// drift with room (docs/llm_engine.md has the figures).
TEST(KvCacheEngines, FixtureLogitsDriftFromTheF32Cache) {
  WGC_REQUIRE_FILE(fs::path(WGC_SOURCE_DIR) / "tests/data/arch/llama3-rope/golden.safetensors");
  for (const char* name : {"llama3-rope", "mistral", "gemma2", "gemma3", "phi3", "llama-yarn"})
    EXPECT_LT(drift(name, KvType::F16, 4e-3), 4e-3) << name;
  EXPECT_LT(drift("gemma2", KvType::Q8_0, 6e-2), 6e-2);
}

// The layer plan of a packed cache keeps the RoPE epilogues (which store f32) off: RoPE and the
// append as their own step, in every mode.
TEST(KvCacheEngines, PlanAppendsAPackedCacheWithRopeAppend) {
  for (PlanMode mode : {PlanMode::Decode, PlanMode::Prefill, PlanMode::Serve})
    for (KvType kv : kKvTypes) {
      const LayerPlan p = plan_layer([&] {
        PlanFacts pf;
        pf.mode = mode;
        for (Fact x : {Fact::Gpu, Fact::QkvQ8, Fact::QkvOnePart, Fact::FitsNormQ8, Fact::FitsRopeQ8, Fact::FitsNormF32,
                       Fact::FitsRopeF32, Fact::FitsLinearRope})
          pf.set(x);
        pf.set(Fact::PackedKv, kv != KvType::F32);
        return pf;
      }());
      bool fused = false, append = false;
      for (const Step& s : p.steps) {
        fused = fused || s.op == Op::NormLinearRope || s.op == Op::LinearRope;
        append = append || s.op == Op::RopeAppend;
      }
      const std::string what = std::string(to_string(mode)) + " " + std::string(to_string(kv));
      EXPECT_EQ(append, kv != KvType::F32 || mode == PlanMode::Prefill) << what;
      EXPECT_EQ(fused, !append) << what;
    }
}

// The CPU engine keeps f32: the packed types are refused, naming the option.
TEST(KvCacheEngines, CpuEngineRefusesPackedCaches) {
  const fs::path path = test::default_model();
  WGC_REQUIRE_FILE(path);
  OpenOptions oo;
  oo.progress = false;
  const ModelFile f = open_model(path, oo);
  try {
    LlamaModel m(std::nullopt, f, engine(Device::Cpu, KvType::F16));
    ADD_FAILURE() << "the CPU engine took an f16 cache";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option, "cache_type");
    EXPECT_NE(e.problem.find("CPU engine"), std::string::npos) << e.what();
  }
  LlamaModel m(std::nullopt, f, engine(Device::Cpu, KvType::F32));
  EXPECT_EQ(m.kv_bytes(), uint64_t(m.max_ctx()) * uint64_t(m.config().n_layers) * 2 * uint64_t(m.config().n_kv_heads) *
                              uint64_t(m.config().head_dim) * 4);
}

// The serving engine over a packed pool (the model's cache type), batched kernels: a sequence's
// logits are the same bits alone (a 21-token prompt, 3 decode steps) or among others (its prompt
// in chunks of 5 + 9 + 7 while they prefill and decode), and near the single-stream engine's with
// the same cache type. The engine's memory per token: f16 half of f32's, q8_0 36/128 of it.
TEST(KvCacheEngines, ServingEngineOverAPackedPoolIsBatchInvariant) {
  const fs::path path = test::default_model();
  WGC_REQUIRE_FILE(path);
  OpenOptions oo;
  oo.progress = false;
  const ModelFile f = open_model(path, oo);
  uint64_t f32_bytes = 0;
  for (KvType kv : kKvTypes) {
    EngineOptions eo = engine(Device::Gpu, kv);
    eo.q8_activations = false;  // the single-sequence path the batched kernels are compared with
    eo.max_batch = 64;
    if (!kv_type_fits(kv, int(f.config().head_dim))) continue;
    LlamaModel model(ctx(), f, eo);
    ASSERT_EQ(model.cache_type(), kv);
    if (kv == KvType::F32) f32_bytes = model.kv_bytes();
    const double ratio = double(model.kv_bytes()) / double(f32_bytes);
    EXPECT_DOUBLE_EQ(ratio, kv == KvType::F32 ? 1.0 : kv == KvType::F16 ? 0.5 : 36.0 / 128.0);
    if (kv == KvType::F32) continue;  // test_llm_batched has f32
    const std::string what = std::string(to_string(kv));
    const int vocab = int(model.config().vocab_size);
    BatchedOptions bo;
    bo.max_tokens = 48;
    bo.max_rows = 4;
    bo.block_tokens = 8;
    bo.blocks = 24;
    bo.split_len = 16;
    bo.linear = LinearVersion::Batched;
    BatchedLlama bl(model, bo);
    EXPECT_EQ(bl.kv_bytes(), uint64_t(kv_words(kv, int64_t(bo.blocks) * bo.block_tokens * model.config().n_kv_heads *
                                                       model.config().head_dim)) *
                                 4 * 2 * uint64_t(model.config().n_layers));
    struct Seq {
      std::vector<int32_t> tokens;
      int cached = 0;
      std::vector<int32_t> blocks;
    };
    int next = 0;
    auto feed = [&](std::vector<Seq*> seqs, std::vector<int> n) {
      std::vector<StepSequence> step;
      for (size_t i = 0; i < seqs.size(); ++i) {
        if (n[i] == 0) continue;
        Seq& s = *seqs[i];
        while (int(s.blocks.size()) * bo.block_tokens < s.cached + n[i])
          s.blocks.push_back((next++ * 5 + 3) % bo.blocks);
        StepSequence q;
        q.tokens = std::span<const int32_t>(s.tokens).subspan(size_t(s.cached), size_t(n[i]));
        q.pos0 = s.cached;
        q.blocks = s.blocks;
        q.full = true;
        step.push_back(q);
        s.cached += n[i];
      }
      std::vector<std::vector<float>> out;
      for (auto& r : bl.step(step)) out.push_back(std::move(r.logits));
      return out;
    };
    auto ids = [&](int n, int seed) {
      std::vector<int32_t> v;
      for (int i = 0; i < n; ++i) v.push_back(int32_t((i * 7919 + seed * 104729 + 13) % vocab));
      return v;
    };
    Seq a{ids(24, 1), 0, {}};
    std::vector<std::vector<float>> alone;
    alone.push_back(feed({&a}, {21})[0]);
    for (int i = 0; i < 3; ++i) alone.push_back(feed({&a}, {1})[0]);
    model.rewind(0);
    // (other kernels and the single stream's own rounding into the packed cache: near, not equal)
    EXPECT_LT(test::rel_error(alone[0], model.logits(std::span<const int32_t>(a.tokens).first(21))), 2e-2) << what;

    next = 0;
    Seq a2{a.tokens, 0, {}}, b{ids(30, 2), 0, {}}, c{ids(12, 3), 0, {}};
    feed({&b, &a2, &c}, {17, 5, 12});
    feed({&a2, &b, &c}, {9, 1, 1});
    auto r = feed({&b, &c, &a2}, {1, 0, 7});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(std::memcmp(r[1].data(), alone[0].data(), size_t(vocab) * 4), 0) << what << ": prompt logits";
    for (int i = 0; i < 3; ++i) {
      auto s = feed({&c, &a2, &b}, {i == 1 ? 0 : 1, 1, 1});
      const auto& got = s[i == 1 ? 0 : 1];
      EXPECT_EQ(std::memcmp(got.data(), alone[size_t(i + 1)].data(), size_t(vocab) * 4), 0)
          << what << ": decode step " << i;
    }
  }
}

// The command line: --cache-type on the commands that build an engine; bad names and the CPU engine
// are usage errors; bench-llm reports the cache's bytes per token.
TEST(KvCacheEngines, CacheTypeOnTheCommandLine) {
  const fs::path model = test::default_model();
  WGC_REQUIRE_FILE(model);
  auto r = test::run_cli("generate --prompt x --cache-type q4_0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--cache-type must be f32, f16 or q8_0, not 'q4_0'"), std::string::npos) << r.err;
  r = test::run_cli("generate --prompt x --backend cpu --cache-type f16");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--backend cpu keeps an f32 KV cache"), std::string::npos) << r.err;
  for (const char* cmd : {"generate", "chat", "serve", "bench-llm", "bench-batched"}) {
    r = test::run_cli(std::string(cmd) + " --help");
    EXPECT_NE(r.out.find("--cache-type"), std::string::npos) << cmd;
  }
  r = test::run_cli("bench-llm --backend cpu-vulkan --model " + model.string() +
                    " -p 0 -n 1 -r 1 --no-warmup --bandwidth 0 --cache-type q8_0");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("KV cache: q8_0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per token"), std::string::npos) << r.out;
}
