// Layer split over several GPUs (src/llm/model/layer_split.h): on two WebGPU devices of one
// adapter (SwiftShader opened twice, as `--gpus 0,0`), the fixtures and the built-in model give
// exactly the one-device tokens and logits: single stream (logits, all_logits, greedy decoding,
// top-k) and serving (BatchedLlama's logits over micro-batches, its feed_row decode across the
// devices, and the Scheduler's requests). And the split's arithmetic without a device.
#include "llm/generate/generator.h"
#include "llm/model/layer_split.h"
#include "llm/model/llama_batched.h"
#include "llm/serve/scheduler.h"
#include "test_llm_util.h"

#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;
using wgc::test::ctx;

namespace {

// A second device on the adapter test::ctx() uses: its own device, queue, buffers and pipelines;
// on a machine with two GPUs, WGC_TEST_SPLIT_ADAPTER=1 puts it on the second (the same kind of GPU).
Context& ctx2() {
  static Context c([] {
    ContextOptions o = ctx().options();
    if (const char* a = std::getenv("WGC_TEST_SPLIT_ADAPTER"); a && *a) {
      const std::string_view v(a);
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), o.adapter_index);
      if (ec != std::errc() || end != v.data() + v.size() || o.adapter_index < 0)
        throw Error("WGC_TEST_SPLIT_ADAPTER=" + std::string(v) + ": not an adapter index");
    }
    return o;
  }());
  return c;
}

std::vector<LayerRange> split(int n, std::vector<double> w) { return split_layers(n, w); }

TEST(LayerSplit, RangesFollowTheProportions) {
  EXPECT_EQ(split(28, {1, 1}), (std::vector<LayerRange>{{0, 14}, {14, 14}}));
  EXPECT_EQ(split(28, {3, 1}), (std::vector<LayerRange>{{0, 21}, {21, 7}}));
  EXPECT_EQ(split(32, {1, 1, 1, 1}), (std::vector<LayerRange>{{0, 8}, {8, 8}, {16, 8}, {24, 8}}));
  EXPECT_EQ(split(5, {1, 1}), (std::vector<LayerRange>{{0, 3}, {3, 2}}));  // 2.5 rounds up
  EXPECT_EQ(split(7, {1}), (std::vector<LayerRange>{{0, 7}}));
  // Every device keeps a layer, even at proportion 0 or a tiny share.
  EXPECT_EQ(split(4, {0, 1}), (std::vector<LayerRange>{{0, 1}, {1, 3}}));
  EXPECT_EQ(split(4, {1, 0}), (std::vector<LayerRange>{{0, 3}, {3, 1}}));
  EXPECT_EQ(split(3, {1, 1e-9, 1}), (std::vector<LayerRange>{{0, 1}, {1, 1}, {2, 1}}));
  EXPECT_EQ(split(80, {0.6, 0.4}), (std::vector<LayerRange>{{0, 48}, {48, 32}}));
}

TEST(LayerSplit, BadSplitsAreErrors) {
  EXPECT_THROW(split(2, {1, 1, 1}), Error);  // more devices than layers
  EXPECT_THROW(split(4, {}), Error);
  EXPECT_THROW(split(4, {0, 0}), Error);
  EXPECT_THROW(split(4, {1, -1}), Error);
  EXPECT_THROW(split(4, {1, std::nan("")}), Error);
  EXPECT_THROW(split(4, {1, INFINITY}), Error);
  std::vector<Context> two{ctx(), ctx()};
  EXPECT_THROW(split_weights(two, std::vector<double>{1, 2, 3}), Error);  // one per device
  EXPECT_EQ(split_weights(two, std::vector<double>{3, 1}), (std::vector<double>{3, 1}));
  // No device reports its free memory through WebGPU: by layer count.
  EXPECT_EQ(split_weights(two, {}), (std::vector<double>{1, 1}));
}

EngineOptions engine(bool q8, std::vector<Context> more = {}, std::vector<double> proportions = {}) {
  EngineOptions eo;
  eo.device = Device::Gpu;
  eo.max_ctx = 64;
  eo.max_batch = 8;  // prompts of more tokens run in several steps
  eo.progress = false;
  eo.q8_activations = q8;
  eo.split_gpus = std::move(more);
  eo.tensor_split = std::move(proportions);
  return eo;
}

std::vector<int32_t> prompt(int n, int vocab, int seed) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(int32_t((i * 7919 + seed * 104729 + 13) % vocab));
  return v;
}

void expect_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t diff = 0;
  for (size_t i = 0; i < got.size(); ++i) diff += std::memcmp(&got[i], &want[i], 4) != 0;
  EXPECT_EQ(diff, 0u) << what << ": " << diff << " of " << got.size() << " values differ";
}

