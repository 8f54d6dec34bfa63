// Mixture of experts. The GPU ops against CPU references written here: the routing (top-k with
// ties and NaN, renormalised or raw weights, the grouping into runs of one expert), the grouped
// expert linear over stacked weights of every GPU weight type at awkward sizes (output poisoned:
// the gaps must stay NaN), the combine with and without a shared expert. The engines (GPU single
// sequence, CPU) against the float64 reference forward on synthetic Mixtral, Qwen3-MoE and
// Qwen2-MoE models (shrunk `wgc synth-model` shapes), and the serving engine's batch invariance on
// them; transformers' logits (tests/data/arch) where those fixtures are present.
#include "cpu/llm/dequant.h"
#include "llm/formats/safetensors.h"
#include "llm/model/layer_plan.h"
#include "llm/model/llama.h"
#include "llm/model/llama_batched.h"
#include "llm/reference/forward_ref.h"
#include "llm/synth/quantize.h"
#include "llm/synth/synth_model.h"
#include "memory_source.h"
#include "ops/llm/llm_ops.h"
#include "test_llm_util.h"
#include "test_serving_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <stdexcept>

using namespace wgc;
using namespace wgc::llm;
using wgc::test::Blocks;
using wgc::test::ctx;
using wgc::test::feed;
using wgc::test::ops;
using wgc::test::Seq;
namespace fs = std::filesystem;

namespace {

// ---- the routing's reference ----
struct Route {
  std::vector<uint32_t> ids;
  std::vector<float> wts;
};
Route ref_route(const std::vector<float>& logits, int n, int E, int stride, int k, bool norm) {
  Route r;
  for (int t = 0; t < n; ++t) {
    const float* l = logits.data() + size_t(t) * size_t(stride);
    auto key = [&](int e) { return std::isnan(l[e]) ? -INFINITY : double(l[e]); };
    std::vector<int> o(static_cast<size_t>(E));
    std::iota(o.begin(), o.end(), 0);
    std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return key(a) > key(b); });
    double mx = key(o[0]), sum = 0, sel = 0;
    for (int e = 0; e < E; ++e) sum += std::isnan(l[e]) ? 0.0 : std::exp(double(l[e]) - mx);
    for (int j = 0; j < k; ++j) sel += std::exp(key(o[size_t(j)]) - mx);
    for (int j = 0; j < k; ++j) {
      r.ids.push_back(uint32_t(o[size_t(j)]));
      r.wts.push_back(float(std::exp(key(o[size_t(j)]) - mx) / (norm ? sel : sum)));
    }
  }
  return r;
}

// Runs moe_route on logits (poisoned outputs) and checks ids, weights, the grouping and the runs.
MoeRouting check_route(const std::vector<float>& logits, int n, int E, int stride, int k, bool norm,
                       const std::string& what) {
  MoeRouting r = make_moe_routing(ctx(), n + 3, E, k);  // room to spare: only n tokens' worth is written
  for (const Tensor* t : {&r.ids, &r.wts, &r.order, &r.runs}) fill_u32(ctx(), *t, kPoisonNaN);
  const Tensor lt = make_tensor(ctx(), {int64_t(logits.size())}, logits);
  Batch b(ctx());
  ops().moe_route(b, lt, stride, n, norm, r);
  b.run();
  const Route want = ref_route(logits, n, E, stride, k, norm);
  const size_t P = size_t(n) * size_t(k);
  auto ids = download<uint32_t>(ctx(), r.ids), order = download<uint32_t>(ctx(), r.order),
       runs = download<uint32_t>(ctx(), r.runs);
  auto wts = download<float>(ctx(), r.wts);
  EXPECT_EQ(std::vector<uint32_t>(ids.begin(), ids.begin() + long(P)), want.ids) << what;
  EXPECT_LE(test::rel_error(std::vector<float>(wts.begin(), wts.begin() + long(P)), want.wts), 1e-5) << what;
  // order: the pairs expert by expert, in pair order within one; runs: one per expert with pairs.
  std::vector<uint32_t> want_order, want_runs{0};
  for (int e = 0; e < E; ++e) {
    const uint32_t first = uint32_t(want_order.size());
    for (size_t q = 0; q < P; ++q)
      if (want.ids[q] == uint32_t(e)) want_order.push_back(uint32_t(q));
    const uint32_t c = uint32_t(want_order.size()) - first;
    if (c) {
      want_runs.insert(want_runs.end(), {uint32_t(e), first, c});
      ++want_runs[0];
    }
  }
  EXPECT_EQ(std::vector<uint32_t>(order.begin(), order.begin() + long(P)), want_order) << what;
  EXPECT_EQ(std::vector<uint32_t>(runs.begin(), runs.begin() + long(want_runs.size())), want_runs) << what;
  EXPECT_LE(want_runs[0], moe_max_runs(n, E, k)) << what;
  return r;
}

}  // namespace

