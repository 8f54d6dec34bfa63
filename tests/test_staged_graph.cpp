// Graphs whose shapes depend on values they compute (cnn::Model's stages, cnn/model.h) and If
// nodes (planned by the branch their condition takes), as Faster R-CNN's export has them between
// its RPN and its box head: NonZero of a run-time mask, an If on a run-time condition, an If on a
// shape test, RoiAlign of rois selected at run time, NonMaxSuppression of computed boxes. Both
// paths against the outputs worked out in the test, for inputs that keep different counts.
#include "cnn.h"
#include "cpu/detect.h"
#include "test_util.h"

using namespace wgc;
using wgc::test::ctx;

namespace {

cnn::Attribute int_attr(int64_t v) {
  cnn::Attribute a;
  a.kind = cnn::Attribute::Kind::Int;
  a.i = v;
  return a;
}

cnn::Attribute graph_attr(cnn::Graph g) {
  cnn::Attribute a;
  a.kind = cnn::Attribute::Kind::Graph;
  a.g = std::make_shared<cnn::Graph>(std::move(g));
  return a;
}

cnn::Node make_node(std::string op, std::vector<std::string> ins, std::vector<std::string> outs) {
  cnn::Node n;
  n.op = std::move(op);
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  return n;
}

// A branch of one node reading outer values `reads`, giving `out`.
cnn::Graph branch(const std::string& op, std::vector<std::string> reads, const std::string& out) {
  cnn::Graph b;
  b.opset = 13;
  b.nodes.push_back(make_node(op, std::move(reads), {out}));
  b.outputs = {{out, 1, false, {}}};
  return b;
}

// If(cond) with its branches; the outer values they read as captured inputs (as the loader does).
void add_if(cnn::Graph& g, const std::string& cond, cnn::Graph then_b, cnn::Graph else_b, const std::string& out,
            std::vector<std::string> captured) {
  cnn::Node n = make_node("If", {cond}, {out});
  n.attrs["then_branch"] = graph_attr(std::move(then_b));
  n.attrs["else_branch"] = graph_attr(std::move(else_b));
  n.captured = captured;
  n.inputs.insert(n.inputs.end(), captured.begin(), captured.end());
  g.nodes.push_back(std::move(n));
}

cnn::HostTensorPtr ints(cnn::Shape s, std::vector<int64_t> v) {
  return std::make_shared<cnn::HostTensor>(cnn::HostTensor::ints(std::move(s), std::move(v)));
}
cnn::HostTensorPtr floats(cnn::Shape s, std::vector<float> v) {
  return std::make_shared<cnn::HostTensor>(std::move(s), std::move(v));
}

}  // namespace

