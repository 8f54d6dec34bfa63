#include "llm/model/layer_plan.h"

#include "util/error.h"

#include <algorithm>

namespace wgc::llm {

namespace {

enum class Stage : uint8_t { Activations, Qkv, Attention, Mlp, Output, Cap, Next };

constexpr uint32_t F(Fact f) { return 1u << unsigned(f); }
constexpr uint8_t M(PlanMode m) { return uint8_t(1u << unsigned(m)); }
constexpr uint8_t kDecode = M(PlanMode::Decode), kPrefill = M(PlanMode::Prefill), kServe = M(PlanMode::Serve);
constexpr uint8_t kAnyMode = kDecode | kPrefill | kServe;

using enum Fact;

constexpr Step S(Op op, Mat mat, NormW norm, Buf in, Buf out, bool q8_in = false, bool q8_out = false,
                 bool accumulate = false) {
  Step s;
  s.op = op;
  s.mat = mat;
  s.norm = norm;
  s.in = in;
  s.out = out;
  s.q8_in = q8_in;
  s.q8_out = q8_out;
  s.accumulate = accumulate;
  return s;
}

// Appends a rule's steps, each marked with the rule's name.
struct Emit {
  const PlanFacts& f;
  std::string_view rule;
  std::vector<Step>& out;
  void operator()(Step s) const {
    s.rule = rule;
    out.push_back(s);
  }
  // The plain forms the rules build on.
  void norm(NormW w, Buf in, Buf out_buf, bool q8) const { (*this)(S(Op::Norm, Mat::Qkv, w, in, out_buf, false, q8)); }
  void linear(Mat m, Buf in, Buf out_buf, bool q8, bool acc) const {
    (*this)(S(Op::Linear, m, NormW::Attn, in, out_buf, q8, false, acc));
  }
  // What follows a QKV projection that did not rotate: the q/k norms, then RoPE and the append.
  void qk_tail(bool roped) const {
    if (f[QkNorm]) (*this)(S(Op::HeadNorm, Mat::Qkv, NormW::Q, Buf::Qkv, Buf::Qkv));
    if (!roped) (*this)(S(Op::RopeAppend, Mat::Qkv, NormW::Attn, Buf::Qkv, Buf::Qkv));
  }
};

struct Rule {
  std::string_view name;
  Stage stage;
  uint8_t modes;
  uint32_t needs;   // facts that must hold
  uint32_t absent;  // facts that must not
  void (*emit)(const Emit&);
};

// The rule table. Within a stage, the first rule whose mode and facts match runs; the last of
// each stage is the plain form. The numbers beside a fusion are what it gained where it was
// measured (H200; docs/history has the runs).
constexpr Rule kRules[] = {
    // ---- the activations' form ----
    // Serving, every matrix Q4_0/Q8_0: the RMSNorms, attention and SwiGLU write 8-bit activations
    // (a fixed workgroup per token: batch-invariant) that every linear of the layer reads; without
    // it each batched-q8 linear quantizes its own input. 8B Q4_0: 358 -> 294 dispatches a step.
    {"serve_q8", Stage::Activations, kServe, F(AllBatchedQ8), 0, [](const Emit&) {}},

    // ---- the QKV projection (RMSNorm, Q|K|V, q/k norms, RoPE and the KV-cache append) ----
    // One token: RMSNorm and quantization in every workgroup of the 8-bit matvec, RoPE and the
    // append in its epilogue; one dispatch per part (Q4_K_M: q|k, then v). 8B Q4_0 tg: +3%.
    // (The RoPE fusions store f32: a packed cache takes the plain RopeAppend.)
    {"norm_qkv_rope_q8", Stage::Qkv, kDecode, F(QkvQ8) | F(FitsNormQ8) | F(FitsRopeQ8),
     F(QkNorm) | F(QkvBias) | F(PackedKv),
     [](const Emit& e) { e(S(Op::NormLinearRope, Mat::Qkv, NormW::Attn, Buf::X, Buf::Qkv, true)); }},
    // The same with f32 activations (F16/BF16/F32 weights). 8B F16 tg: 178.2 -> 180.5 t/s.
    {"norm_qkv_rope", Stage::Qkv, kDecode, F(Gpu) | F(QkvOnePart) | F(FitsNormF32) | F(FitsRopeF32),
     F(QkvQ8) | F(QkNorm) | F(QkvBias) | F(PackedKv),
     [](const Emit& e) { e(S(Op::NormLinearRope, Mat::Qkv, NormW::Attn, Buf::X, Buf::Qkv)); }},
    // Serving, every matrix Q4_0/Q8_0: RoPE and the append in the batched QKV linear's epilogue.
    {"qkv_rope_q8", Stage::Qkv, kServe, F(QkvQ8) | F(QkvOnePart) | F(FitsLinearRope), F(QkNorm) | F(PackedKv),
     [](const Emit& e) {
       e.norm(NormW::Attn, Buf::X, Buf::H, true);
       e(S(Op::LinearRope, Mat::Qkv, NormW::Attn, Buf::H, Buf::Qkv, true));
     }},
    // One token: the RMSNorm inside the 8-bit matvec (8B Q4_0 tg: 326 -> 354 t/s).
    {"norm_qkv_q8", Stage::Qkv, kDecode, F(QkvQ8) | F(FitsNormQ8), 0,
     [](const Emit& e) {
       e(S(Op::NormLinear, Mat::Qkv, NormW::Attn, Buf::X, Buf::Qkv, true));
       e.qk_tail(false);
     }},
    // One token, f32 activations: the RMSNorm inside the matvec (8B F16 tg: 165 -> 180.5 with RoPE).
    {"norm_qkv", Stage::Qkv, kDecode, F(Gpu) | F(FitsNormF32), F(QkvQ8) | F(QkvBias),
     [](const Emit& e) {
       e(S(Op::NormLinear, Mat::Qkv, NormW::Attn, Buf::X, Buf::Qkv));
       e.qk_tail(false);
     }},
    {"qkv", Stage::Qkv, kAnyMode, 0, 0,
     [](const Emit& e) {
       e.norm(NormW::Attn, Buf::X, Buf::H, e.f[QkvQ8]);
       e.linear(Mat::Qkv, Buf::H, Buf::Qkv, e.f[QkvQ8], false);
       e.qk_tail(false);
     }},

    // ---- attention and the o projection (added to the residual) ----
    // Gemma's norms after attention: the o projection into H, x += RMSNorm(H) (first: the
    // fusions below add the projection to x directly).
    {"attention_post_norm", Stage::Attention, kAnyMode, F(PostNorms), 0,
     [](const Emit& e) {
       e(S(Op::Attention, Mat::O, NormW::Attn, Buf::Qkv, Buf::Attn));
       if (e.f[OQ8]) e(S(Op::Quantize, Mat::O, NormW::Attn, Buf::Attn, Buf::Attn, false, true));
       e.linear(Mat::O, Buf::Attn, Buf::H, e.f[OQ8], false);
       e(S(Op::NormAdd, Mat::O, NormW::PostAttn, Buf::H, Buf::X, false, false, true));
     }},
    // Attention writing the o projection's 8-bit input (one token: its combine quantizes;
    // serving: the paged attention's combine).
    {"attention_q8", Stage::Attention, kDecode | kServe, F(OQ8) | F(FitsAttnQ8), 0,
     [](const Emit& e) {
       e(S(Op::Attention, Mat::O, NormW::Attn, Buf::Qkv, Buf::Attn, false, true));
       e.linear(Mat::O, Buf::Attn, Buf::X, true, true);
     }},
    // One token, f32 activations: the flash-decoding combine inside the o projection's matvec
    // (1B F16 tg: 923.9 -> 947.3 t/s).
    {"attention_o_combine", Stage::Attention, kDecode, F(Gpu) | F(FitsNormF32) | F(OOnePart), F(OQ8) | F(OBias),
     [](const Emit& e) { e(S(Op::AttentionLinear, Mat::O, NormW::Attn, Buf::Qkv, Buf::X, false, false, true)); }},
    {"attention", Stage::Attention, kAnyMode, 0, 0,
     [](const Emit& e) {
       e(S(Op::Attention, Mat::O, NormW::Attn, Buf::Qkv, Buf::Attn));
       if (e.f[OQ8]) e(S(Op::Quantize, Mat::O, NormW::Attn, Buf::Attn, Buf::Attn, false, true));
       e.linear(Mat::O, Buf::Attn, Buf::X, e.f[OQ8], true);
     }},

    // ---- the MLP (RMSNorm, gate|up, GLU, down; added to the residual) ----
    // A mixture of experts: the RMSNorm (f32: the router and the experts read it), then the
    // experts' step. It cannot be switched off (plan_layer refuses).
    {"moe", Stage::Mlp, kAnyMode, F(Moe), 0,
     [](const Emit& e) {
       e.norm(NormW::Mlp, Buf::X, Buf::H, false);
       e(S(Op::Moe, Mat::GateUp, NormW::Mlp, Buf::H, Buf::X, false, false, true));
     }},
    // Gemma's norm after the MLP: down into H, x += RMSNorm(H); the GLU (GELU-tanh there) as a pass
    // of its own, its 8-bit copy quantized after it.
    {"mlp_post_norm", Stage::Mlp, kAnyMode, F(PostNorms), 0,
     [](const Emit& e) {
       e.norm(NormW::Mlp, Buf::X, Buf::H, e.f[GateUpQ8]);
       e.linear(Mat::GateUp, Buf::H, Buf::Gu, e.f[GateUpQ8], false);
       e(S(Op::Glu, Mat::GateUp, NormW::Mlp, Buf::Gu, Buf::Act));
       if (e.f[DownQ8]) e(S(Op::Quantize, Mat::Down, NormW::Mlp, Buf::Act, Buf::Act, false, true));
       e.linear(Mat::Down, Buf::Act, Buf::H, e.f[DownQ8], false);
       e(S(Op::NormAdd, Mat::Down, NormW::PostMlp, Buf::H, Buf::X, false, false, true));
     }},
    // One token: RMSNorm, gate|up, SwiGLU and the quantization of its output in one 8-bit matvec.
    {"norm_glu_q8", Stage::Mlp, kDecode, F(GateUpQ8) | F(DownQ8) | F(GateUpOnePart) | F(FitsGluQ8) | F(FitsNormQ8),
     F(GateUpBias) | F(GeluGlu),
     [](const Emit& e) {
       e(S(Op::NormLinearGlu, Mat::GateUp, NormW::Mlp, Buf::X, Buf::Act, true, true));
       e.linear(Mat::Down, Buf::Act, Buf::X, true, true);
     }},
    {"glu_q8", Stage::Mlp, kDecode, F(GateUpQ8) | F(DownQ8) | F(GateUpOnePart) | F(FitsGluQ8),
     F(GateUpBias) | F(GeluGlu),
     [](const Emit& e) {
       e.norm(NormW::Mlp, Buf::X, Buf::H, true);
       e(S(Op::LinearGlu, Mat::GateUp, NormW::Mlp, Buf::H, Buf::Act, true, true));
       e.linear(Mat::Down, Buf::Act, Buf::X, true, true);
     }},
    // One token, f32 activations on a GPU (CPU adapters run faster one-output-per-invocation kernels).
    {"norm_glu", Stage::Mlp, kDecode, F(Gpu) | F(GateUpOnePart) | F(FitsGluF32) | F(FitsNormF32),
     F(GateUpQ8) | F(DownQ8) | F(GateUpBias) | F(GeluGlu),
     [](const Emit& e) {
       e(S(Op::NormLinearGlu, Mat::GateUp, NormW::Mlp, Buf::X, Buf::Act));
       e.linear(Mat::Down, Buf::Act, Buf::X, false, true);
     }},
    {"glu", Stage::Mlp, kDecode, F(Gpu) | F(GateUpOnePart) | F(FitsGluF32),
     F(GateUpQ8) | F(DownQ8) | F(GateUpBias) | F(GeluGlu),
     [](const Emit& e) {
       e.norm(NormW::Mlp, Buf::X, Buf::H, false);
       e(S(Op::LinearGlu, Mat::GateUp, NormW::Mlp, Buf::H, Buf::Act));
       e.linear(Mat::Down, Buf::Act, Buf::X, false, true);
     }},
    {"mlp", Stage::Mlp, kAnyMode, 0, 0,
     [](const Emit& e) {
       e.norm(NormW::Mlp, Buf::X, Buf::H, e.f[GateUpQ8]);
       e.linear(Mat::GateUp, Buf::H, Buf::Gu, e.f[GateUpQ8], false);
       // (the GLU writes its 8-bit copy itself for SwiGLU; GELU-tanh's is quantized after it)
       const bool q8_glu = e.f[DownQ8] && !e.f[GeluGlu];
       e(S(Op::Glu, Mat::GateUp, NormW::Mlp, Buf::Gu, Buf::Act, false, q8_glu));
       if (e.f[DownQ8] && !q8_glu) e(S(Op::Quantize, Mat::Down, NormW::Mlp, Buf::Act, Buf::Act, false, true));
       e.linear(Mat::Down, Buf::Act, Buf::X, e.f[DownQ8], true);
     }},

    // ---- the final RMSNorm and the output projection ----
    // 8-bit: the norm stays a pass of its own (the output projection's thousands of workgroups
    // would each redo it: for 8B, 8,016 x 16 KB of reads).
    {"output_q8", Stage::Output, kDecode | kPrefill, F(OutputQ8), 0,
     [](const Emit& e) {
       e.norm(NormW::Final, Buf::X, Buf::H, true);
       e.linear(Mat::Output, Buf::H, Buf::Logits, true, false);
     }},
    // One token, f32 activations: the norm inside the output matvec (1B F16 tg: 923.9 -> 930.5 t/s).
    {"output_norm_linear", Stage::Output, kDecode, F(Gpu) | F(FitsNormF32), 0,
     [](const Emit& e) { e(S(Op::NormLinear, Mat::Output, NormW::Final, Buf::X, Buf::Logits)); }},
    {"output", Stage::Output, kAnyMode, 0, 0,
     [](const Emit& e) {
       e.norm(NormW::Final, Buf::X, Buf::H, false);
       e.linear(Mat::Output, Buf::H, Buf::Logits, false, false);
     }},

    // ---- the logits' soft-cap (Gemma 2), after the output projection ----
    {"final_softcap", Stage::Cap, kAnyMode, F(FinalSoftcap), 0,
     [](const Emit& e) { e(S(Op::Softcap, Mat::Output, NormW::Final, Buf::Logits, Buf::Logits)); }},

    // ---- greedy decoding ----
    // The argmax's last pass also writes the next token's embedding and advances the position on
    // the GPU: no embedding dispatch, no position upload per token (1B F16 tg: +0.6%).
    {"next_token", Stage::Next, kDecode, F(NextToken), 0, [](const Emit&) {}},
};

bool applies(const Rule& r, const PlanFacts& f) {
  if (!(r.modes & M(f.mode))) return false;
  for (size_t i = 0; i < kFacts; ++i) {
    const bool bit_needed = r.needs & (1u << i), bit_absent = r.absent & (1u << i);
    if ((bit_needed && !f.has[i]) || (bit_absent && f.has[i])) return false;
  }
  return std::find(f.off.begin(), f.off.end(), r.name) == f.off.end();
}

// The first rule of the stage that applies (the plain form when the others do not); the plain
// forms cannot be switched off.
const Rule* pick(Stage s, const PlanFacts& f) {
  const Rule* last = nullptr;
  for (const Rule& r : kRules) {
    if (r.stage != s) continue;
    if (applies(r, f)) return &r;
    last = &r;
  }
  return s == Stage::Next || s == Stage::Activations || s == Stage::Cap ? nullptr : last;
}

}  // namespace

std::vector<TensorRole> mat_tensors(Mat m) {
  switch (m) {
    case Mat::Qkv: return {TensorRole::AttnQ, TensorRole::AttnK, TensorRole::AttnV};
    case Mat::O: return {TensorRole::AttnOut};
    case Mat::GateUp: return {TensorRole::FfnGate, TensorRole::FfnUp};
    case Mat::Down: return {TensorRole::FfnDown};
    case Mat::Output: break;
  }
  return {};
}

std::vector<TensorRole> layer_mat_tensors(Mat m, bool moe, const ModelConfig& c) {
  if (moe && m == Mat::GateUp) return {TensorRole::SharedGate, TensorRole::SharedUp};
  if (moe && m == Mat::Down) return {TensorRole::SharedDown};
  if (m == Mat::Qkv && c.fused_qkv) return {TensorRole::AttnQkv};
  if (m == Mat::GateUp && c.fused_gate_up) return {TensorRole::FfnGateUp};
  return mat_tensors(m);
}

std::vector<TensorRole> mat_biases(Mat m) {
  if (m == Mat::Qkv) return {TensorRole::AttnQBias, TensorRole::AttnKBias, TensorRole::AttnVBias};
  return {};
}

TensorRole norm_tensor(NormW n) {
  switch (n) {
    case NormW::Mlp: return TensorRole::FfnNorm;
    case NormW::PostAttn: return TensorRole::AttnPostNorm;
    case NormW::PostMlp: return TensorRole::FfnPostNorm;
    case NormW::Q: return TensorRole::AttnQNorm;
    case NormW::K: return TensorRole::AttnKNorm;
    default: return TensorRole::AttnNorm;
  }
}

std::string_view to_string(PlanMode m) {
  switch (m) {
    case PlanMode::Decode: return "decode";
    case PlanMode::Prefill: return "prefill";
    case PlanMode::Serve: return "serve";
  }
  return "?";
}

std::string_view to_string(Op o) {
  static constexpr std::string_view names[] = {
      "Norm",      "Linear",        "HeadNorm",        "RopeAppend",     "Attention",
      "Quantize",  "Glu",           "NormLinear",      "NormLinearRope", "LinearRope",
      "LinearGlu", "NormLinearGlu", "AttentionLinear", "NormAdd",        "Softcap",
      "Moe"};
  return names[size_t(o)];
}

std::string_view to_string(Fact f) {
  static constexpr std::string_view names[] = {
      "gpu",         "qk_norm",      "qkv_q8",           "qkv_one_part",     "qkv_bias",       "o_q8",
      "o_one_part",  "o_bias",       "gate_up_q8",       "gate_up_one_part", "gate_up_bias",   "down_q8",
      "output_q8",   "fits_norm_q8", "fits_rope_q8",     "fits_norm_f32",    "fits_rope_f32",  "fits_attn_q8",
      "fits_glu_q8", "fits_glu_f32", "fits_linear_rope", "next_token",       "all_batched_q8", "moe",
      "post_norms",  "gelu_glu",     "final_softcap",    "packed_kv"};
  static_assert(std::size(names) == kFacts);
  return names[size_t(f)];
}

std::string to_string(const Step& s) {
  static constexpr std::string_view mats[] = {"Qkv", "O", "GateUp", "Down", "Output"};
  static constexpr std::string_view norms[] = {"attn", "mlp", "q|k", "k", "post_attn", "post_mlp", "final"};
  static constexpr std::string_view bufs[] = {"X", "H", "Qkv", "Attn", "Gu", "Act", "Logits"};
  std::string r(to_string(s.op));
  auto add = [&](std::string_view part) {
    r += ' ';
    r += part;
  };
  switch (s.op) {
    case Op::Norm:
    case Op::NormAdd:
    case Op::HeadNorm: add(norms[size_t(s.norm)]); break;
    case Op::RopeAppend:
    case Op::Attention:
    case Op::Quantize:
    case Op::Softcap:
    case Op::Glu:
    case Op::Moe: break;
    default: add(mats[size_t(s.mat)]);
  }
  add(bufs[size_t(s.in)]);
  if (s.q8_in) r += "(q8)";
  r += s.accumulate ? "->+" : "->";
  r += bufs[size_t(s.out)];
  if (s.q8_out) r += "(q8)";
  r += "  [";
  r += s.rule;
  r += ']';
  return r;
}

std::string LayerPlan::to_string() const {
  std::string r;
  for (const Step& s : steps) r += "  " + llm::to_string(s) + "\n";
  r += "  --- output\n";
  for (const Step& s : output) r += "  " + llm::to_string(s) + "\n";
  if (next_token) r += "  (greedy: next_token)\n";
  return r;
}

std::vector<std::string_view> plan_rule_names() {
  std::vector<std::string_view> n;
  for (const Rule& r : kRules) n.push_back(r.name);
  return n;
}

void check_rule_names(const std::vector<std::string>& names) {
  const auto known = plan_rule_names();
  for (const auto& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw Error("wgc: unknown layer-plan rule '" + n + "' (rules: " + list + ")");
    }
}

LayerPlan plan_layer(const PlanFacts& facts) {
  check_rule_names(facts.off);
  if (facts[Moe] && std::find(facts.off.begin(), facts.off.end(), "moe") != facts.off.end())
    throw Error(
        "wgc: layer plan: the rule 'moe' cannot be switched off (a mixture-of-experts layer has no other form)");
  PlanFacts f = facts;
  if (pick(Stage::Activations, f)) f.set(QkvQ8).set(OQ8).set(GateUpQ8).set(DownQ8);
  LayerPlan p;
  for (Stage s : {Stage::Qkv, Stage::Attention, Stage::Mlp}) {
    const Rule* r = pick(s, f);
    r->emit(Emit{f, r->name, p.steps});
  }
  const Rule* out = pick(Stage::Output, f);
  out->emit(Emit{f, out->name, p.output});
  if (const Rule* cap = pick(Stage::Cap, f)) cap->emit(Emit{f, cap->name, p.output});
  p.next_token = pick(Stage::Next, f) != nullptr;
  return p;
}

}  // namespace wgc::llm