TEST(MoeOps, RouteMatchesReferenceWithTiesAndNaN) {
  // Logits on a coarse grid (many ties), a NaN, a row of equal logits, a stride with a spare column.
  for (auto [n, E, k] : std::vector<std::tuple<int, int, int>>{{13, 11, 3}, {70, 9, 2}, {1, 128, 8}, {5, 4, 4}}) {
    const int stride = E + 1;
    auto l = test::random_floats(size_t(n * stride), uint32_t(n + E), -2.f, 2.f);
    for (auto& v : l) v = std::round(v * 2) / 2;
    l[size_t(std::min(n - 1, 2) * stride + E / 2)] = NAN;
    if (n > 4)
      for (int e = 0; e < E; ++e) l[size_t(4 * stride + e)] = 0.25f;
    for (bool norm : {false, true})
      check_route(l, n, E, stride, k, norm, std::to_string(n) + "x" + std::to_string(E) + " top " + std::to_string(k));
  }
}

TEST(MoeOps, GroupedLinearMatchesReferenceForEveryWeightType) {
  const int k = 2, E = 5;
  const int64_t rows = 37;  // not a multiple of a workgroup's 32 rows
  // 29 tokens: runs of more than one chunk of pairs (58 pairs on 5 experts); one: the one-pair kernel.
  for (auto [n, type] : std::vector<std::pair<int, TensorType>>{{29, TensorType::F32},
                                                                {29, TensorType::F16},
                                                                {29, TensorType::BF16},
                                                                {29, TensorType::Q8_0},
                                                                {29, TensorType::Q4_0},
                                                                {29, TensorType::Q4_K},
                                                                {29, TensorType::Q6_K},
                                                                {1, TensorType::Q4_0},
                                                                {1, TensorType::Q6_K},
                                                                {1, TensorType::F16}}) {
    auto logits = test::random_floats(size_t(n * E), 21);
    const int64_t cols = (type == TensorType::Q4_K || type == TensorType::Q6_K) ? 512 : 96;
    const std::string what = std::string(to_string(type)) + " x" + std::to_string(n);
    MoeRouting r = check_route(logits, n, E, E, k, true, what);
    if (n > 1) {  // some expert has more than one chunk of pairs
      const auto runs = download<uint32_t>(ctx(), r.runs);
      uint32_t most = 0;
      for (uint32_t i = 0; i < runs[0]; ++i) most = std::max(most, runs[3 + 3 * i]);
      EXPECT_GT(most, kMoeChunk) << what;
    }
    auto wf = test::random_floats(size_t(E * rows * cols), 22);
    std::vector<std::byte> bytes(ggml_bytes(type, E * rows, cols));
    synth::quantize(type, wf, bytes);
    const std::vector<float> wd = dequantize(type, bytes, size_t(E * rows * cols));
    const GpuWeight w = upload_weight(ctx(), type, bytes, E * rows, cols);
    const auto ids = download<uint32_t>(ctx(), r.ids);
    for (bool per_pair : {false, true}) {
      const int64_t xs = cols + 4, ys = rows + 5, yoff = 3, xrows = per_pair ? n * k : n;
      auto xv = test::random_floats(size_t(xrows * xs), 23);
      const Tensor x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
      const Tensor y = test::poisoned(n * k * ys);
      Batch b(ctx());
      ops().moe_linear(b, w, rows, x, xs, per_pair, y, ys, yoff, n, r);
      b.run();
      std::vector<float> want(size_t(n * k * ys), NAN);
      std::vector<bool> written(want.size(), false);
      for (int q = 0; q < n * k; ++q) {
        const float* xr = xv.data() + (per_pair ? q : q / k) * xs;
        for (int64_t i = 0; i < rows; ++i) {
          const float* wr = wd.data() + (int64_t(ids[size_t(q)]) * rows + i) * cols;
          double s = 0;
          for (int64_t c = 0; c < cols; ++c) s += double(wr[c]) * xr[c];
          want[size_t(q * ys + yoff + i)] = float(s);
          written[size_t(q * ys + yoff + i)] = true;
        }
      }
      test::expect_written_and_gaps(download<float>(ctx(), y), want, written, {}, false, 1e-5,
                                    what + (per_pair ? " per pair" : " per token"));
    }
  }
}

