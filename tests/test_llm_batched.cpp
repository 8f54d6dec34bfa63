// The serving forward (BatchedLlama) on the built-in default model and a GQA fixture: its logits
// equal the single-sequence LlamaModel's, and a sequence's logits are bit-identical alone or among
// others, whatever its prompt's chunking: on the GPU engine with the naive (CPU adapters' default)
// and the batched (GPUs' default) linear kernels, and on the CPU engine.
#include "llm/model/llama_batched.h"
#include "ops/llm/llm_ops.h"
#include "test_llm_util.h"
#include "test_serving_util.h"

#include <cstring>
#include <numeric>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;
using wgc::test::Blocks;
using wgc::test::ctx;
using wgc::test::feed;
using wgc::test::Seq;

namespace {

using wgc::test::default_model;

EngineOptions engine(int max_ctx, Device device) {
  EngineOptions eo;
  eo.device = device;
  eo.max_ctx = max_ctx;
  eo.max_batch = 64;
  eo.progress = false;
  eo.q8_activations = false;  // the single-sequence path the batched kernels are compared with: f32 activations
  return eo;
}

std::vector<int32_t> ids(int n, int seed, int vocab) {
  std::vector<int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(int32_t((i * 7919 + seed * 104729 + 13) % vocab));
  return v;
}

// The default model for the single-sequence comparisons, once per test binary and engine.
LlamaModel& shared_model(Device device) {
  static ModelFile* mf = new ModelFile(open_model(default_model(), {false, false}));
  static LlamaModel* gpu = new LlamaModel(ctx(), *mf, engine(64, Device::Gpu));
  static LlamaModel* cpu = new LlamaModel(ctx(), *mf, engine(64, Device::Cpu));
  return device == Device::Cpu ? *cpu : *gpu;
}

// The default model with a small pool: 2 rows, 16 tokens per step, 8 blocks of 4.
struct Small {
  explicit Small(Device device) : model(shared_model(device)) {}
  LlamaModel& model;
  BatchedOptions bo = [] {
    BatchedOptions o;
    o.max_tokens = 16;
    o.max_rows = 2;
    o.block_tokens = 4;
    o.blocks = 8;
    return o;
  }();
  BatchedLlama bl{model, bo};
};

void check_model(Device device, LinearVersion lin, double tolerance = 1e-4,
                 const std::vector<std::string>& plan_off = {}) {
  const fs::path path = default_model();
  LlamaModel& model = shared_model(device);
  const int vocab = int(model.config().vocab_size);
  BatchedOptions bo;
  bo.max_tokens = 48;
  bo.max_rows = 4;
  bo.block_tokens = 8;
  bo.blocks = 24;
  bo.split_len = 16;  // several splits at these lengths
  bo.linear = lin;
  bo.plan_off = plan_off;
  BatchedLlama bl(model, bo);
  const std::string what = path.filename().string() + (device == Device::Cpu             ? " CPU engine"
                                                       : lin == LinearVersion::Batched   ? " batched"
                                                       : lin == LinearVersion::BatchedQ8 ? " batched-q8"
                                                                                         : " naive");

  // A alone: a 21-token prompt in one chunk, then 3 tokens one at a time.
  Seq a{ids(24, 1, vocab), 0, {}};
  Blocks p1(bo.blocks);
  std::vector<std::vector<float>> alone;
  alone.push_back(feed(bl, p1, {&a}, {21})[0]);
  for (int i = 0; i < 3; ++i) alone.push_back(feed(bl, p1, {&a}, {1})[0]);

  // The single-sequence engine agrees (to rounding: it runs other kernels).
  model.rewind(0);
  EXPECT_LT(test::rel_error(alone[0], model.logits(std::span<const int32_t>(a.tokens).first(21))), tolerance) << what;
  model.logits(std::span<const int32_t>(a.tokens).subspan(21, 2));
  EXPECT_LT(test::rel_error(alone[3], model.logits(std::span<const int32_t>(a.tokens).subspan(23, 1))), tolerance)
      << what;

  // A again among B and C, its prompt in chunks of 5 + 9 + 7 while the others prefill and decode.
  Seq a2{a.tokens, 0, {}}, b{ids(30, 2, vocab), 0, {}}, c{ids(15, 3, vocab), 0, {}};  // 12 prefilled, 3 decoded
  Blocks p2(bo.blocks);
  feed(bl, p2, {&b, &a2, &c}, {17, 5, 12});
  feed(bl, p2, {&a2, &b, &c}, {9, 1, 1});
  auto r = feed(bl, p2, {&b, &c, &a2}, {1, 0, 7});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(std::memcmp(r[1].data(), alone[0].data(), size_t(vocab) * 4), 0) << what << ": prompt logits";
  for (int i = 0; i < 3; ++i) {
    auto s = feed(bl, p2, {&c, &a2, &b}, {i == 1 ? 0 : 1, 1, 1});
    const auto& got = s[i == 1 ? 0 : 1];
    EXPECT_EQ(std::memcmp(got.data(), alone[size_t(i + 1)].data(), size_t(vocab) * 4), 0)
        << what << ": decode step " << i;
  }
}

}  // namespace