// What a model gives for the same calls: the logits of a long prompt (several steps), every
// position's logits, 6 greedy tokens, a top-k, and each one-token step's logits.
struct Outputs {
  std::vector<float> logits, all, step_logits;
  std::vector<int32_t> tokens;
  TopK top;
};
Outputs run(LlamaModel& m, int seed) {
  const int vocab = int(m.config().vocab_size);
  Outputs o;
  const auto p = prompt(13, vocab, seed);
  o.logits = m.logits(p);
  const int32_t first = int32_t(std::max_element(o.logits.begin(), o.logits.end()) - o.logits.begin());
  m.decode_greedy(first, 4, [&](int32_t t) {
    o.tokens.push_back(t);
    return true;
  });
  o.top = m.top_k(std::span(o.tokens).last(1), 5);
  const std::vector<float> one = m.logits(std::span(o.tokens).first(1));
  o.step_logits = one;
  m.rewind(0);
  o.all = m.all_logits(prompt(11, vocab, seed + 1));
  m.rewind(0);
  o.tokens.push_back(m.greedy(prompt(9, vocab, seed + 2)));
  m.rewind(0);
  return o;
}

// A split: the devices after test::ctx() and their shares.
struct SplitCase {
  std::vector<Context> more;
  std::vector<double> proportions;
};

void check_split_equals_one_device(const fs::path& file, bool q8, const std::vector<SplitCase>& cases) {
  ModelFile mf = open_model(file, {false, false});
  Outputs want;
  {
    LlamaModel one(ctx(), mf, engine(q8));
    ASSERT_EQ(one.stages().size(), 1u);
    want = run(one, 3);
  }
  for (const SplitCase& c : cases) {
    LlamaModel split(ctx(), mf, engine(q8, c.more, c.proportions));
    const std::vector<ModelStage> st = split.stages();
    ASSERT_EQ(st.size(), c.more.size() + 1);
    std::string what = file.filename().string() + (q8 ? " q8" : " f32") + ", layers";
    EXPECT_EQ(st.front().layers.first, 0);
    EXPECT_EQ(st.back().layers.end(), int(mf.config().n_layers));
    for (size_t i = 0; i < st.size(); ++i) {
      EXPECT_EQ(st[i].ctx.device(), (i == 0 ? ctx() : c.more[i - 1]).device());
      EXPECT_EQ(st[i].first, i == 0);
      EXPECT_EQ(st[i].last, i + 1 == st.size());
      if (i > 0) {
        EXPECT_EQ(st[i - 1].layers.end(), st[i].layers.first);
      }
      what += i ? '+' : ' ';
      what += std::to_string(st[i].layers.count);
    }
    EXPECT_THROW(split.weights(), Error);  // one device's weights do not stand for the model
    const Outputs got = run(split, 3);
    expect_bits(got.logits, want.logits, what + ": logits");
    expect_bits(got.all, want.all, what + ": all_logits");
    expect_bits(got.step_logits, want.step_logits, what + ": one-token logits");
    EXPECT_EQ(got.tokens, want.tokens) << what;
    EXPECT_EQ(got.top.ids, want.top.ids) << what;
    expect_bits(got.top.logits, want.top.logits, what + ": top-k");
  }
}

fs::path fx(const char* rel) { return test::fixtures_dir() / rel; }

TEST(LayerSplitModel, BuiltInModelOnThreeDevices) {
  WGC_REQUIRE_FILE(test::default_model());
  // 4 layers, the output tied to the embedding (the last device holds it too), as 1+2+1: a middle
  // device neither embeds nor projects. (Two devices are the fixtures' cases below; every device
  // compiles its own pipelines, this test's cost on SwiftShader.)
  static Context third(ctx().options());
  check_split_equals_one_device(test::default_model(), true, {{{ctx2(), third}, {1, 2, 1}}});
}

TEST(LayerSplitModel, TinyLlama2OnTwoDevices) {
  WGC_REQUIRE_FILE(fx("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf"));
  WGC_REQUIRE_FILE(fx("tiny-llama2-f32/model.safetensors"));
  check_split_equals_one_device(fx("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf"), true, {{{ctx2()}, {}}});
  check_split_equals_one_device(fx("tiny-llama2-f32"), false, {{{ctx2()}, {}}});
}

TEST(LayerSplitModel, TinyLlama3OnTwoDevices) {
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/model.safetensors"));
  check_split_equals_one_device(fx("tiny-llama3-bf16"), false, {{{ctx2()}, {}}});
}