TEST(MoeOps, CombineAddsWeightedExpertsAndGatedSharedExpert) {
  const int n = 5, k = 3, E = 7;
  const int64_t H = 13;
  auto logits = test::random_floats(size_t(n * (E + 1)), 31);
  MoeRouting r = check_route(logits, n, E, E + 1, k, false, "combine");
  const auto wts = download<float>(ctx(), r.wts);
  auto ydv = test::random_floats(size_t(n * k * H), 32), ysv = test::random_floats(size_t(n * H), 33),
       xv = test::random_floats(size_t(n * H), 34);
  const Tensor yd = make_tensor(ctx(), {int64_t(ydv.size())}, ydv), ys = make_tensor(ctx(), {int64_t(ysv.size())}, ysv),
               lt = make_tensor(ctx(), {int64_t(logits.size())}, logits);
  for (bool shared : {false, true}) {
    const Tensor x = make_tensor(ctx(), {int64_t(xv.size())}, xv);
    Batch b(ctx());
    ops().moe_combine(b, yd, r, n, H, shared ? ys : Tensor(), lt, E + 1, E, x);
    b.run();
    std::vector<float> want(xv);
    for (int t = 0; t < n; ++t) {
      const double g = 1 / (1 + std::exp(-double(logits[size_t(t * (E + 1) + E)])));
      for (int64_t i = 0; i < H; ++i) {
        double acc = 0;
        for (int j = 0; j < k; ++j) acc += double(wts[size_t(t * k + j)]) * ydv[size_t((t * k + j) * H + i)];
        if (shared) acc += g * ysv[size_t(t * H + i)];
        want[size_t(t * H + i)] += float(acc);
      }
    }
    EXPECT_LE(test::rel_error(download<float>(ctx(), x), want), 1e-6) << (shared ? "shared" : "routed only");
  }
}

TEST(MoePlan, MoeLayersTakeTheMoeStepInEveryMode) {
  for (PlanMode mode : {PlanMode::Decode, PlanMode::Prefill, PlanMode::Serve}) {
    PlanFacts f;
    f.mode = mode;
    f.set(Fact::Gpu).set(Fact::GateUpOnePart).set(Fact::FitsGluF32).set(Fact::FitsNormF32).set(Fact::Moe);
    const LayerPlan p = plan_layer(f);
    ASSERT_GE(p.steps.size(), 2u);
    const Step& norm = p.steps[p.steps.size() - 2];
    const Step& moe = p.steps.back();
    EXPECT_EQ(norm.op, Op::Norm);
    EXPECT_FALSE(norm.q8_out);
    EXPECT_EQ(moe.op, Op::Moe);
    EXPECT_EQ(moe.in, Buf::H);
    EXPECT_EQ(moe.out, Buf::X);
    EXPECT_TRUE(moe.accumulate);
    EXPECT_EQ(moe.rule, "moe");
    f.off = {"moe"};
    EXPECT_THROW(plan_layer(f), wgc::Error);
  }
}

