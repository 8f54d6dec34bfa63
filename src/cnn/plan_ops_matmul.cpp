// Matrix products: Gemm, MatMul (batched, broadcast) and Einsum (the matmul-shaped equations).
// Planners of plan_ops.h; attribute defaults and opset differences follow the ONNX operator
// specification (opsets 7..18).
#include "cnn/plan_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace wgc::cnn::detail {
namespace {

// --- matrix products -----------------------------------------------------------------------------

NodePlan plan_gemm(const Graph&, const Node& n, const std::vector<In>& in) {
  const In& a = float_input(in, 0, "A");
  const In& b = float_input(in, 1, "B");
  if (a.shape.size() != 2 || b.shape.size() != 2)
    bad("A " + shape_str(a.shape) + " and B " + shape_str(b.shape) + " must be matrices");
  bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  float alpha = n.attr_float("alpha", 1.f), beta = n.attr_float("beta", 1.f);
  int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  int64_t kb = tb ? b.shape[1] : b.shape[0], nn = tb ? b.shape[0] : b.shape[1];
  if (k != kb) bad("inner dimensions differ: A " + shape_str(a.shape) + ", B " + shape_str(b.shape));
  if (k == 0) unsupported("a product over an empty inner dimension");
  Shape out = {m, nn};
  NodePlan p;
  p.outs.push_back(fresh(out));
  bool has_c = in.size() > 2 && in[2].present && beta != 0.f;
  Ref ra = Ref::in(0), rb = Ref::in(1);
  if (ta) {  // A^T into a scratch buffer
    int t = int(p.temps.size());
    p.temps.push_back(uint64_t(m * k));
    p.steps.push_back(
        copy_step(Ref::in(0), Ref::temp(t),
                  copy_dims(std::vector<int64_t>{m, k}, std::vector<int64_t>{1, m}, 0, std::vector<int64_t>{k, 1}, 0)));
    ra = Ref::temp(t);
  }
  if (alpha != 1.f && b.constant) {  // alpha folded into constant weights
    std::vector<float> v = b.constant->f;
    for (auto& e : v) e *= alpha;
    rb = Ref::cst(floats(b.shape, v));
    alpha = 1.f;
  }
  if (m * nn == 0) return p;
  // The classifier's form, y = x W^T + c with W and c constants and c one value per column: a 1x1
  // convolution of m "images" of k channels with the bias fused, one kernel (split K fills the GPU
  // at batch 1, where the SGEMM's tiles leave it idle, and the bias needs no pass of its own).
  if (!ta && tb && alpha == 1.f && has_c && in[2].constant && !in[2].is_int() && element_count(in[2].shape) == nn &&
      (in[2].shape.size() == 1 || (in[2].shape.size() == 2 && in[2].shape[0] == 1))) {
    HostTensorPtr w = rb.kind == Ref::Const ? rb.c : b.constant;
    if (w) {
      std::vector<float> bias = in[2].constant->f;
      for (auto& e : bias) e *= beta;
      Conv2dDims d;
      d.n = u32(m, "M"), d.c_in = u32(k, "K"), d.h = d.w = 1, d.c_out = u32(nn, "N");
      ConvEpilogue ep;
      ep.bias = true;
      p.steps.push_back({ConvStep{d, ep, w, floats({nn}, std::move(bias))}, {ra}, Ref::out(0), d.flops()});
      return p;
    }
  }
  bool scale = alpha != 1.f;
  auto next_dst = [&](bool last) {
    if (last) return Ref::out(0);
    p.temps.push_back(uint64_t(m * nn));
    return Ref::temp(int(p.temps.size()) - 1);
  };
  Ref prod_ref = next_dst(!scale && !has_c);
  MatmulDims md{u32(m, "M"), u32(nn, "N"), u32(k, "K"), tb};
  p.steps.push_back({MatmulStep{md}, {ra, rb}, prod_ref, md.flops()});
  if (scale) {
    Ref dst = next_dst(!has_c);
    p.steps.push_back(binary_step(BinaryOp::Mul, out, {}, prod_ref, Ref::cst(floats({}, {alpha})), dst));
    prod_ref = dst;
  }
  if (has_c) {
    const In& c = float_input(in, 2, "C");
    Ref rc = Ref::in(2);
    if (beta != 1.f && c.constant) {
      std::vector<float> v = c.constant->f;
      for (auto& e : v) e *= beta;
      rc = Ref::cst(floats(c.shape, v));
    } else if (beta != 1.f) {  // beta C into a scratch buffer
      int t = int(p.temps.size());
      p.temps.push_back(uint64_t(element_count(c.shape)));
      p.steps.push_back(
          binary_step(BinaryOp::Mul, c.shape, {}, Ref::in(2), Ref::cst(floats({}, {beta})), Ref::temp(t)));
      rc = Ref::temp(t);
    }
    if (broadcast_shape(out, c.shape) != out)
      bad("C " + shape_str(c.shape) + " does not broadcast to " + shape_str(out));
    p.steps.push_back(binary_step(BinaryOp::Add, out, c.shape, prod_ref, rc, Ref::out(0)));
  }
  return p;
}

NodePlan plan_matmul(const Graph&, const Node&, const std::vector<In>& in) {
  const In& a = float_input(in, 0, "A");
  const In& b = float_input(in, 1, "B");
  if (a.shape.empty() || b.shape.empty()) bad("MatMul of a scalar");
  Shape as = a.shape, bs = b.shape;
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), kb = bs[bs.size() - 2], nn = bs.back();
  if (k != kb) bad("inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  if (k == 0) unsupported("a product over an empty inner dimension");
  Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shape(abatch, bbatch);
  Shape out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(nn);
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  // B one matrix: A's batch dims fold into M and the SGEMM ladder runs it.
  if (bbatch.empty() || element_count(bbatch) == 1) {
    if (element_count(abatch) == element_count(batch)) {
      MatmulDims md{u32(element_count(batch) * m, "M"), u32(nn, "N"), u32(k, "K"), false};
      p.steps.push_back({MatmulStep{md}, {Ref::in(0), Ref::in(1)}, Ref::out(0), md.flops()});
      return p;
    }
  }
  if (batch.size() > 4) unsupported("MatMul with more than 4 batch dimensions");
  BatchedMatmulDims d;
  d.m = u32(m, "M"), d.n = u32(nn, "N"), d.k = u32(k, "K");
  d.rank = uint32_t(batch.size());
  auto strides = [&](const Shape& s, int64_t mat, Strides& st) {
    Shape full(batch.size() - s.size(), 1);
    full.insert(full.end(), s.begin(), s.end());
    auto c = contiguous_strides(full);
    for (size_t i = 0; i < full.size(); ++i) st[i] = full[i] == 1 ? 0 : c[i] * mat;
  };
  for (size_t i = 0; i < batch.size(); ++i) d.batch[i] = u32(batch[i], "batch");
  strides(abatch, m * k, d.a_strides);
  strides(bbatch, k * nn, d.b_strides);
  p.steps.push_back({BatchedMatmulStep{d}, {Ref::in(0), Ref::in(1)}, Ref::out(0), d.flops()});
  return p;
}

// --- Einsum ---------------------------------------------------------------------------------------

// Einsum of one or two operands without repeated letters in one term (no diagonals) and without
// ellipses: letters in both operands and the output are batch dims, in both and not the output are
// summed (a matrix product), in one only and not the output are summed first; the operands are
// transposed to [batch][free][summed] and [batch][summed][free], multiplied by the batched matmul,
// and the product transposed to the output's order.
NodePlan plan_einsum(const Graph&, const Node& n, const std::vector<In>& in) {
  std::string eq = n.attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos) unsupported("Einsum with an ellipsis");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs;
  std::vector<std::string> terms;
  for (size_t s = 0;;) {
    size_t c = lhs.find(',', s);
    terms.push_back(lhs.substr(s, c == std::string::npos ? std::string::npos : c - s));
    if (c == std::string::npos) break;
    s = c + 1;
  }
  if (terms.size() != in.size())
    bad("the equation has " + std::to_string(terms.size()) + " terms for " + std::to_string(in.size()) + " inputs");
  if (terms.size() > 2) unsupported("Einsum of more than two operands");
  std::map<char, int64_t> extent;
  std::map<char, int> count;
  for (size_t t = 0; t < terms.size(); ++t) {
    const In& x = float_input(in, t, "operand");
    if (terms[t].size() != x.shape.size()) bad("term '" + terms[t] + "' does not match " + shape_str(x.shape));
    std::set<char> seen;
    for (size_t i = 0; i < terms[t].size(); ++i) {
      char c = terms[t][i];
      if (!std::isalpha(static_cast<unsigned char>(c))) bad("'" + eq + "' is not an equation");
      if (!seen.insert(c).second) unsupported("Einsum with a repeated letter in a term (a diagonal)");
      if (extent.count(c) && extent[c] != x.shape[i]) {
        if (extent[c] == 1)
          extent[c] = x.shape[i];
        else if (x.shape[i] != 1)
          bad("letter '" + std::string(1, c) + "' has extents " + std::to_string(extent[c]) + " and " +
              std::to_string(x.shape[i]));
      }
      if (!extent.count(c)) extent[c] = x.shape[i];
      ++count[c];
    }
  }
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {  // implicit output: letters seen once, in alphabetical order
    for (auto [c, k] : count)
      if (k == 1) rhs += c;
  }
  for (char c : rhs)
    if (!extent.count(c)) bad("output letter '" + std::string(1, c) + "' is in no input");
  Shape out;
  for (char c : rhs) out.push_back(extent[c]);
  NodePlan p;
  p.outs.push_back(fresh(out));
  if (element_count(out) == 0) return p;
  for (size_t t = 0; t < terms.size(); ++t)
    for (size_t i = 0; i < terms[t].size(); ++i)
      if (in[t].shape[i] != extent[terms[t][i]]) unsupported("Einsum with broadcast extents");
  auto in_out = [&](char c) { return rhs.find(c) != std::string::npos; };
  // One operand: a transpose, then the sum over the letters not in the output.
  auto transposed = [&](size_t t, const std::string& order, Ref dst) {
    auto st = contiguous_strides(in[t].shape);
    Shape shape;
    std::vector<int64_t> src;
    for (char c : order) {
      size_t i = terms[t].find(c);
      shape.push_back(extent[c]);
      src.push_back(st[i]);
    }
    p.steps.push_back(copy_step(Ref::in(int(t)), dst, copy_dims(shape, src, 0, contiguous_strides(shape), 0)));
  };
  int64_t total_in = element_count(in[0].shape);
  if (terms.size() == 1) {
    std::string order = rhs;
    int64_t summed = 1;
    for (char c : terms[0])
      if (!in_out(c)) order += c, summed *= extent[c];
    if (summed == 1) {
      transposed(0, order, Ref::out(0));
      return p;
    }
    p.temps.push_back(uint64_t(total_in));
    transposed(0, order, Ref::temp(0));
    AxisDims d{u32(element_count(out), "outer"), u32(summed, "summed"), 1};
    p.steps.push_back({ReduceStep{d, AxisReduceOp::Sum}, {Ref::temp(0)}, Ref::out(0), double(total_in)});
    return p;
  }
  const std::string &ta = terms[0], &tb = terms[1];
  std::string batch, m_letters, n_letters, k_letters;
  for (char c : ta) {
    bool in_b = tb.find(c) != std::string::npos;
    if (in_b && in_out(c))
      batch += c;
    else if (in_b)
      k_letters += c;
    else if (in_out(c))
      m_letters += c;
    else
      unsupported("Einsum summing a letter of one operand only");
  }
  for (char c : tb) {
    bool in_a = ta.find(c) != std::string::npos;
    if (!in_a && in_out(c))
      n_letters += c;
    else if (!in_a)
      unsupported("Einsum summing a letter of one operand only");
  }
  auto ext = [&](const std::string& s) {
    int64_t e = 1;
    for (char c : s) e *= extent[c];
    return e;
  };
  int64_t B = ext(batch), M = ext(m_letters), N = ext(n_letters), K = ext(k_letters);
  if (K == 0) unsupported("a product over an empty inner dimension");
  p.temps.push_back(uint64_t(B * M * K));
  p.temps.push_back(uint64_t(B * K * N));
  transposed(0, batch + m_letters + k_letters, Ref::temp(0));
  transposed(1, batch + k_letters + n_letters, Ref::temp(1));
  std::string prod_order = batch + m_letters + n_letters;
  bool direct = prod_order == rhs;
  if (!direct) p.temps.push_back(uint64_t(B * M * N));
  Ref dst = direct ? Ref::out(0) : Ref::temp(2);
  BatchedMatmulDims d;
  d.m = u32(M, "M"), d.n = u32(N, "N"), d.k = u32(K, "K");
  d.rank = 1;
  d.batch[0] = u32(B, "batch");
  d.a_strides[0] = M * K;
  d.b_strides[0] = K * N;
  p.steps.push_back({BatchedMatmulStep{d}, {Ref::temp(0), Ref::temp(1)}, dst, d.flops()});
  if (!direct) {
    Shape shape;
    std::vector<int64_t> src;
    Shape pshape;
    for (char c : prod_order) pshape.push_back(extent[c]);
    auto st = contiguous_strides(pshape);
    for (char c : rhs) {
      shape.push_back(extent[c]);
      src.push_back(st[prod_order.find(c)]);
    }
    p.steps.push_back(copy_step(Ref::temp(2), Ref::out(0), copy_dims(shape, src, 0, contiguous_strides(shape), 0)));
  }
  return p;
}

}  // namespace

void add_matmul_planners(PlannerTable& t) {
  t.emplace("Einsum", plan_einsum);
  t.emplace("Gemm", plan_gemm);
  t.emplace("MatMul", plan_matmul);
}

}  // namespace wgc::cnn::detail