// The architectures whose layers need more than Llama's: Gemma 2's embedding scale and final
// soft-cap, Gemma 3's second rope table for its sliding layers, Mixtral's experts (transformers'
// tiny models, tests/data/arch): the same bits on two devices.
TEST(LayerSplitModel, GemmaAndMixtralOnTwoDevices) {
  const fs::path arch = fs::path(WGC_SOURCE_DIR) / "tests/data/arch";
  for (const char* m : {"gemma2/gemma2-bf16.gguf", "gemma3/gemma3-bf16.gguf", "mixtral/mixtral-bf16.gguf"}) {
    WGC_REQUIRE_FILE(arch / m);
    check_split_equals_one_device(arch / m, false, {{{ctx2()}, {}}});
  }
}

// ---- serving -------------------------------------------------------------------------------------

BatchedOptions serve_options(int micro_batches) {
  BatchedOptions o;
  o.max_tokens = 48;
  o.max_rows = 4;
  o.block_tokens = 4;
  o.blocks = 48;
  o.micro_batches = micro_batches;
  return o;
}

// Three sequences: prompts in two chunks (the third only prefilled in the first step), then 5
// decode steps whose tokens come from the step before on the GPU (feed_row, top_k 1). Returns
// every row's full logits, top ids and log-sum-exp, in order.
struct Served {
  std::vector<std::vector<float>> logits;
  std::vector<int32_t> ids;
  std::vector<float> lse;
};
Served serve(LlamaModel& m, int micro_batches) {
  BatchedLlama bl(m, serve_options(micro_batches));
  const int vocab = int(m.config().vocab_size);
  std::vector<std::vector<int32_t>> toks = {prompt(9, vocab, 1), prompt(14, vocab, 2), prompt(5, vocab, 3)};
  std::vector<std::vector<int32_t>> blocks(3);
  std::vector<int> cached(3, 0);
  for (int s = 0; s < 3; ++s)
    for (int b = 0; b < 8; ++b) blocks[size_t(s)].push_back(s * 8 + (b * 5 + 3) % 8);
  Served out;
  auto keep = [&](std::vector<StepLogits> rows) {
    for (auto& r : rows) {
      out.logits.push_back(std::move(r.logits));
      out.ids.insert(out.ids.end(), r.top_ids.begin(), r.top_ids.end());
      out.lse.push_back(r.logsumexp);
    }
  };
  // Prompt chunks: up to 6 tokens, then the rest (sequence 2 wants no logits in the first step).
  for (int chunk = 0; chunk < 2; ++chunk) {
    std::vector<StepSequence> step;
    for (int s = 0; s < 3; ++s) {
      const int len = int(toks[size_t(s)].size());
      const int n = chunk == 0 ? std::min(6, len - 1) : len - cached[size_t(s)];
      StepSequence q;
      q.tokens = std::span(toks[size_t(s)]).subspan(size_t(cached[size_t(s)]), size_t(n));
      q.pos0 = cached[size_t(s)];
      q.blocks = blocks[size_t(s)];
      q.full = !(chunk == 0 && s == 2);
      q.top_k = q.full ? 1 : 0;
      q.logsumexp = q.full;
      step.push_back(q);
      cached[size_t(s)] += n;
    }
    keep(bl.step(step));
  }
  // Decode: each sequence's token is the argmax of its row of the step before, copied on the GPU
  // (or through the host across devices), recorded before the previous step is collected.
  const int32_t placeholder = 0;
  BatchedLlama::Pending prev;
  for (int t = 0; t < 5; ++t) {
    std::vector<StepSequence> step;
    for (int s = 0; s < 3; ++s) {
      StepSequence q;
      q.tokens = std::span(&placeholder, 1);
      q.pos0 = cached[size_t(s)]++;
      q.blocks = blocks[size_t(s)];
      q.feed_row = s;
      q.top_k = 2;
      q.full = t % 2 == 0;
      q.logsumexp = true;
      step.push_back(q);
    }
    BatchedLlama::Pending p = bl.submit(step);
    if (prev) keep(bl.collect(prev));
    prev = std::move(p);
  }
  keep(bl.collect(prev));
  return out;
}

