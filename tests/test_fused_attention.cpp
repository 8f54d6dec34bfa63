// Attention fused into one kernel (cnn/fuse.h's FusedAttention, ops/fused_attention.h): the kernel
// against its CPU reference at awkward sizes (keys past a workgroup, value rows past a column
// block, broadcast batch dims, a mask with -inf entries and a fully masked row), and graphs shaped
// as PyTorch exports ViT (scale on the scores by Mul) and BERT (Div, then an additive mask) run
// fused and unfused, on both paths, agreeing on random data; a shape the kernel does not take
// (5 batch dims) goes through the fused node's unfused fallback.
#include "cnn.h"
#include "cpu/fused_attention.h"
#include "ops/fused_attention.h"
#include "test_util.h"

#include <cstdlib>
#include <cstring>

using namespace wgc;
using wgc::test::ctx;

namespace {

Tensor upload(const std::vector<float>& v) {
  return make_tensor(ctx(), {std::max<int64_t>(int64_t(v.size()), 1)}, std::span<const float>(v));
}

// max |a - b| / (1 + |b|) over elements, NaN only where both are NaN.
double max_err(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    double d = std::fabs(double(a[i]) - double(b[i])) / (1 + std::fabs(double(b[i])));
    e = std::max(e, std::isnan(d) ? INFINITY : d);
  }
  return e;
}

cnn::Node make_node(std::string op, std::vector<std::string> ins, std::vector<std::string> outs) {
  cnn::Node n;
  n.op = std::move(op);
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  return n;
}

// q, k, v [b, h, t, dh] (k transposed in the graph); BERT form (a mask shape given): Div by
// sqrt(dh) and Add the mask; ViT form: Mul by 1/sqrt(dh).
cnn::Graph attention_graph(const cnn::Shape& s, const cnn::Shape& mask) {
  bool bert = !mask.empty();
  float dh = float(s.back());
  cnn::Graph g;
  g.source = bert ? "bert-attention" : "vit-attention";
  g.opset = 17;
  g.constants["c"] =
      std::make_shared<cnn::HostTensor>(cnn::Shape{}, std::vector<float>{bert ? std::sqrt(dh) : 1.f / std::sqrt(dh)});
  g.inputs = {{"q", 1, true, s}, {"k", 1, true, s}, {"v", 1, true, s}};
  cnn::Node tr = make_node("Transpose", {"k"}, {"kt"});
  tr.attrs["perm"].kind = cnn::Attribute::Kind::Ints;
  tr.attrs["perm"].ints = {0, 1, 3, 2};
  g.nodes.push_back(tr);
  g.nodes.push_back(make_node("MatMul", {"q", "kt"}, {"s"}));
  g.nodes.push_back(make_node(bert ? "Div" : "Mul", {"s", "c"}, {"ss"}));
  std::string probs_in = "ss";
  if (bert) {
    g.inputs.push_back({"mask", 1, true, mask});
    g.nodes.push_back(make_node("Add", {"ss", "mask"}, {"sm"}));
    probs_in = "sm";
  }
  cnn::Node sm = make_node("Softmax", {probs_in}, {"p"});
  sm.attrs["axis"].kind = cnn::Attribute::Kind::Int;
  sm.attrs["axis"].i = -1;
  g.nodes.push_back(sm);
  g.nodes.push_back(make_node("MatMul", {"p", "v"}, {"o"}));
  g.outputs = {{"o", 1, false, {}}};
  return g;
}

}  // namespace