// The engines take Mixtral, Qwen2-MoE, Qwen3-MoE and OLMoE; an MoE embedding model is refused, saying why.
TEST(MoePlan, EnginesRunTheMoeArchitectures) {
  ModelConfig c;
  c.n_experts = 8;
  c.n_experts_used = 2;
  for (Architecture a : {Architecture::Mixtral, Architecture::Qwen2Moe, Architecture::Qwen3Moe, Architecture::Olmoe}) {
    c.architecture = a;
    c.qk_norm_whole = a == Architecture::Olmoe;
    EXPECT_TRUE(engine_runs(c)) << to_string(a);
    EXPECT_EQ(engine_refusal(c), "") << to_string(a);
  }
  // As an embedding model (a decoder's last hidden state: LlamaModel::last_hidden) it runs too.
  c.embedding_model = true;
  EXPECT_TRUE(engine_runs(c));
}

namespace {

// A shape of `wgc synth-model` shrunk to test size, every feature kept (experts: 6, 2 per token,
// so tokens share experts and some experts get none).
synth::ModelShape moe_shape(const std::string& name, bool shared = false) {
  synth::ModelShape s = synth::find_shape(name);
  s.hidden = 64;
  s.layers = 2;
  s.kv_heads = 2;
  s.heads = 4;
  s.head_dim = 16;
  s.vocab = 384;
  s.context = 128;
  s.n_experts = 6;
  s.n_experts_used = 2;
  s.expert_ffn = 32;
  s.ffn = s.arch == "llama" ? 32 : 96;  // Mixtral: feed_forward_length is the experts' size
  if (shared) {                         // Qwen2-MoE: no q/k norms, a shared expert with its gate
    s.arch = "qwen2moe";
    s.qk_norm = false;
    s.shared_expert_ffn = 64;
  }
  return s;
}

fs::path write_moe(const synth::ModelShape& s, TensorType type, const std::string& name) {
  const fs::path path = test::temp_dir() / (name + "-" + std::string(to_string(type)) + ".gguf");
  GgufWriteOptions wo;
  wo.progress = false;
  synth::SynthModel(s, type, 11).write(path, wo);
  return path;
}

EngineOptions engine(Device device, bool q8 = true) {
  EngineOptions eo;
  eo.device = device;
  eo.max_ctx = 64;
  eo.max_batch = 16;  // a 21-token prompt runs in two chunks
  eo.progress = false;
  eo.q8_activations = q8;
  return eo;
}

std::vector<int32_t> prompt(int n, int vocab, int seed = 0) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(int32_t((i * 131 + 7 + seed * 977) % vocab));
  return p;
}

struct MoeCase {
  const char* shape;
  bool shared;
  Architecture arch;
};
constexpr MoeCase kMoeCases[] = {{"mixtral-8x7b", false, Architecture::Mixtral},
                                 {"qwen3-30b-a3b", false, Architecture::Qwen3Moe},
                                 {"qwen3-30b-a3b", true, Architecture::Qwen2Moe}};

}  // namespace

