// The layer plan's rule table (llm/model/layer_plan.h), without a device: the steps chosen for
// the layer kinds the engines run, every rule reachable, and for every combination of facts a
// plan that computes a layer (each input produced before it is read, in the form it is read,
// the residual added twice, RoPE and the cache append once).
#include "llm/model/layer_plan.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

using namespace wgc;
using namespace wgc::llm;

namespace {

PlanFacts facts(PlanMode mode, std::initializer_list<Fact> on) {
  PlanFacts f;
  f.mode = mode;
  for (Fact x : on) f.set(x);
  return f;
}

// What a GPU offers at ordinary shapes (hidden a multiple of 32 that fits workgroup memory).
std::initializer_list<Fact> kGpuFits = {
    Fact::Gpu,        Fact::FitsNormQ8, Fact::FitsRopeQ8,   Fact::FitsNormF32,    Fact::FitsRopeF32,
    Fact::FitsAttnQ8, Fact::FitsGluQ8,  Fact::FitsGluF32,   Fact::FitsLinearRope, Fact::NextToken,
    Fact::QkvOnePart, Fact::OOnePart,   Fact::GateUpOnePart};

PlanFacts gpu(PlanMode mode, std::initializer_list<Fact> more) {
  PlanFacts f = facts(mode, kGpuFits);
  for (Fact x : more) f.set(x);
  return f;
}

std::vector<std::string> ops(const std::vector<Step>& steps) {
  std::vector<std::string> r;
  for (const Step& s : steps) {
    std::string t = to_string(s);
    r.push_back(t.substr(0, t.find("  [")));
  }
  return r;
}

using V = std::vector<std::string>;

}  // namespace

TEST(LayerPlan, F16DecodeFusesEveryStage) {
  const LayerPlan p = plan_layer(gpu(PlanMode::Decode, {}));
  EXPECT_EQ(ops(p.steps), (V{"NormLinearRope Qkv X->Qkv", "AttentionLinear O Qkv->+X", "NormLinearGlu GateUp X->Act",
                             "Linear Down Act->+X"}));
  EXPECT_EQ(ops(p.output), (V{"NormLinear Output X->Logits"}));
  EXPECT_TRUE(p.next_token);
}

TEST(LayerPlan, Q4DecodeQuantizesInsideTheMatvecs) {
  const LayerPlan p =
      plan_layer(gpu(PlanMode::Decode, {Fact::QkvQ8, Fact::OQ8, Fact::GateUpQ8, Fact::DownQ8, Fact::OutputQ8}));
  EXPECT_EQ(ops(p.steps), (V{"NormLinearRope Qkv X(q8)->Qkv", "Attention Qkv->Attn(q8)", "Linear O Attn(q8)->+X",
                             "NormLinearGlu GateUp X(q8)->Act(q8)", "Linear Down Act(q8)->+X"}));
  EXPECT_EQ(ops(p.output), (V{"Norm final X->H(q8)", "Linear Output H(q8)->Logits"}));
}

TEST(LayerPlan, QkNormKeepsRopeOutOfTheMatvec) {
  const LayerPlan p = plan_layer(gpu(PlanMode::Decode, {Fact::QkNorm, Fact::QkvQ8}));
  EXPECT_EQ(ops(p.steps)[0], "NormLinear Qkv X(q8)->Qkv");
  EXPECT_EQ(ops(p.steps)[1], "HeadNorm q|k Qkv->Qkv");
  EXPECT_EQ(ops(p.steps)[2], "RopeAppend Qkv->Qkv");
  EXPECT_EQ(p.steps[0].rule, "norm_qkv_q8");
}

TEST(LayerPlan, Q4KMixedTypesAndBiasesFallBack) {
  // Q|K|V in two parts (Q4_K_M's v is Q6_K): the 8-bit fusion runs per part; f32 ones need one.
  EXPECT_EQ(plan_layer(gpu(PlanMode::Decode, {Fact::QkvQ8})).steps[0].op, Op::NormLinearRope);
  PlanFacts two = gpu(PlanMode::Decode, {});
  two.set(Fact::QkvOnePart, false).set(Fact::GateUpOnePart, false);
  const LayerPlan p = plan_layer(two);
  EXPECT_EQ(p.steps[0].rule, "norm_qkv");
  EXPECT_EQ(p.steps[1].op, Op::RopeAppend);
  EXPECT_EQ(ops(p.steps).back(), "Linear Down Act->+X");
  EXPECT_EQ(p.steps[p.steps.size() - 2].op, Op::Glu);
  // Biases (Qwen 2) keep the f32 norm out of the QKV matvec.
  EXPECT_EQ(plan_layer(gpu(PlanMode::Decode, {Fact::QkvBias})).steps[0].rule, "qkv");
}

