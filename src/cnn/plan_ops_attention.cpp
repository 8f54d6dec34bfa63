// FusedAttention (cnn/fuse.h makes it from the exporters' MatMul -> [scale] -> [Add mask] ->
// Softmax -> MatMul): one AttentionStep where the shapes are plain (Q [..., lq, d], Kt [..., d,
// lk], V [..., lk, dv], at most 4 batch dims broadcast as MatMul does, a float mask that broadcasts
// to the scores without widening them); otherwise the original ops' steps, planned by their own
// planners, with the intermediate results in scratch buffers.
#include "cnn/plan_ops.h"

#include <algorithm>

namespace wgc::cnn::detail {
namespace {

// Appends `sub` (a planner's plan for one of the chain's ops) to p: its inputs are `ins` (refs of
// p), its output `out`, its scratch buffers renumbered after p's.
void append(NodePlan& p, const NodePlan& sub, const std::vector<Ref>& ins, const Ref& out) {
  int base = int(p.temps.size());
  for (size_t k = 0; k < sub.temps.size(); ++k) {
    p.temps.push_back(sub.temps[k]);
    p.int_temps.resize(p.temps.size() - 1, false);
    p.int_temps.push_back(sub.temp_integer(k));
  }
  auto map = [&](const Ref& r) -> Ref {
    switch (r.kind) {
      case Ref::Input: return ins[size_t(r.index)];
      case Ref::Output: return out;
      case Ref::Temp: return Ref::temp(r.index + base);
      case Ref::Const: return r;
    }
    return r;
  };
  for (const auto& st : sub.steps) {
    NodeStep s = st;
    for (auto& r : s.in) r = map(r);
    s.out = map(s.out);
    p.steps.push_back(std::move(s));
  }
}

Node op_node(const Node& n, const char* op) {
  Node r;
  r.name = n.name;
  r.op = op;
  return r;
}

// The chain's ops one by one (shapes the fused kernel does not take).
NodePlan plan_unfused(const Graph& g, const Node& n, const std::vector<In>& in, float scale, bool has_mask) {
  NodePlan p;
  In cur;
  Ref cur_ref;
  auto stage = [&](const char* op, const std::vector<In>& ins, const std::vector<Ref>& refs, bool last) {
    NodePlan sub = find_planner(op)(g, op_node(n, op), ins);
    if (sub.outs.size() != 1 || sub.outs[0].alias >= 0 || sub.outs[0].constant)
      unsupported(std::string("FusedAttention's ") + op + " planned as a view or constant");
    Ref out = Ref::out(0);
    if (!last) {
      p.temps.push_back(uint64_t(std::max<int64_t>(element_count(sub.outs[0].shape), 1)));
      p.int_temps.resize(p.temps.size(), false);
      out = Ref::temp(int(p.temps.size()) - 1);
    }
    append(p, sub, refs, out);
    cur = In{true, sub.outs[0].shape, nullptr, false};
    cur_ref = out;
    if (last) p.outs.push_back(fresh(sub.outs[0].shape));
  };
  stage("MatMul", {in[0], in[1]}, {Ref::in(0), Ref::in(1)}, false);
  if (scale != 1.f) {
    auto c = floats({}, {scale});
    stage("Mul", {cur, In{true, {}, c, false}}, {cur_ref, Ref::cst(c)}, false);
  }
  if (has_mask) stage("Add", {cur, in[3]}, {cur_ref, Ref::in(3)}, false);
  stage("Softmax", {cur}, {cur_ref}, false);
  stage("MatMul", {cur, in[2]}, {cur_ref, Ref::in(2)}, true);
  return p;
}

NodePlan plan_fused_attention(const Graph& g, const Node& n, const std::vector<In>& in) {
  const In& q = input(in, 0, "Q");
  const In& k = input(in, 1, "K (transposed)");
  const In& v = input(in, 2, "V");
  bool has_mask = in.size() > 3 && in[3].present;
  float scale = n.attr_float("scale", 1.f);
  bool plain = !q.is_int() && !k.is_int() && !v.is_int() && (!has_mask || !in[3].is_int()) && q.shape.size() >= 2 &&
               k.shape.size() >= 2 && v.shape.size() >= 2;
  Shape batch, out;
  int64_t lq = 0, d = 0, lk = 0, dv = 0;
  if (plain) {
    lq = q.shape[q.shape.size() - 2], d = q.shape.back();
    lk = k.shape.back(), dv = v.shape.back();
    plain = k.shape[k.shape.size() - 2] == d && v.shape[v.shape.size() - 2] == lk && d > 0 && lk > 0;
  }
  Shape qb, kb, vb;
  if (plain) {
    qb.assign(q.shape.begin(), q.shape.end() - 2), kb.assign(k.shape.begin(), k.shape.end() - 2);
    vb.assign(v.shape.begin(), v.shape.end() - 2);
    batch = broadcast_shape(broadcast_shape(qb, kb), vb);
    // The scores [batch..., lq, lk] must be what the mask broadcasts to, unwidened.
    if (has_mask) {
      Shape scores = batch;
      scores.push_back(lq), scores.push_back(lk);
      const Shape& ms = in[3].shape;
      plain = ms.size() <= scores.size();
      for (size_t i = 0; plain && i < ms.size(); ++i) {
        int64_t e = scores[scores.size() - ms.size() + i];
        plain = ms[i] == e || ms[i] == 1;
      }
    }
    plain = plain && batch.size() <= FusedAttentionDims::kMaxBatchRank;
  }
  if (!plain) return plan_unfused(g, n, in, scale, has_mask);
  FusedAttentionDims fd;
  fd.rank = uint32_t(batch.size());
  fd.lq = u32(lq, "query rows"), fd.lk = u32(lk, "keys"), fd.d = u32(d, "head size"), fd.dv = u32(dv, "value size");
  fd.scale = scale;
  fd.mask = has_mask;
  auto strides = [&](const Shape& s, int64_t inner, std::array<uint32_t, 4>& st) {
    Shape full(batch.size() - s.size(), 1);
    full.insert(full.end(), s.begin(), s.end());
    auto c = contiguous_strides(full);
    for (size_t i = 0; i < full.size(); ++i) st[i] = full[i] == 1 ? 0 : u32(c[i] * inner, "stride");
  };
  for (size_t i = 0; i < batch.size(); ++i) fd.batch[i] = u32(batch[i], "batch");
  strides(qb, lq * d, fd.q_strides);
  strides(kb, d * lk, fd.k_strides);
  strides(vb, lk * dv, fd.v_strides);
  if (has_mask) {
    Shape scores = batch;
    scores.push_back(lq), scores.push_back(lk);
    Shape ms(scores.size() - in[3].shape.size(), 1);
    ms.insert(ms.end(), in[3].shape.begin(), in[3].shape.end());
    auto c = contiguous_strides(ms);
    for (size_t i = 0; i < batch.size(); ++i) fd.m_strides[i] = ms[i] == 1 ? 0 : u32(c[i], "mask stride");
    fd.m_row = ms[ms.size() - 2] == 1 ? 0 : u32(c[ms.size() - 2], "mask stride");
    fd.m_col = ms.back() == 1 ? 0 : 1;
  }
  check(fd);
  out = batch;
  out.push_back(lq), out.push_back(dv);
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  std::vector<Ref> refs = {Ref::in(0), Ref::in(1), Ref::in(2)};
  if (has_mask) refs.push_back(Ref::in(3));
  p.steps.push_back(NodeStep{AttentionStep{fd}, refs, Ref::out(0), fd.flops()});
  return p;
}

}  // namespace

void add_attention_planners(PlannerTable& t) { t.emplace("FusedAttention", plan_fused_attention); }

}  // namespace wgc::cnn::detail