// F32 weights: both engines give the float64 reference's logits at every position of a prompt
// (run in two chunks) and of decode steps after it.
TEST(MoeEngines, GpuAndCpuMatchTheReferenceForward) {
  for (const MoeCase& c : kMoeCases) {
    const synth::ModelShape s = moe_shape(c.shape, c.shared);
    const fs::path path = write_moe(s, TensorType::F32, std::string(c.shape) + (c.shared ? "-shared" : ""));
    ModelFile f = open_model(path, {false, false});
    ASSERT_EQ(f.config().architecture, c.arch);
    ASSERT_EQ(f.config().shared_expert_ffn_size, c.shared ? 64 : 0);
    reference::ForwardRef ref(f);
    const auto toks = prompt(24, int(s.vocab));
    const std::vector<float> want = test::to_float(ref.logits(toks));
    const size_t V = size_t(s.vocab);
    for (Device d : {Device::Gpu, Device::Cpu}) {
      const std::string what = std::string(to_string(c.arch)) + (d == Device::Gpu ? " gpu" : " cpu");
      LlamaModel m(ctx(), f, engine(d));
      const auto got = m.all_logits(std::span(toks).first(21));
      EXPECT_LT(test::rel_error(got, std::vector<float>(want.begin(), want.begin() + long(21 * V))), 1e-4)
          << what << " prompt";
      for (size_t i = 21; i < toks.size(); ++i) {
        const auto step = m.logits(std::span(toks).subspan(i, 1));
        EXPECT_LT(
            test::rel_error(step, std::vector<float>(want.begin() + long(i * V), want.begin() + long((i + 1) * V))),
            1e-4)
            << what << " decode at " << i;
      }
    }
  }
}

// Quantized weights: the GPU engine (8-bit activations in the dense parts) and the CPU engine
// agree within the quantized types' tolerance.
TEST(MoeEngines, GpuAndCpuAgreeOnQuantizedWeights) {
  for (TensorType type : {TensorType::Q4_0}) {
    for (const MoeCase& c : kMoeCases) {
      const synth::ModelShape s = moe_shape(c.shape, c.shared);
      ModelFile f = open_model(write_moe(s, type, std::string(c.shape) + (c.shared ? "-shared" : "")), {false, false});
      const std::string what = std::string(to_string(c.arch)) + " " + std::string(to_string(type));
      LlamaModel gpu(ctx(), f, engine(Device::Gpu)), cpu(ctx(), f, engine(Device::Cpu));
      const auto toks = prompt(19, int(s.vocab), 1);
      EXPECT_LT(test::rel_error(cpu.all_logits(toks), gpu.all_logits(toks)), 3e-2) << what << " prompt";
      for (int32_t tok : {5, 300, 77})
        EXPECT_LT(test::rel_error(cpu.logits(std::span(&tok, 1)), gpu.logits(std::span(&tok, 1))), 3e-2)
            << what << " decode";
    }
  }
}

// Read from a ByteSource (the wasm engine's loading: each tensor read when the upload reaches it,
// each expert's rows of the stacked tensors on their own), the same weights reach the GPU: the
// logits are the mapped file's, bit for bit.
TEST(MoeEngines, StreamedGgufGivesTheMappedFilesLogits) {
  for (const MoeCase& c : kMoeCases) {
    const synth::ModelShape s = moe_shape(c.shape, c.shared);
    const fs::path path = write_moe(s, TensorType::Q8_0, std::string(c.shape) + (c.shared ? "-shared" : ""));
    std::ifstream in(path, std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto bytes = std::as_bytes(std::span(raw));
    const ModelFile mapped = open_model(path, {false, false}),
                    streamed = open_model(
                        std::make_shared<test::MemorySource>(std::vector<std::byte>(bytes.begin(), bytes.end())),
                        "streamed.gguf", {false, false});
    ASSERT_TRUE(streamed.streamed());
    LlamaModel a(ctx(), mapped, engine(Device::Gpu)), b(ctx(), streamed, engine(Device::Gpu));
    const auto toks = prompt(7, int(s.vocab), 2);
    const auto la = a.all_logits(toks), lb = b.all_logits(toks);
    ASSERT_EQ(la.size(), lb.size());
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * 4), 0) << to_string(c.arch);
  }
}

