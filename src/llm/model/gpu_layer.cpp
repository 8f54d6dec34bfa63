#include "llm/model/gpu_layer.h"

#include "util/error.h"

#include <algorithm>

namespace wgc::llm {

bool serve_q8_layer(const LlamaWeights& w, int li) {
  for (Mat m : kLayerMats) {
    const LinearGroup& g = w.mat(li, m);
    // A mixture-of-experts layer without a shared expert has no GateUp and Down; its experts and
    // router read the f32 RMSNorm (the moe rule), so they do not decide.
    if (g.parts.empty() && w.layers[size_t(li)].moe) continue;
    if (!group_batched_q8(g)) return false;
  }
  return true;
}

PlanFacts gpu_plan_facts(const LlmOps& ops, const LlamaWeights& w, int li, PlanMode mode, bool q8_activations,
                         KvType kv, bool serve_q8) {
  PlanFacts f;
  f.mode = mode;
  using enum Fact;
  const bool serve = mode == PlanMode::Serve;
  f.set(Gpu, !ops.context().adapter().is_cpu());
  f.set(QkNorm, w.cfg.qk_norm || w.cfg.qk_norm_whole);
  if (li >= 0) {
    f.set(AllBatchedQ8, serve && serve_q8);
    auto group = [&](Mat m, Fact q8, Fact one_part, Fact bias) {
      const LinearGroup& g = w.mat(li, m);
      f.set(q8, !serve && q8_activations && group_q8(g));
      f.set(one_part, g.parts.size() == 1);
      f.set(bias, !g.biases.empty());
    };
    group(Mat::Qkv, QkvQ8, QkvOnePart, QkvBias);
    group(Mat::O, OQ8, OOnePart, OBias);
    const LinearGroup& gu = w.mat(li, Mat::GateUp);
    f.set(GateUpQ8, !serve && q8_activations && group_q8(gu));
    f.set(GateUpOnePart, gu.parts.size() == 1);
    f.set(GateUpBias, !gu.biases.empty());
    // The f32 gate|up + GLU matvec under this tuning (its row groups, the kx schedule).
    f.set(FitsGluF32,
          gu.parts.size() == 1 && ops.matvec_fusions(gu.parts[0].type, w.hidden, nullptr, gu.parts[0].rows).glu);
    f.set(DownQ8, !serve && q8_activations && group_q8(w.mat(li, Mat::Down)));
  }
  f.set(OutputQ8, !serve && q8_activations && supports_q8(w.output().type));
  // What each kernel family can fold in at these sizes (the ops' own answers, asked once).
  const LlmOps::Q8Fusions q8 = ops.matvec_q8_fusions(w.hidden);
  const LlmOps::MatvecFusions f32 = ops.matvec_fusions(TensorType::F32, w.hidden);
  const LlmOps::ServingFusions serving = ops.serving_fusions(int(w.hd));
  f.set(FitsNormQ8, q8.norm);
  f.set(FitsRopeQ8, q8.rope);
  f.set(FitsNormF32, f32.norm);
  f.set(FitsRopeF32, f32.rope);
  f.set(FitsAttnQ8, mode == PlanMode::Decode ? w.hd % 32 == 0 : serve ? serving.paged_q8 : false);
  f.set(FitsGluQ8, w.ffn % 32 == 0);
  f.set(FitsLinearRope, serving.rope);
  // (the fused argmax writes the next token's embedding unscaled: not for Gemma's scaled one)
  f.set(NextToken, mode == PlanMode::Decode && w.cfg.embedding_scale == 1.0);
  f.set(Moe, li >= 0 && w.layers[size_t(li)].moe.has_value());
  f.set(PostNorms, w.cfg.norm_placement == NormPlacement::Sandwich);
  f.set(GeluGlu, w.cfg.activation == Activation::GeluTanh);
  f.set(FinalSoftcap, w.cfg.final_logit_softcap > 0);
  f.set(PackedKv, kv != KvType::F32);
  return f;
}

GpuPlan plan_gpu(const LlmOps& ops, const LlamaWeights& w, PlanMode mode, bool q8_activations,
                 const std::vector<std::string>& off, KvType kv, bool serve_q8) {
  GpuPlan p;
  for (int li = 0; li < int(w.layers.size()); ++li) {
    PlanFacts f = gpu_plan_facts(ops, w, li, mode, q8_activations, kv, serve_q8 && serve_q8_layer(w, li));
    f.off = off;
    p.layers.push_back(plan_layer(f).steps);
  }
  PlanFacts f = gpu_plan_facts(ops, w, -1, mode, q8_activations, kv);
  f.off = off;
  const LayerPlan out = plan_layer(f);
  p.output = out.output;
  p.next_token = out.next_token;
  return p;
}

namespace {

// One pass's buffers by the plan's names, with their row widths.
struct Bufs {
  const GpuActs& a;
  const LlamaWeights& w;
  const Tensor& f32(Buf b) const {
    switch (b) {
      case Buf::X: return a.x;
      case Buf::H: return a.h;
      case Buf::Qkv: return a.qkv;
      case Buf::Attn: return a.attn;
      case Buf::Gu: return a.gu;
      case Buf::Act: return a.act;
      case Buf::Logits: break;
    }
    throw Error("wgc: layer plan: no f32 buffer for this step");
  }
  const Q8Act& q8(Buf b) const {
    switch (b) {
      case Buf::H: return a.hq;
      case Buf::Attn: return a.attnq;
      case Buf::Act: return a.actq;
      default: throw Error("wgc: layer plan: no 8-bit copy of this buffer");
    }
  }
  int64_t width(Buf b) const {
    switch (b) {
      case Buf::X:
      case Buf::H: return w.hidden;
      case Buf::Qkv: return w.qkv_dim;
      case Buf::Attn: return w.nh * w.hd;
      case Buf::Gu: return 2 * w.ffn;
      case Buf::Act: return w.ffn;
      case Buf::Logits: return w.vocab;
    }
    return 0;
  }
};

// Op::Moe: the router (and the shared expert's gate) into logits, the top-k and the grouping by
// expert on the GPU, each routed pair's gate|up, SwiGLU and down through the stacked experts, the
// shared expert, and their weighted sum added to x.
void record_moe(const LlmOps& ops, Batch& b, const LlamaWeights& w, int li, const Tensor& h, const Tensor& x,
                const GpuActs& a, const GpuPass& p) {
  const LlamaLayer& L = w.layers[size_t(li)];
  const MoeWeights& m = *L.moe;
  const MoeActs& ma = a.moe;
  if (!ma.routing.ids) throw Error("wgc: layer plan: a mixture-of-experts step without its buffers");
  const int n = p.n;
  const int64_t H = w.hidden, F = m.ffn, ls = m.router.total_rows();
  record_linear(ops, b, m.router, h, ma.logits, n, ls, false, p.lin);
  ops.moe_route(b, ma.logits, ls, n, m.norm_topk, ma.routing);
  for (const MoeStack& st : m.gate_up)
    ops.moe_linear(b, st.w, st.rows, h, H, false, ma.gu, 2 * F, st.y_off, n, ma.routing);
  const int pairs = n * int(m.k);
  ops.swiglu(b, ma.gu, 2 * F, 0, ma.gu, 2 * F, F, ma.act, pairs, int(F));
  ops.moe_linear(b, m.down.w, m.down.rows, ma.act, F, true, ma.yd, H, 0, n, ma.routing);
  Tensor ys;
  if (m.shared_ffn) {
    const int64_t S = m.shared_ffn;
    record_linear(ops, b, L.mat(Mat::GateUp), h, ma.sgu, n, 2 * S, false, p.lin);
    ops.swiglu(b, ma.sgu, 2 * S, 0, ma.sgu, 2 * S, S, ma.sact, n, int(S));
    record_linear(ops, b, L.mat(Mat::Down), ma.sact, ma.ys, n, H, false, p.lin);
    ys = ma.ys;
  }
  ops.moe_combine(b, ma.yd, ma.routing, n, H, ys, ma.logits, ls, m.n_experts, x);
}

}  // namespace

int layer_window(const ModelConfig& c, int li) {
  return c.layer_is_sliding(li) ? int(std::min<int64_t>(*c.sliding_window, INT32_MAX)) : 0;
}

MoeActs make_moe_acts(const Context& ctx, const LlamaWeights& w, int max_tokens) {
  MoeActs a;
  const MoeWeights* m = nullptr;
  int64_t logits = 0, shared = 0;
  for (const LlamaLayer& L : w.layers)
    if (L.moe) {
      m = &*L.moe;
      logits = std::max(logits, L.moe->router.total_rows());
      shared = std::max(shared, L.moe->shared_ffn);
    }
  if (!m) return a;
  const int64_t T = max_tokens, P = T * m->k;
  a.routing = make_moe_routing(ctx, max_tokens, int(m->n_experts), int(m->k));
  a.logits = make_tensor(ctx, {T, logits});
  a.gu = make_tensor(ctx, {P, 2 * m->ffn});
  a.act = make_tensor(ctx, {P, m->ffn});
  a.yd = make_tensor(ctx, {P, w.hidden});
  if (shared) {
    a.sgu = make_tensor(ctx, {T, 2 * shared});
    a.sact = make_tensor(ctx, {T, shared});
    a.ys = make_tensor(ctx, {T, w.hidden});
  }
  return a;
}

void record_layer(const LlmOps& ops, Batch& b, std::span<const Step> steps, const LlamaWeights& w, int li,
                  const KvLayer& cache, const RopeTable& global_rope, const GpuActs& a, const GpuPass& pass) {
  // The layer's own attention arguments: its sliding window (Mistral: every layer; Gemma: some).
  // Its scores' scale (Gemma: query_pre_attn_scalar) and its rope table (Gemma 3's sliding layers:
  // their own base).
  GpuPass p = pass;
  PagedAttentionPlan paged;
  const int model_layer = w.first_layer + li;  // a device of a layer split holds a range
  p.attention.window = layer_window(w.cfg, model_layer);
  p.attention.scale = float(w.cfg.attention_scale());
  p.attention.softcap = float(w.cfg.attn_logit_softcap);
  if (pass.paged) {
    paged = *pass.paged;
    paged.args.window = p.attention.window;
    paged.args.scale = p.attention.scale;
    paged.args.softcap = p.attention.softcap;
    p.paged = &paged;
  }
  const RopeTable& rope = pass.sliding_rope && w.cfg.layer_is_sliding(model_layer) ? *pass.sliding_rope : global_rope;
  const Bufs buf{a, w};
  const int n = p.n;
  const float eps = w.eps;
  for (const Step& s : steps) {
    const LinearGroup& g = w.mat(li, s.mat);
    const Tensor& nw = w.norm_weight(li, s.norm);
    const int64_t out_w = buf.width(s.out);
    switch (s.op) {
      case Op::Norm:
        if (s.q8_out)
          ops.rms_norm_q8(b, buf.f32(s.in), nw, buf.q8(s.out), n, eps, -1, 0, p.serve ? kBatchedQuantWg : 0);
        else
          ops.rms_norm(b, buf.f32(s.in), nw, buf.f32(s.out), n, int(w.hidden), eps);
        break;
      case Op::Linear:
        if (s.q8_in)
          record_linear_q8(ops, b, g, buf.q8(s.in), buf.f32(s.out), n, out_w, s.accumulate, p.serve);
        else
          record_linear(ops, b, g, buf.f32(s.in), buf.f32(s.out), n, out_w, s.accumulate, p.lin);
        break;
      case Op::HeadNorm: {
        const Tensor& qkv = buf.f32(s.in);
        // OLMoE (qk_norm_whole): q and k each normalised over all their heads at once, one "head".
        const bool whole = w.cfg.qk_norm_whole;
        const int qh = whole ? 1 : int(w.nh), kh = whole ? 1 : int(w.nkv);
        ops.head_rms_norm(b, qkv, w.norm_weight(li, NormW::Q), n, qh, int(w.nh * w.hd) / qh, w.qkv_dim, 0, eps);
        ops.head_rms_norm(b, qkv, w.norm_weight(li, NormW::K), n, kh, int(w.nkv * w.hd) / kh, w.qkv_dim, w.nh * w.hd,
                          eps);
        break;
      }
      case Op::RopeAppend: ops.rope_kv_append(b, buf.f32(s.in), rope, cache, p.rope); break;
      case Op::Attention:
        if (p.paged) {
          if (s.q8_out)
            ops.paged_attention_q8(b, cache, buf.f32(s.in), buf.q8(s.out), *p.paged);
          else
            ops.paged_attention(b, cache, buf.f32(s.in), buf.f32(s.out), *p.paged);
        } else if (s.q8_out) {
          ops.attention_decode_q8(b, cache, buf.f32(s.in), buf.q8(s.out), p.attention);
        } else {
          ops.attention(b, cache, buf.f32(s.in), buf.f32(s.out), p.attention);
        }
        break;
      case Op::Quantize: ops.quantize_q8(b, buf.f32(s.in), buf.q8(s.out), n); break;
      case Op::Softcap: throw Error("wgc: layer plan: the soft-cap is an output step");
      case Op::NormAdd: ops.rms_norm_add(b, buf.f32(s.in), nw, buf.f32(s.out), n, int(w.hidden), eps); break;
      case Op::Glu:
        if (w.cfg.activation == Activation::GeluTanh) {
          if (s.q8_out) throw Error("wgc: layer plan: no 8-bit GeGLU step (quantize after it)");
          ops.swiglu(b, buf.f32(s.in), 2 * w.ffn, 0, buf.f32(s.in), 2 * w.ffn, w.ffn, buf.f32(s.out), n, int(w.ffn),
                     w.ffn, true);
        } else if (s.q8_out)
          ops.swiglu_q8(b, buf.f32(s.in), 2 * w.ffn, w.ffn, buf.q8(s.out), n);
        else
          ops.swiglu(b, buf.f32(s.in), 2 * w.ffn, 0, buf.f32(s.in), 2 * w.ffn, w.ffn, buf.f32(s.out), n, int(w.ffn));
        break;
      case Op::NormLinear:
        if (s.q8_in)
          record_rms_norm_linear_q8(ops, b, g, buf.f32(s.in), nw, eps, buf.f32(s.out), out_w, s.accumulate);
        else
          record_rms_norm_linear(ops, b, g, buf.f32(s.in), nw, eps, buf.f32(s.out), out_w, s.accumulate);
        break;
      case Op::NormLinearRope:
        if (s.q8_in) {
          int64_t row0 = 0;
          for (const GpuWeight& part : g.parts) {
            ops.rms_norm_qkv_rope_q8(b, buf.f32(s.in), nw, eps, part, buf.f32(s.out), rope, cache, p.rope, row0);
            row0 += part.rows;
          }
        } else {
          ops.rms_norm_qkv_rope(b, buf.f32(s.in), nw, eps, g.parts[0], buf.f32(s.out), rope, cache, p.rope);
        }
        break;
      case Op::LinearRope:
        ops.linear_batched_q8_rope(b, g.parts[0], buf.q8(s.in), buf.f32(s.out), n, rope, cache, p.rope,
                                   g.biases.empty() ? Tensor() : g.biases[0]);
        break;
      case Op::LinearGlu:
        if (s.q8_in)
          ops.linear_swiglu_q8(b, g.parts[0], buf.q8(s.in), buf.q8(s.out));
        else
          ops.linear_swiglu(b, g.parts[0], buf.f32(s.in), buf.f32(s.out));
        break;
      case Op::NormLinearGlu:
        if (s.q8_in)
          ops.rms_norm_swiglu_q8(b, buf.f32(s.in), nw, eps, g.parts[0], buf.q8(s.out));
        else
          ops.rms_norm_swiglu(b, buf.f32(s.in), nw, eps, g.parts[0], buf.f32(s.out));
        break;
      case Op::Moe: record_moe(ops, b, w, li, buf.f32(s.in), buf.f32(s.out), a, p); break;
      case Op::AttentionLinear: {
        // The combine folds into the o projection where its kernel takes these partials (their
        // split count follows the cache); else it runs as a pass of its own.
        const DecodePartials dp = ops.attention_decode_partials(b, cache, buf.f32(s.in), p.attention);
        if (ops.fuses_combine(g.parts[0].type, dp)) {
          LinearOptions lo;
          lo.accumulate = s.accumulate;
          ops.combine_linear(b, dp, g.parts[0], buf.f32(s.out), lo);
        } else {
          ops.attention_combine(b, dp, a.attn);
          record_linear(ops, b, g, a.attn, buf.f32(s.out), n, out_w, s.accumulate, p.lin);
        }
        break;
      }
    }
  }
}

void record_output_row(const LlmOps& ops, Batch& b, std::span<const Step> steps, const LlamaWeights& w,
                       const GpuActs& a, const Tensor& last, const Tensor& logits, int64_t row) {
  const uint64_t at = uint64_t(row) * uint64_t(w.hidden);
  for (const Step& s : steps) {
    switch (s.op) {
      case Op::Norm:
        if (s.q8_out) {
          ops.rms_norm_q8(b, a.x, w.norm, a.hq, 1, w.eps, w.hidden, int64_t(at));
        } else {
          b.copy(a.x, at * 4, last, 0, uint64_t(w.hidden) * 4);
          ops.rms_norm(b, last, w.norm, a.h, 1, int(w.hidden), w.eps);
        }
        break;
      case Op::Linear:
        if (s.q8_in)
          ops.linear_q8(b, w.output(), a.hq, logits, 1);
        else
          ops.linear(b, w.output(), a.h, logits, 1);
        break;
      case Op::NormLinear:  // one token: no copy, no norm pass
        ops.rms_norm_linear(b, a.x, w.norm, w.eps, w.output(), logits);
        break;
      case Op::Softcap: ops.softcap(b, logits, w.vocab, float(w.cfg.final_logit_softcap)); break;
      default: throw Error("wgc: the output plan has a step this engine does not run: " + to_string(s));
    }
  }
}

void record_embedding(const LlmOps& ops, Batch& b, const LlamaWeights& w, const Tensor& ids, const Tensor& out, int n) {
  ops.embedding(b, w.embed, ids, out, n);
  if (w.cfg.embedding_scale != 1.0) ops.scale(b, out, int64_t(n) * w.hidden, float(w.cfg.embedding_scale));
}

void record_output_rows(const LlmOps& ops, Batch& b, std::span<const Step> steps, const LlamaWeights& w,
                        const GpuActs& a, const Tensor& logits, int n, bool f32) {
  for (const Step& s : steps) {
    switch (s.op) {
      case Op::Norm:
        if (s.q8_out && !f32)
          ops.rms_norm_q8(b, a.x, w.norm, a.hq, n, w.eps);
        else
          ops.rms_norm(b, a.x, w.norm, a.h, n, int(w.hidden), w.eps);
        break;
      case Op::Linear:
        if (s.q8_in && !f32)
          ops.linear_q8(b, w.output(), a.hq, logits, n);
        else
          ops.linear(b, w.output(), a.h, logits, n);
        break;
      case Op::Softcap: ops.softcap(b, logits, int64_t(n) * w.vocab, float(w.cfg.final_logit_softcap)); break;
      default: throw Error("wgc: the many-token output plan has a step this engine does not run: " + to_string(s));
    }
  }
}

}  // namespace wgc::llm