TEST(LayerPlan, PrefillRunsThePlainForms) {
  const LayerPlan p =
      plan_layer(gpu(PlanMode::Prefill, {Fact::QkvQ8, Fact::OQ8, Fact::GateUpQ8, Fact::DownQ8, Fact::OutputQ8}));
  EXPECT_EQ(ops(p.steps),
            (V{"Norm attn X->H(q8)", "Linear Qkv H(q8)->Qkv", "RopeAppend Qkv->Qkv", "Attention Qkv->Attn",
               "Quantize Attn->Attn(q8)", "Linear O Attn(q8)->+X", "Norm mlp X->H(q8)", "Linear GateUp H(q8)->Gu",
               "Glu Gu->Act(q8)", "Linear Down Act(q8)->+X"}));
  EXPECT_FALSE(p.next_token);
}

TEST(LayerPlan, ServeQuantizesOncePerActivation) {
  const LayerPlan p = plan_layer(gpu(PlanMode::Serve, {Fact::AllBatchedQ8}));
  EXPECT_EQ(ops(p.steps),
            (V{"Norm attn X->H(q8)", "LinearRope Qkv H(q8)->Qkv", "Attention Qkv->Attn(q8)", "Linear O Attn(q8)->+X",
               "Norm mlp X->H(q8)", "Linear GateUp H(q8)->Gu", "Glu Gu->Act(q8)", "Linear Down Act(q8)->+X"}));
  EXPECT_EQ(ops(p.output), (V{"Norm final X->H", "Linear Output H->Logits"}));
  // Without serve_q8 (or with a matrix of another type) each linear quantizes for itself.
  PlanFacts off = gpu(PlanMode::Serve, {Fact::AllBatchedQ8});
  off.off = {"serve_q8"};
  EXPECT_EQ(ops(plan_layer(off).steps),
            (V{"Norm attn X->H", "Linear Qkv H->Qkv", "RopeAppend Qkv->Qkv", "Attention Qkv->Attn", "Linear O Attn->+X",
               "Norm mlp X->H", "Linear GateUp H->Gu", "Glu Gu->Act", "Linear Down Act->+X"}));
}

TEST(LayerPlan, CpuEngineRunsThePlainForms) {
  const LayerPlan p = plan_layer(facts(PlanMode::Prefill, {Fact::QkNorm}));
  EXPECT_EQ(ops(p.steps), (V{"Norm attn X->H", "Linear Qkv H->Qkv", "HeadNorm q|k Qkv->Qkv", "RopeAppend Qkv->Qkv",
                             "Attention Qkv->Attn", "Linear O Attn->+X", "Norm mlp X->H", "Linear GateUp H->Gu",
                             "Glu Gu->Act", "Linear Down Act->+X"}));
  // A CPU adapter decoding: no f32-activation fusions (they do not pay there).
  PlanFacts a = gpu(PlanMode::Decode, {});
  a.set(Fact::Gpu, false);
  EXPECT_EQ(plan_layer(a).steps[0].rule, "qkv");
}

// Gemma: the o projection and the MLP's down projection into H, each added to x through its own
// norm; the GELU-tanh GLU a pass of its own (no SwiGLU fusion), quantized after it where 8-bit.
TEST(LayerPlan, GemmaNormsAfterAttentionAndMlp) {
  const LayerPlan p = plan_layer(gpu(PlanMode::Decode, {Fact::PostNorms, Fact::GeluGlu, Fact::QkNorm}));
  EXPECT_EQ(ops(p.steps), (V{"NormLinear Qkv X->Qkv", "HeadNorm q|k Qkv->Qkv", "RopeAppend Qkv->Qkv",
                             "Attention Qkv->Attn", "Linear O Attn->H", "NormAdd post_attn H->+X", "Norm mlp X->H",
                             "Linear GateUp H->Gu", "Glu Gu->Act", "Linear Down Act->H", "NormAdd post_mlp H->+X"}));
  const LayerPlan q = plan_layer(gpu(PlanMode::Serve, {Fact::AllBatchedQ8, Fact::PostNorms, Fact::GeluGlu}));
  EXPECT_EQ(ops(q.steps),
            (V{"Norm attn X->H(q8)", "LinearRope Qkv H(q8)->Qkv", "Attention Qkv->Attn", "Quantize Attn->Attn(q8)",
               "Linear O Attn(q8)->H", "NormAdd post_attn H->+X", "Norm mlp X->H(q8)", "Linear GateUp H(q8)->Gu",
               "Glu Gu->Act", "Quantize Act->Act(q8)", "Linear Down Act(q8)->H", "NormAdd post_mlp H->+X"}));
  // GeGLU without the sandwich: the plain MLP, its GLU quantized after it.
  const std::vector<std::string> g =
      ops(plan_layer(gpu(PlanMode::Decode, {Fact::GeluGlu, Fact::GateUpQ8, Fact::DownQ8})).steps);
  ASSERT_GE(g.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(g.end() - 5, g.end()),
            (V{"Norm mlp X->H(q8)", "Linear GateUp H(q8)->Gu", "Glu Gu->Act", "Quantize Act->Act(q8)",
               "Linear Down Act(q8)->+X"}));
}