TEST(FusedAttention, KernelMatchesReference) {
  FusedAttentionDims d;
  d.rank = 2, d.batch = {2, 3}, d.lq = 7, d.lk = 70, d.d = 9, d.dv = 300;
  d.q_strides = {3 * 7 * 9, 7 * 9};
  d.k_strides = {9 * 70, 0};  // K shared by the 3 heads
  d.v_strides = {3 * 70 * 300, 70 * 300};
  d.mask = true, d.m_strides = {70, 0}, d.m_row = 0, d.m_col = 1;  // [2, 1, 1, 70]
  d.scale = 0.33f;
  std::vector<float> q = test::random_floats(d.q_span(), 1), k = test::random_floats(d.k_span(), 2),
                     v = test::random_floats(d.v_span(), 3), m = test::random_floats(d.m_span(), 4);
  for (size_t j = 0; j < 70; j += 3) m[j] = -INFINITY;   // image 0: every third key masked
  for (size_t j = 0; j < 70; ++j) m[70 + j] = -3.4e38f;  // image 1: all masked by the finite minimum
  std::vector<float> want(d.out_count());
  cpu::fused_attention(q, k, v, m, want, d);
  Tensor out = make_tensor(ctx(), {int64_t(d.out_count())});
  fill_u32(ctx(), out, kPoisonNaN);
  Batch b(ctx());
  fused_attention(b, upload(q), upload(k), upload(v), upload(m), out, d);
  b.submit();
  std::vector<float> got(d.out_count());
  download(ctx(), out, std::as_writable_bytes(std::span(got)));
  EXPECT_LT(max_err(got, want), 2e-6);
  // Every -inf: NaN on both (softmax of nothing).
  std::fill(m.begin(), m.begin() + 70, -INFINITY);
  cpu::fused_attention(q, k, v, m, want, d);
  EXPECT_TRUE(std::isnan(want[0]));
  Batch b2(ctx());
  fused_attention(b2, upload(q), upload(k), upload(v), upload(m), out, d);
  b2.submit();
  download(ctx(), out, std::as_writable_bytes(std::span(got)));
  EXPECT_LT(max_err(got, want), 2e-6);
}

TEST(FusedAttention, FusedAndUnfusedGraphsAgree) {
  unsetenv("WGC_CNN_FUSE_ATTENTION");  // the options below choose
  const int64_t b = 2, h = 3, t = 11, dh = 8;
  // ViT; BERT (mask [b, 1, 1, t]); a mask that widens the scores ([b, h, t, t] over q, k, v of one
  // head each): not plain, so the fused node plans the original ops.
  struct Form {
    cnn::Shape s, mask;
    bool plain;
  };
  for (const Form& f : {Form{{b, h, t, dh}, {}, true}, Form{{b, h, t, dh}, {b, 1, 1, t}, true},
                        Form{{b, 1, t, dh}, {b, h, t, t}, false}}) {
    cnn::Graph g = attention_graph(f.s, f.mask);
    size_t n = size_t(cnn::element_count(f.s));
    std::vector<cnn::HostTensor> in = {
        {f.s, test::random_floats(n, 5)}, {f.s, test::random_floats(n, 6)}, {f.s, test::random_floats(n, 7)}};
    if (!f.mask.empty()) {
      std::vector<float> mask = test::random_floats(size_t(cnn::element_count(f.mask)), 8);
      for (size_t j = mask.size() - 3; j < mask.size(); ++j) mask[j] = -3.4028235e38f;  // padded tokens
      in.push_back({f.mask, mask});
    }
    std::vector<float> ref;
    for (bool fused : {false, true})
      for (cnn::Device dev : {cnn::Device::Cpu, cnn::Device::Gpu}) {
        cnn::Model m(ctx(), g, {dev, fused});
        EXPECT_EQ(m.fused().attentions, fused ? 1 : 0) << g.source;
        bool one_step = m.plan(in).steps.size() == 2;  // the Transpose and the attention
        EXPECT_EQ(one_step, fused && f.plain) << g.source << " plain " << f.plain;
        std::vector<float> got = m.run(in).at(0).f;
        if (ref.empty())
          ref = got;
        else
          EXPECT_LT(max_err(got, ref), 2e-6)
              << g.source << " plain " << f.plain << (fused ? " fused " : " unfused ") << to_string(dev);
      }
    EXPECT_EQ(ref.size(), size_t(f.plain ? n : size_t(b * h * t * dh)));
  }
}