// The serving engine on the split model gives the one-device rows, whatever the micro-batches
// (`micro_batches`: those to try on two devices; one device also runs the first one cut in two).
void check_serving(const fs::path& file, std::vector<int> micro_batches) {
  ModelFile mf = open_model(file, {false, false});
  LlamaModel one(ctx(), mf, engine(false));
  const Served want = serve(one, 0);
  if (micro_batches.size() > 1) {
    const Served want_mb = serve(one, 2);  // micro-batches on one device: the same logits
    ASSERT_EQ(want_mb.logits.size(), want.logits.size());
    for (size_t i = 0; i < want.logits.size(); ++i)
      expect_bits(want_mb.logits[i], want.logits[i], "one device, 2 micro-batches");
    EXPECT_EQ(want_mb.ids, want.ids);
  }
  LlamaModel two(ctx(), mf, engine(false, {ctx2()}));
  for (int mb : micro_batches) {
    const Served got = serve(two, mb);
    const std::string what = file.filename().string() + " serving on 2 devices, micro_batches " + std::to_string(mb);
    ASSERT_EQ(got.logits.size(), want.logits.size()) << what;
    for (size_t i = 0; i < want.logits.size(); ++i)
      expect_bits(got.logits[i], want.logits[i], what + " row " + std::to_string(i));
    EXPECT_EQ(got.ids, want.ids) << what;
    expect_bits(got.lse, want.lse, what + " logsumexp");
  }
}

TEST(LayerSplitServing, BuiltInModelOnTwoDevices) {
  WGC_REQUIRE_FILE(test::default_model());
  check_serving(test::default_model(), {0, 3});  // one per device; three (more than devices)
}

TEST(LayerSplitServing, TinyLlama3OnTwoDevices) {
  WGC_REQUIRE_FILE(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"));
  check_serving(fx("tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf"), {0});
}

// The Scheduler (what `wgc serve` runs) on the split model: the same tokens for concurrent
// requests, greedy and sampled, as on one device.
std::vector<std::vector<int32_t>> schedule(LlamaModel& m, const Tokenizer& tok) {
  SchedulerOptions so;
  so.parallel = 3;
  so.prefill_chunk = 5;  // prompts in several chunks
  Scheduler s(m, tok, so);
  const char* prompts[] = {"The moon", "Love is a word that means", "The sea"};
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::vector<int32_t>> ids(3);
  for (int i = 0; i < 3; ++i) {
    Request r;
    r.prompt = tok.encode(prompts[i]);
    r.max_tokens = 6;
    r.ignore_eos = true;
    r.sampling.temperature = i == 2 ? 0.8f : 0.f;  // the third samples (seeded)
    r.sampling.seed = 7;
    s.submit(
        std::move(r),
        [&, i](const TokenEvent& e) {
          std::lock_guard lk(mu);
          ids[size_t(i)].push_back(e.id);
          return true;
        },
        [&](const RequestResult& res) {
          EXPECT_TRUE(res.error.empty()) << res.error;
          std::lock_guard lk(mu);
          ++done;
          cv.notify_all();
        });
  }
  std::unique_lock lk(mu);
  cv.wait(lk, [&] { return done == 3; });
  return ids;
}

TEST(LayerSplitServing, SchedulerOnTwoDevices) {
  WGC_REQUIRE_FILE(test::default_model());
  ModelFile mf = open_model(test::default_model(), {false, false});
  const auto tok = find_tokenizer(mf);
  ASSERT_TRUE(tok);
  LlamaModel one(ctx(), mf, engine(false));
  const auto want = schedule(one, *tok);
  LlamaModel two(ctx(), mf, engine(false, {ctx2()}));
  EXPECT_EQ(schedule(two, *tok), want);
  for (const auto& v : want) EXPECT_EQ(v.size(), 6u);
}

// ---- the command line ---------------------------------------------------------------------------

TEST(LayerSplitCli, GenerateOnTwoDevicesGivesTheOneDeviceText) {
  WGC_REQUIRE_FILE(test::default_model());
  const std::string args = "generate --backend cpu-vulkan --prompt 'The moon' -n 4 --temp 0 -q";
  const auto one = test::run_cli(args);
  ASSERT_EQ(one.rc, 0) << one.err;
  const auto two = test::run_cli(args + " --gpus 0,0 --tensor-split 1,3");
  ASSERT_EQ(two.rc, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  EXPECT_FALSE(one.out.empty());
}

TEST(LayerSplitCli, BadSplitFlagsAreUsageErrors) {
  auto r = test::run_cli("generate --prompt x --tensor-split 1,1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--tensor-split needs --gpus"), std::string::npos) << r.err;
  r = test::run_cli("generate --prompt x --gpus 0,0 --tensor-split 1,1,1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("3 proportions for 2 GPUs"), std::string::npos) << r.err;
  r = test::run_cli("serve --gpu 0 --gpus 0,0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--gpu and --gpus"), std::string::npos) << r.err;
  r = test::run_cli("generate --prompt x --backend cpu --gpus 0,0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--backend cpu"), std::string::npos) << r.err;
  r = test::run_cli("generate --help");
  EXPECT_NE(r.out.find("--gpus"), std::string::npos);
  EXPECT_NE(r.out.find("--tensor-split"), std::string::npos);
}

}  // namespace