// The serving engine on MoE models: a sequence's logits are the same bits alone or among others
// (whose tokens go to the same and to other experts), whatever its prompt's chunking.
TEST(MoeEngines, ServingIsBatchInvariant) {
  for (Device d : {Device::Gpu, Device::Cpu}) {
    for (const MoeCase& c : kMoeCases) {
      const synth::ModelShape s = moe_shape(c.shape, c.shared);
      ModelFile f = open_model(write_moe(s, TensorType::Q8_0, std::string(c.shape) + (c.shared ? "-shared" : "")),
                               {false, false});
      LlamaModel model(ctx(), f, engine(d, false));
      const std::vector<LinearVersion> lins = d == Device::Cpu
                                                  ? std::vector{LinearVersion::Auto}
                                                  : std::vector{LinearVersion::Naive, LinearVersion::BatchedQ8};
      for (LinearVersion lin : lins) {
        BatchedOptions bo;
        bo.max_tokens = 32;
        bo.max_rows = 3;
        bo.block_tokens = 8;
        bo.blocks = 16;
        bo.linear = lin;
        BatchedLlama bl(model, bo);
        const std::string what = std::string(to_string(c.arch)) + (d == Device::Cpu ? " cpu" : " gpu ") +
                                 (d == Device::Cpu ? "" : std::string(to_string(lin)));
        const int V = int(s.vocab);
        Seq a{prompt(14, V, 2), 0, {}};
        Blocks pool(bo.blocks);
        std::vector<std::vector<float>> alone{feed(bl, pool, {&a}, {12})[0]};
        for (int i = 0; i < 2; ++i) alone.push_back(feed(bl, pool, {&a}, {1})[0]);
        Seq a2{a.tokens, 0, {}}, b{prompt(20, V, 3), 0, {}}, cc{prompt(11, V, 4), 0, {}};  // 9 prefilled, 2 decoded
        pool = Blocks(bo.blocks);
        feed(bl, pool, {&b, &a2, &cc}, {11, 5, 9});
        auto r = feed(bl, pool, {&cc, &a2, &b}, {0, 7, 1});
        ASSERT_EQ(r.size(), 2u);
        EXPECT_EQ(std::memcmp(r[0].data(), alone[0].data(), size_t(V) * 4), 0) << what << ": prompt";
        for (int i = 0; i < 2; ++i) {
          auto st = feed(bl, pool, {&cc, &a2, &b}, {1, 1, 1});
          EXPECT_EQ(std::memcmp(st[1].data(), alone[size_t(i + 1)].data(), size_t(V) * 4), 0)
              << what << ": decode step " << i;
        }
      }
    }
  }
}