TEST(BatchedLlama, NaiveKernelsInvariantAndEqualToTheSingleSequencePath) {
  WGC_REQUIRE_FILE(default_model());
  check_model(Device::Gpu, LinearVersion::Naive);
}

TEST(BatchedLlama, BatchedKernelsInvariantAndEqualToTheSingleSequencePath) {
  WGC_REQUIRE_FILE(default_model());
  check_model(Device::Gpu, LinearVersion::Batched);
}

// 8-bit activations (the default model is Q8_0): invariant too, within quantization error of the
// f32 path.
TEST(BatchedLlama, BatchedQ8KernelsInvariant) {
  WGC_REQUIRE_FILE(default_model());
  check_model(Device::Gpu, LinearVersion::BatchedQ8, 3e-2);
}

// The batched-q8 variants away from the defaults, in one run: activations quantized before each
// linear instead of in RMSNorm / SwiGLU (the plan without serve_q8), the matvec-shaped kernel for
// steps of up to 2 tokens with 4 invocations per lane, 4 tokens per workgroup, rows quantized by
// several workgroups: as invariant.
TEST(BatchedLlama, BatchedQ8VariantsInvariant) {
  WGC_REQUIRE_FILE(default_model());
  LlamaModel& model = shared_model(Device::Gpu);
  const LlmTuning saved = model.ops().tuning;
  LlmTuning t = saved;
  apply_tuning(t, "batched_mv_n=2/batched_mv_sl=4/batched_tt=4/quant_groups=64");
  model.set_tuning(t);
  check_model(Device::Gpu, LinearVersion::BatchedQ8, 3e-2, {"serve_q8"});
  model.set_tuning(saved);
}

// The CPU engine's step: the same bits alone or among others, and the single-sequence CPU engine's
// logits (the same kernels: equal to rounding of the chunking only).
TEST(BatchedLlama, CpuEngineInvariantAndEqualToTheSingleSequencePath) {
  WGC_REQUIRE_FILE(default_model());
  check_model(Device::Cpu, LinearVersion::Auto, 1e-5);
  BatchedOptions gpu_only = Small(Device::Cpu).bo;
  gpu_only.linear = LinearVersion::Naive;  // a GPU engine option
  EXPECT_THROW(BatchedLlama(shared_model(Device::Cpu), gpu_only), Error);
}

class BatchedOn : public testing::TestWithParam<Device> {};
INSTANTIATE_TEST_SUITE_P(Engines, BatchedOn, testing::Values(Device::Gpu, Device::Cpu),
                         [](const testing::TestParamInfo<Device>& i) { return std::string(to_string(i.param)); });

// A step recorded before the previous one's tokens are back (feed_row: the argmax copied on the
// GPU) gives what feeding the read-back token gives.
TEST_P(BatchedOn, FeedRowPipelinesSteps) {
  WGC_REQUIRE_FILE(default_model());
  Small m(GetParam());
  auto& bl = m.bl;
  std::vector<int32_t> a = {0, 5, 77, 301, 12}, b = {0, 9, 8};
  std::vector<int32_t> ta = {0, 1}, tb = {2, 3};
  auto prefill = [&](std::vector<StepSequence>& st) {
    st.resize(2);
    st[0].tokens = a;
    st[0].blocks = ta;
    st[0].top_k = 1;
    st[1].tokens = b;
    st[1].blocks = tb;
    st[1].top_k = 1;
  };
  std::vector<StepSequence> s1;
  prefill(s1);
  auto r1 = bl.step(s1);
  std::vector<int32_t> na = {r1[0].top_ids[0]}, nb = {r1[1].top_ids[0]};
  std::vector<StepSequence> s2(2);
  s2[0].tokens = na;
  s2[0].pos0 = 5;
  s2[0].blocks = ta;
  s2[0].full = true;
  s2[1].tokens = nb;
  s2[1].pos0 = 3;
  s2[1].blocks = tb;
  s2[1].full = true;
  auto r2 = bl.step(s2);

  std::vector<StepSequence> p1;
  prefill(p1);
  auto h1 = bl.submit(p1);
  std::vector<int32_t> placeholder = {0};
  auto p2 = s2;
  p2[0].tokens = placeholder;
  p2[0].feed_row = 0;
  p2[1].tokens = placeholder;
  p2[1].feed_row = 1;
  auto h2 = bl.submit(p2);
  auto c1 = bl.collect(h1);
  auto c2 = bl.collect(h2);
  EXPECT_EQ(c1[0].top_ids, r1[0].top_ids);
  EXPECT_EQ(c1[1].top_ids, r1[1].top_ids);
  EXPECT_EQ(c2[0].logits, r2[0].logits);
  EXPECT_EQ(c2[1].logits, r2[1].logits);
  EXPECT_THROW(bl.collect(h1), Error);  // collected already
  p2[0].feed_row = 5;                   // the previous step had 2 rows
  EXPECT_THROW(bl.submit(p2), Error);
}