TEST(LayerPlan, RulesSwitchOffByNameAndUnknownNamesAreErrors) {
  PlanFacts f = gpu(PlanMode::Decode, {});
  f.off = {"norm_qkv_rope", "attention_o_combine", "next_token"};
  const LayerPlan p = plan_layer(f);
  EXPECT_EQ(p.steps[0].rule, "norm_qkv");
  EXPECT_EQ(p.steps[2].op, Op::Attention);
  EXPECT_FALSE(p.next_token);
  f.off = {"norm_qkv_rope", "no_such_rule"};
  try {
    plan_layer(f);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no_such_rule'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("norm_qkv_rope_q8"), std::string::npos) << e.what();
  }
}

namespace {

// Whether the plan computes a layer (or the output): every read has been written in the form it
// is read (f32, or the 8-bit copy), the residual X gets two additions (attention, MLP), the cache
// is appended once after Q|K|V exist. Returns "" or what is wrong.
std::string check_dataflow(const std::vector<Step>& steps, bool output) {
  std::set<std::pair<Buf, bool>> have = {{Buf::X, false}};
  int residual_adds = 0, appends = 0;
  for (const Step& s : steps) {
    const bool fused_norm = s.op == Op::NormLinear || s.op == Op::NormLinearRope || s.op == Op::NormLinearGlu;
    // A fused norm reads X in f32 and quantizes inside; others read the form q8_in says.
    const bool read_q8 = s.q8_in && !fused_norm;
    if (s.op == Op::AttentionLinear) {
      if (!have.count({Buf::Qkv, false})) return "attention before Q|K|V";
    } else if (!have.count({s.in, read_q8})) {
      return to_string(s) + " reads what no step wrote";
    }
    if (s.op == Op::Attention || s.op == Op::AttentionLinear)
      if (appends != 1) return "attention before the cache append";
    if (s.op == Op::RopeAppend || s.op == Op::NormLinearRope || s.op == Op::LinearRope) ++appends;
    if (s.out == Buf::X) {
      if (!s.accumulate) return to_string(s) + " overwrites the residual";
      ++residual_adds;
    }
    have.insert({s.out, s.q8_out});
  }
  if (output) return have.count({Buf::Logits, false}) ? "" : "no logits";
  if (appends != 1) return std::to_string(appends) + " cache appends";
  if (residual_adds != 2) return std::to_string(residual_adds) + " residual additions";
  return "";
}

}  // namespace

// Every combination of facts (sampled) in every mode gives a plan that computes the layer, and
// every rule fires for some of them.
TEST(LayerPlan, EveryPlanComputesALayerAndEveryRuleFires) {
  std::mt19937 rng(7);
  std::set<std::string_view> fired;
  bool next = false;
  for (int i = 0; i < 20000; ++i) {
    PlanFacts f;
    f.mode = PlanMode(rng() % 3);
    // mostly on (the fusions need many facts), or half (the rules that need many facts absent)
    const unsigned odds = i % 2 ? 2 : 4;
    for (size_t k = 0; k < kFacts; ++k) f.has[k] = rng() % odds != 0;
    const LayerPlan p = plan_layer(f);
    std::string why = check_dataflow(p.steps, false);
    if (why.empty()) why = check_dataflow(p.output, true);
    ASSERT_EQ(why, "") << "mode " << to_string(f.mode) << ":\n" << p.to_string();
    for (const Step& s : p.steps) fired.insert(s.rule);
    for (const Step& s : p.output) fired.insert(s.rule);
    if (p.next_token) next = true;
    if (f.mode == PlanMode::Serve && f[Fact::AllBatchedQ8]) fired.insert("serve_q8");
  }
  if (next) fired.insert("next_token");
  for (std::string_view r : plan_rule_names()) EXPECT_TRUE(fired.count(r)) << "rule " << r << " never fired";
}