namespace {

// A Hugging Face folder as transformers saves these models (one tensor per expert, f32): Qwen2-MoE
// (the shared expert and its gate, q/k/v biases, layer 1 a dense MLP through mlp_only_layers) or
// OLMoE (q/k norms over all heads). Both engines give the reference forward's logits (the names
// written here, not the table's).
void check_hf_folder(bool olmoe) {
  const int64_t H = 64, heads = 4, kv = 2, hd = 16, V = 384, E = 6, F = 32, S = 64, D = 96;
  const fs::path dir = test::temp_dir(olmoe ? "olmoe-hf" : "qwen2moe-hf");
  if (olmoe)
    std::ofstream(dir / "config.json")
        << R"({"model_type": "olmoe", "architectures": ["OlmoeForCausalLM"], "vocab_size": 384,
      "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "intermediate_size": 32, "num_experts": 6, "num_experts_per_tok": 2, "norm_topk_prob": false,
      "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false, "clip_qkv": null,
      "max_position_embeddings": 256, "bos_token_id": 1, "eos_token_id": 2})";
  else
    std::ofstream(dir / "config.json")
        << R"({"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "vocab_size": 384,
      "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "intermediate_size": 96, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64,
      "num_experts": 6, "num_experts_per_tok": 2, "norm_topk_prob": false, "decoder_sparse_step": 1,
      "mlp_only_layers": [1], "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": false,
      "max_position_embeddings": 256, "bos_token_id": 1, "eos_token_id": 2})";
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"model.embed_tokens.weight", {V, H}}, {"model.norm.weight", {H}}, {"lm_head.weight", {V, H}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (auto [n, sh] :
         std::vector<std::pair<std::string, std::vector<int64_t>>>{{"input_layernorm.weight", {H}},
                                                                   {"post_attention_layernorm.weight", {H}},
                                                                   {"self_attn.q_proj.weight", {heads * hd, H}},
                                                                   {"self_attn.k_proj.weight", {kv * hd, H}},
                                                                   {"self_attn.v_proj.weight", {kv * hd, H}},
                                                                   {"self_attn.o_proj.weight", {H, heads * hd}}})
      shapes.push_back({p + n, sh});
    if (olmoe) {
      shapes.push_back({p + "self_attn.q_norm.weight", {heads * hd}});
      shapes.push_back({p + "self_attn.k_norm.weight", {kv * hd}});
    } else {
      shapes.push_back({p + "self_attn.q_proj.bias", {heads * hd}});
      shapes.push_back({p + "self_attn.k_proj.bias", {kv * hd}});
      shapes.push_back({p + "self_attn.v_proj.bias", {kv * hd}});
    }
    if (l == 1 && !olmoe) {
      for (auto [n, sh] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
               {"mlp.gate_proj.weight", {D, H}}, {"mlp.up_proj.weight", {D, H}}, {"mlp.down_proj.weight", {H, D}}})
        shapes.push_back({p + n, sh});
      continue;
    }
    shapes.push_back({p + "mlp.gate.weight", {E, H}});
    for (int e = 0; e < E; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      shapes.push_back({x + "gate_proj.weight", {F, H}});
      shapes.push_back({x + "up_proj.weight", {F, H}});
      shapes.push_back({x + "down_proj.weight", {H, F}});
    }
    if (olmoe) continue;
    shapes.push_back({p + "mlp.shared_expert.gate_proj.weight", {S, H}});
    shapes.push_back({p + "mlp.shared_expert.up_proj.weight", {S, H}});
    shapes.push_back({p + "mlp.shared_expert.down_proj.weight", {H, S}});
    shapes.push_back({p + "mlp.shared_expert_gate.weight", {1, H}});
  }
  std::vector<std::vector<float>> values;
  std::vector<SafetensorsEntry> entries;
  uint32_t seed = 40;
  for (const auto& [n, sh] : shapes) {
    int64_t count = 1;
    for (int64_t d : sh) count *= d;
    const bool norm = n.find("norm") != std::string::npos;
    values.push_back(test::random_floats(size_t(count), seed++, norm ? 0.8f : -0.15f, norm ? 1.2f : 0.15f));
  }
  for (size_t i = 0; i < shapes.size(); ++i)
    entries.push_back({shapes[i].first, TensorType::F32, shapes[i].second, std::as_bytes(std::span(values[i]))});
  write_safetensors(dir / "model.safetensors", entries);

  ModelFile f = open_model(dir, {false, false});
  ASSERT_EQ(f.config().architecture, olmoe ? Architecture::Olmoe : Architecture::Qwen2Moe);
  ASSERT_TRUE(f.config().layer_is_moe(0));
  ASSERT_EQ(f.config().layer_is_moe(1), olmoe);
  ASSERT_EQ(f.config().qk_norm_whole, olmoe);
  reference::ForwardRef ref(f);
  const auto toks = prompt(18, int(V), 5);
  const std::vector<float> want = test::to_float(ref.logits(toks));
  for (Device d : {Device::Gpu, Device::Cpu}) {
    LlamaModel m(ctx(), f, engine(d));
    EXPECT_LT(test::rel_error(m.all_logits(std::span(toks).first(17)),
                              std::vector<float>(want.begin(), want.begin() + long(17 * V))),
              1e-4)
        << (d == Device::Gpu ? "gpu" : "cpu") << " prompt";
    EXPECT_LT(test::rel_error(m.logits(std::span(toks).subspan(17, 1)),
                              std::vector<float>(want.begin() + long(17 * V), want.end())),
              1e-4)
        << (d == Device::Gpu ? "gpu" : "cpu") << " decode";
  }
}

}  // namespace