TEST(StagedGraph, DataDependentShapesAndIfRunInStages) {
  const int64_t n = 9;
  cnn::Graph g;
  g.source = "staged";
  g.opset = 13;
  g.constants["zero"] = floats({}, {0.f});
  g.constants["zero_i"] = ints({}, {0});
  g.constants["two"] = floats({}, {2.f});
  g.constants["axes0"] = ints({1}, {0});
  g.constants["s3"] = ints({3}, {1, 1, -1});
  g.constants["max_out"] = ints({1}, {3});
  g.constants["iou"] = floats({1}, {0.3f});
  auto add = [&](std::string op, std::vector<std::string> ins, std::vector<std::string> outs) -> cnn::Node& {
    g.nodes.push_back(make_node(std::move(op), std::move(ins), std::move(outs)));
    return g.nodes.back();
  };
  add("Greater", {"x", "zero"}, {"mask"});
  add("NonZero", {"mask"}, {"nz"});          // [1, K]: cut 1 (the mask's values)
  add("Squeeze", {"nz", "axes0"}, {"idx"});  // [K]
  add("Gather", {"x", "idx"}, {"sel"});      // [K], on the device
  add("ReduceSum", {"x"}, {"s"}).attrs["keepdims"] = int_attr(0);
  add("Greater", {"s", "zero"}, {"cond"});  // run-time: cut 2
  add_if(g, "cond", branch("Mul", {"sel", "two"}, "t_out"), branch("Neg", {"sel"}, "e_out"), "signed", {"sel", "two"});
  add("Shape", {"sel"}, {"shp"});
  add("Gather", {"shp", "zero_i"}, {"k"});
  add("Greater", {"k", "zero_i"}, {"c2"});  // a shape test: known on the host
  // Its branches read initializers of their own (spliced in as Constant nodes before a later cut).
  cnn::Graph then2 = branch("Add", {"signed", "one_b"}, "t2"), else2 = branch("Sub", {"signed", "one_b"}, "e2");
  then2.constants["one_b"] = else2.constants["one_b"] = floats({}, {1.f});
  add_if(g, "c2", then2, else2, "out", {"signed"});
  add("Gather", {"rois", "idx"}, {"rsel"}).attrs["axis"] = int_attr(0);  // [K, 4]
  add("ConstantOfShape", {"shp"}, {"bidx"}).attrs["value"] = [] {
    cnn::Attribute a;
    a.kind = cnn::Attribute::Kind::Tensor;
    a.t = ints({1}, {0});
    return a;
  }();
  cnn::Node& ra = add("RoiAlign", {"feat", "rsel", "bidx"}, {"ra"});
  ra.attrs["output_height"] = int_attr(2);
  ra.attrs["output_width"] = int_attr(3);
  ra.attrs["sampling_ratio"] = int_attr(2);
  add("Unsqueeze", {"rsel", "axes0"}, {"boxes3"});
  add("Reshape", {"sel", "s3"}, {"scores3"});
  add("NonMaxSuppression", {"boxes3", "scores3", "max_out", "iou"}, {"keep"});  // cut 3 (computed boxes)
  g.inputs = {{"x", 1, true, {n}}, {"rois", 1, true, {n, 4}}, {"feat", 1, true, {1, 2, 6, 7}}};
  g.outputs = {{"out", 1, false, {}}, {"ra", 1, false, {}}, {"keep", 7, false, {}}};

  std::vector<float> feat = test::random_floats(2 * 6 * 7, 3);
  std::vector<float> rois;
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> pos(0.f, 5.f), ext(0.5f, 3.f);
  for (int64_t r = 0; r < n; ++r) {
    float x1 = pos(rng), y1 = pos(rng);
    rois.insert(rois.end(), {x1, y1, x1 + ext(rng), y1 + ext(rng)});
  }
  for (cnn::Device d : {cnn::Device::Cpu, cnn::Device::Gpu}) {
    cnn::Model m(ctx(), g, {d});
    for (uint32_t seed : {1u, 2u, 3u}) {
      std::vector<float> x = test::random_floats(size_t(n), seed);
      if (seed == 3)
        for (auto& v : x) v = -std::fabs(v);  // nothing kept: empty tensors through every stage
      std::vector<cnn::HostTensor> in = {{{n}, x}, {{n, 4}, rois}, {{1, 2, 6, 7}, feat}};
      auto got = m.run(in);
      EXPECT_TRUE(m.staged(in));
      std::vector<int64_t> idx;
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        sum += x[size_t(i)];
        if (x[size_t(i)] > 0) idx.push_back(i);
      }
      size_t k = idx.size();
      ASSERT_EQ(got.size(), 3u);
      ASSERT_EQ(got[0].shape, cnn::Shape{int64_t(k)}) << to_string(d) << " seed " << seed;
      for (size_t i = 0; i < k; ++i) {
        float v = x[size_t(idx[i])];
        float want = (sum > 0 ? v * 2 : -v) + (k > 0 ? 1.f : -1.f);
        EXPECT_FLOAT_EQ(got[0].f[i], want) << to_string(d) << " seed " << seed << " element " << i;
      }
      std::vector<float> rsel;
      std::vector<int32_t> zeros(k, 0);
      for (int64_t i : idx) rsel.insert(rsel.end(), rois.begin() + i * 4, rois.begin() + i * 4 + 4);
      RoiAlignDims rd;
      rd.n = 1, rd.c = 2, rd.h = 6, rd.w = 7, rd.rois = uint32_t(k), rd.out_h = 2, rd.out_w = 3, rd.sampling_ratio = 2;
      rd.half_pixel = false;  // opset 10's output_half_pixel (the graph is opset 13)
      std::vector<float> want_ra(rd.out_count());
      cpu::roi_align(feat, rsel, {zeros.data(), cpu::WordType::I32, k}, want_ra, rd);
      ASSERT_EQ(got[1].shape, (cnn::Shape{int64_t(k), 2, 2, 3}));
      for (size_t i = 0; i < want_ra.size(); ++i) EXPECT_NEAR(got[1].f[i], want_ra[i], 1e-5) << to_string(d);
      std::vector<float> scores;
      for (int64_t i : idx) scores.push_back(x[size_t(i)]);
      auto keep = cpu::non_max_suppression(rsel, scores, 1, 1, uint32_t(k), 3, 0.3f, -INFINITY, false);
      ASSERT_EQ(got[2].shape, (cnn::Shape{int64_t(keep.size()), 3})) << to_string(d);
      for (size_t i = 0; i < keep.size(); ++i) EXPECT_EQ(got[2].i[3 * i + 2], keep[i][2]) << to_string(d);
    }
  }
}

