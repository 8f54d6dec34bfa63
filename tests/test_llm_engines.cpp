// The two engines of LlamaModel on the same files: the GPU engine (WebGPU; SwiftShader in CI) and
// the CPU engine agree on the logits of a prompt and of decode steps within the tolerance of each
// weight type, on synthetic models (src/llm/synth, the tiny shape) of every type `wgc synth-model`
// writes. (BF16 weights are compared through the tiny-llama3 fixture in test_llm_model.cpp, and
// every type the CPU kernels read, Q4_K and Q6_K too, against the f64 reference in
// test_cpu_llm_kernels.cpp.)
#include "llm/model/llama.h"
#include "llm/model/llama_weights.h"
#include "llm/synth/synth_model.h"
#include "ops/llm/llm_ops.h"
#include "test_util.h"

using namespace wgc;
using namespace wgc::llm;
using wgc::test::ctx;

namespace {

EngineOptions engine(Device device) {
  EngineOptions eo;
  eo.device = device;
  eo.max_ctx = 64;
  eo.max_batch = 16;  // the 19-token prompt runs in two chunks
  eo.progress = false;
  return eo;
}

}  // namespace

TEST(LlmEngines, GpuAndCpuAgreeOnEveryWeightType) {
  // Tolerances (max |diff| / max |gpu|): f32 and f16 weights differ only in the order of f32
  // sums; the quantized types by the CPU engine's 8-bit activations (per block of 32, as llama.cpp).
  const std::pair<TensorType, double> cases[] = {
      {TensorType::F32, 1e-5}, {TensorType::F16, 1e-5}, {TensorType::Q8_0, 3e-2}, {TensorType::Q4_0, 3e-2}};
  const synth::ModelShape& shape = synth::find_shape("tiny");
  std::vector<int32_t> prompt;
  for (int i = 0; i < 19; ++i) prompt.push_back(int32_t((i * 131 + 7) % shape.vocab));
  for (auto [type, tol] : cases) {
    const auto path = test::temp_dir() / ("tiny-" + std::string(to_string(type)) + ".gguf");
    GgufWriteOptions wo;
    wo.progress = false;
    synth::SynthModel(shape, type, 3).write(path, wo);
    ModelFile f = open_model(path, {false, false});
    LlamaModel gpu(ctx(), f, engine(Device::Gpu)), cpu(ctx(), f, engine(Device::Cpu));
    ASSERT_EQ(gpu.device(), Device::Gpu);
    ASSERT_EQ(cpu.device(), Device::Cpu);
    const std::string what = std::string(to_string(type));
    const auto want = gpu.all_logits(prompt), got = cpu.all_logits(prompt);
    EXPECT_LT(test::rel_error(got, want), tol) << what << " prompt";
    for (int32_t tok : {5, 300, 77}) {
      EXPECT_LT(test::rel_error(cpu.logits(std::span(&tok, 1)), gpu.logits(std::span(&tok, 1))), tol)
          << what << " decode at " << gpu.n_past();
    }
    EXPECT_EQ(cpu.n_past(), gpu.n_past());
  }
}

// llama.cpp's Q4_K_M mix on a tiny shape whose rows are whole super-blocks: Q6_K for the output
// and for attn_v and ffn_down of the last layer, so that layer's QKV is two parts (q|k Q4_K, v
// Q6_K). Decode steps with RoPE and the cache append in each part's QKV matvec (the plan's
// norm_qkv_rope_q8) give the
// logits of the separate rope_kv_append pass bit for bit, and agree with the CPU engine.
TEST(LlmEngines, Q4KMixFusesRopePerQkvPart) {
  synth::ModelShape shape = synth::find_shape("tiny");
  shape.hidden = 256;
  shape.heads = 8;
  shape.ffn = 512;
  const auto path = test::temp_dir() / "tiny256-q4_k_m.gguf";
  GgufWriteOptions wo;
  wo.progress = false;
  synth::SynthModel(shape, TensorType::Q4_K, 5).write(path, wo);
  ModelFile f = open_model(path, {false, false});
  // With the matvec's other knobs on for K-quants too (mvq_kq_plain 0): the norm's scale late,
  // weights ahead, static columns, 8 invocations per SwiGLU row group, x staged in workgroup memory.
  EngineOptions one = engine(Device::Gpu);
  apply_tuning(one.tuning, "mvq_late=1,mvq_pf=2,mvq_static=1,mvq_sw_tpr=8,mvq_stage=1,mvq_kq_plain=0");
  EngineOptions apart = one;
  apart.plan_off = {"norm_qkv_rope_q8"};
  LlamaModel fused(ctx(), f, one), two(ctx(), f, apart), cpu(ctx(), f, engine(Device::Cpu));
  ASSERT_EQ(fused.weights().layers[1].mat(Mat::Qkv).parts.size(), 2u);
  EXPECT_EQ(fused.weights().layers[1].mat(Mat::Qkv).parts[1].type, TensorType::Q6_K);
  EXPECT_EQ(fused.weights().layers[0].mat(Mat::Qkv).parts.size(), 1u);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 7; ++i) prompt.push_back(int32_t((i * 131 + 7) % shape.vocab));
  fused.prefill(prompt);
  two.prefill(prompt);
  cpu.prefill(prompt);
  for (int32_t tok : {5, 300, 77}) {
    const auto a = fused.logits(std::span(&tok, 1)), b = two.logits(std::span(&tok, 1));
    EXPECT_EQ(a, b) << "decode at " << fused.n_past();
    EXPECT_LT(test::rel_error(cpu.logits(std::span(&tok, 1)), a), 3e-2) << "decode at " << fused.n_past();
  }
}