TEST(MoeEngines, HuggingFaceQwen2MoeFolderWithADenseLayer) { check_hf_folder(false); }
TEST(MoeEngines, HuggingFaceOlmoeFolder) { check_hf_folder(true); }

// transformers' logits (tests/data/arch, scripts/make_arch_fixtures.py) through both engines,
// from the Hugging Face folder and from the GGUF llama.cpp's converter wrote.
TEST(MoeEngines, MatchTransformersFixtures) {
  int checked = 0;
  for (const char* name : {"mixtral", "qwen2moe", "qwen3moe", "olmoe"}) {
    const fs::path dir = fs::path(WGC_SOURCE_DIR) / "tests/data/arch" / name;
    if (!fs::exists(dir / "golden.safetensors")) continue;
    SafetensorsFile g = SafetensorsFile::open(dir / "golden.safetensors");
    auto get = [&](const std::string& key) -> std::vector<float> {
      const auto* t = g.find(key);
      if (!t) throw wgc::Error("golden tensor missing: " + key);
      std::vector<float> v(t->data.size() / 4);
      std::memcpy(v.data(), t->data.data(), t->data.size());
      return v;
    };
    std::vector<fs::path> models{dir};
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".gguf") models.push_back(e.path());
    for (const fs::path& mp : models) {
      ModelFile f = open_model(mp, {false, false});
      for (Device d : {Device::Gpu, Device::Cpu}) {
        LlamaModel m(ctx(), f, engine(d, false));
        for (int i = 0; i < 2; ++i) {
          std::string key = "p";
          key += std::to_string(i);
          const auto* tt = g.find(key + ".tokens");
          if (!tt) continue;
          std::vector<int32_t> toks(tt->data.size() / 4);
          std::memcpy(toks.data(), tt->data.data(), tt->data.size());
          m.rewind(0);
          // bf16 weights in both; transformers ran them in float64.
          EXPECT_LT(test::rel_error(m.all_logits(toks), get(key + ".logits")), 2e-3)
              << mp << (d == Device::Gpu ? " gpu " : " cpu ") << key;
          ++checked;
        }
      }
    }
  }
  if (!checked) GTEST_SKIP() << "no MoE fixtures in tests/data/arch (scripts/make_arch_fixtures.py makes them)";
}

// Through the CLI: `wgc bench --ops llm.moe` checks every case against the CPU reference, and
// `wgc generate` runs a synthetic Qwen3-MoE file (f32) greedily on both engines to the same tokens.
TEST(MoeCli, BenchChecksAndGenerateRunsOnBothEngines) {
  const auto bench = test::run_cli("bench --quick --ops llm.moe");
  ASSERT_EQ(bench.rc, 0) << bench.err;
  size_t ok = 0;
  for (size_t at = bench.out.find("llm.moe"); at != std::string::npos; at = bench.out.find("llm.moe", at + 1)) {
    const size_t eol = bench.out.find('\n', at);
    EXPECT_EQ(bench.out.substr(eol - 2, 2), "ok") << bench.out.substr(at, eol - at);
    ++ok;
  }
  EXPECT_EQ(ok, 8u) << bench.out;
  const fs::path model = write_moe(moe_shape("qwen3-30b-a3b"), TensorType::F32, "cli-qwen3moe");
  std::string text[2];
  for (int i = 0; i < 2; ++i) {
    const auto r = test::run_cli("generate --model " + test::quote(model.string()) +
                                 " --prompt hello -n 6 --temp 0 --backend " + (i ? "cpu" : "cpu-vulkan"));
    ASSERT_EQ(r.rc, 0) << r.err;
    text[i] = r.out;
  }
  EXPECT_FALSE(text[0].empty());
  EXPECT_EQ(text[0], text[1]);
}