TEST(StagedGraph, IfOnAnInputIsPlannedByItsValue) {
  // The backend tests' form: the condition is a graph input (a bool), the branches constants.
  cnn::Graph g;
  g.source = "if";
  g.opset = 13;
  g.constants["a"] = floats({3}, {1, 2, 3});
  g.constants["b"] = floats({3}, {4, 5, 6});
  add_if(g, "c", branch("Identity", {"a"}, "ta"), branch("Identity", {"b"}, "tb"), "y", {"a", "b"});
  g.inputs = {{"c", 9, true, {}}};
  g.outputs = {{"y", 1, false, {}}};
  for (cnn::Device d : {cnn::Device::Cpu, cnn::Device::Gpu}) {
    cnn::Model m(ctx(), g, {d});
    EXPECT_EQ(m.run(std::vector<cnn::HostTensor>{cnn::HostTensor::ints({}, {1})}).at(0).f,
              (std::vector<float>{1, 2, 3}))
        << to_string(d);
    EXPECT_EQ(m.run(std::vector<cnn::HostTensor>{cnn::HostTensor::ints({}, {0})}).at(0).f,
              (std::vector<float>{4, 5, 6}))
        << to_string(d);
  }
}

TEST(StagedGraph, BadIfNodesAreErrors) {
  auto make = [](std::vector<int64_t> cond, bool both) {
    cnn::Graph g;
    g.source = "bad-if";
    g.opset = 13;
    g.constants["c"] = ints({int64_t(cond.size())}, cond);
    g.constants["a"] = floats({1}, {1.f});
    cnn::Node n = make_node("If", {"c", "a"}, {"y"});
    n.captured = {"a"};
    n.attrs["then_branch"] = graph_attr(branch("Identity", {"a"}, "t"));
    if (both) n.attrs["else_branch"] = graph_attr(branch("Neg", {"a"}, "e"));
    g.nodes.push_back(n);
    g.outputs = {{"y", 1, false, {}}};
    return g;
  };
  for (cnn::Device d : {cnn::Device::Cpu, cnn::Device::Gpu}) {
    try {
      cnn::Model(ctx(), make({1, 0}, true), {d}).run(std::vector<cnn::HostTensor>{});
      ADD_FAILURE() << "a condition of 2 elements was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("condition has 2 elements"), std::string::npos) << e.what();
    }
    try {
      cnn::Model(ctx(), make({0}, false), {d}).run(std::vector<cnn::HostTensor>{});
      ADD_FAILURE() << "a missing else branch was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no subgraph"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cnn::Model(ctx(), make({0}, true), {d}).run(std::vector<cnn::HostTensor>{}).at(0).f,
              std::vector<float>{-1.f});
  }
}