// StepSequence::rows: a chunk's logits after each of its last `rows` tokens (a speculative verify
// chunk) are, bit for bit, what feeding those tokens one step at a time gives, beside another
// sequence's one row; rows outside 1 .. tokens, or more rows than max_rows, are refused.
TEST_P(BatchedOn, RowsGiveTheLogitsAfterEachToken) {
  WGC_REQUIRE_FILE(default_model());
  LlamaModel& model = shared_model(GetParam());
  BatchedOptions bo;
  bo.max_tokens = 16;
  bo.max_rows = 5;
  bo.block_tokens = 4;
  bo.blocks = 8;
  BatchedLlama bl(model, bo);
  const std::vector<int32_t> a = {0, 5, 77, 301, 12, 9, 40}, b = {0, 9, 8};
  const std::vector<int32_t> ta = {0, 1}, tb = {2, 3};
  std::vector<std::vector<float>> want;  // a's logits after tokens 3..6, one step each
  for (int n = 4; n <= 7; ++n) {
    StepSequence q;
    q.tokens = std::span(a).subspan(n == 4 ? 0 : size_t(n - 1), n == 4 ? 4 : 1);
    q.pos0 = n == 4 ? 0 : n - 1;
    q.blocks = ta;
    q.full = true;
    want.push_back(bl.step(std::span(&q, 1))[0].logits);
  }
  std::vector<StepSequence> st(2);
  st[0].tokens = b;
  st[0].blocks = tb;
  st[0].top_k = 2;
  st[1].tokens = a;
  st[1].blocks = ta;
  st[1].full = true;
  st[1].top_k = 3;
  st[1].rows = 4;
  const auto got = bl.step(st);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].top_ids.size(), 2u);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(std::memcmp(got[1 + r].logits.data(), want[r].data(), want[r].size() * 4), 0) << "row " << r;
    ASSERT_EQ(got[1 + r].top_ids.size(), 3u);
    EXPECT_EQ(got[1 + r].top_logits[0], *std::max_element(want[r].begin(), want[r].end())) << "row " << r;
  }
  auto fails = [&](std::vector<StepSequence> bad) { EXPECT_THROW(bl.step(bad), Error); };
  auto bad = st;
  bad[1].rows = 8;  // more than its 7 tokens
  fails(bad);
  bad[1].rows = 0;
  fails(bad);
  bad[1].rows = 5;  // 6 rows with b's, max_rows 5
  fails(bad);
}

TEST_P(BatchedOn, TopKLogSumExpAndErrors) {
  WGC_REQUIRE_FILE(default_model());
  Small m(GetParam());
  auto& bl = m.bl;
  auto& model = m.model;
  std::vector<int32_t> prompt = {0, 5, 77, 301, 12};
  std::vector<int32_t> blocks = {6, 1};
  StepSequence s;
  s.tokens = prompt;
  s.blocks = blocks;
  s.top_k = 5;
  s.full = true;
  s.logsumexp = true;
  auto r = bl.step(std::span(&s, 1));
  ASSERT_EQ(r.size(), 1u);
  auto& l = r[0].logits;
  std::vector<int32_t> order(l.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return l[size_t(x)] > l[size_t(y)]; });
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(r[0].top_ids[size_t(i)], order[size_t(i)]);
    EXPECT_EQ(r[0].top_logits[size_t(i)], l[size_t(order[size_t(i)])]);
  }
  double mx = l[size_t(order[0])], sum = 0;
  for (float v : l) sum += std::exp(double(v) - mx);
  EXPECT_NEAR(r[0].logsumexp, mx + std::log(sum), 1e-4);

  auto fails = [&](StepSequence bad) { EXPECT_THROW(bl.step(std::span(&bad, 1)), Error); };
  StepSequence bad = s;
  std::vector<int32_t> big = {int32_t(model.config().vocab_size)};
  bad.tokens = big;
  fails(bad);
  bad = s;
  bad.blocks = std::span(blocks).first(1);  // 5 positions need 2 blocks of 4
  fails(bad);
  bad = s;
  std::vector<int32_t> outside = {6, 8};
  bad.blocks = outside;
  fails(bad);
  bad = s;
  std::vector<int32_t> many(17, 3);
  bad.tokens = many;
  fails(bad);
  bad = s;
  bad.pos0 = 62;  // past the 64-position context
  fails(bad);
  BatchedOptions none = m.bo;
  none.blocks = 0;
  EXPECT_THROW(BatchedLlama(model, none), Error);
}
