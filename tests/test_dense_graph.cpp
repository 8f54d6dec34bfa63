// Graphs of the ops beyond classifiers that ONNX's backend data cannot cover here (its Einsum and
// CumSum cases are float64, which wgc does not take; integer inputs on the device), built in code
// and run through both paths of cnn::Model against references written out in the test.
#include "cnn.h"
#include "test_util.h"

using namespace wgc;
using wgc::test::ctx;

namespace {

cnn::Attribute str_attr(std::string s) {
  cnn::Attribute a;
  a.kind = cnn::Attribute::Kind::String;
  a.s = std::move(s);
  return a;
}

cnn::Attribute int_attr(int64_t v) {
  cnn::Attribute a;
  a.kind = cnn::Attribute::Kind::Int;
  a.i = v;
  return a;
}

cnn::ValueInfo value(std::string name, int32_t type, std::vector<int64_t> dims) {
  return {std::move(name), type, true, std::move(dims)};
}

// Runs g on the CPU path and on the GPU path (SwiftShader here) and returns both outputs.
std::vector<std::vector<cnn::HostTensor>> run_both(const cnn::Graph& g, const std::vector<cnn::HostTensor>& in) {
  std::vector<std::vector<cnn::HostTensor>> r;
  for (cnn::Device d : {cnn::Device::Cpu, cnn::Device::Gpu}) {
    cnn::Model m(ctx(), g, {d});
    r.push_back(m.run(in));
  }
  return r;
}

// An einsum by its definition: every index combination, products summed in double.
std::vector<double> einsum_reference(const std::string& eq, const std::vector<std::vector<int64_t>>& shapes,
                                     const std::vector<std::vector<float>>& xs) {
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), out = eq.substr(arrow + 2);
  std::vector<std::string> terms;
  size_t comma = lhs.find(',');
  terms.push_back(lhs.substr(0, comma));
  if (comma != std::string::npos) terms.push_back(lhs.substr(comma + 1));
  std::map<char, int64_t> ext;
  for (size_t t = 0; t < terms.size(); ++t)
    for (size_t i = 0; i < terms[t].size(); ++i) ext[terms[t][i]] = shapes[t][i];
  std::vector<char> letters;
  for (auto [c, e] : ext) letters.push_back(c);
  int64_t n_out = 1;
  for (char c : out) n_out *= ext[c];
  std::vector<double> y(size_t(n_out), 0.0);
  std::map<char, int64_t> at;
  std::function<void(size_t)> rec = [&](size_t k) {
    if (k == letters.size()) {
      double prod = 1;
      for (size_t t = 0; t < terms.size(); ++t) {
        int64_t off = 0;
        for (size_t i = 0; i < terms[t].size(); ++i) off = off * shapes[t][i] + at[terms[t][i]];
        prod *= xs[t][size_t(off)];
      }
      int64_t o = 0;
      for (char c : out) o = o * ext[c] + at[c];
      y[size_t(o)] += prod;
      return;
    }
    for (int64_t v = 0; v < ext[letters[k]]; ++v) {
      at[letters[k]] = v;
      rec(k + 1);
    }
  };
  rec(0);
  return y;
}

}  // namespace

TEST(DenseGraph, EinsumMatchesItsDefinition) {
  struct Case {
    std::string eq;
    std::vector<std::vector<int64_t>> shapes;
  };
  const Case cases[] = {
      {"bij,bjk->bik", {{3, 5, 7}, {3, 7, 4}}},           // batched matmul
      {"ij,kj->ik", {{6, 5}, {3, 5}}},                    // B transposed (a Linear layer)
      {"bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}}},  // attention scores
      {"bhqk,bhkd->bqhd", {{2, 3, 5, 6}, {2, 3, 6, 4}}},  // output in another order
      {"ij->ji", {{4, 7}}},
      {"ijk->ki", {{3, 4, 5}}},  // a sum over j, then a transpose
      {"i,i->", {{9}, {9}}},     // inner product
  };
  for (const auto& c : cases) {
    cnn::Graph g;
    g.source = "einsum " + c.eq;
    g.opset = 13;
    cnn::Node n;
    n.op = "Einsum";
    n.attrs["equation"] = str_attr(c.eq);
    std::vector<cnn::HostTensor> in;
    std::vector<std::vector<float>> xs;
    for (size_t t = 0; t < c.shapes.size(); ++t) {
      std::string name = "x" + std::to_string(t);
      n.inputs.push_back(name);
      g.inputs.push_back(value(name, 1, c.shapes[t]));
      xs.push_back(test::random_floats(size_t(cnn::element_count(c.shapes[t])), uint32_t(t + 3)));
      in.emplace_back(c.shapes[t], xs.back());
    }
    n.outputs = {"y"};
    g.nodes.push_back(n);
    g.outputs.push_back({"y", 1, false, {}});
    std::vector<double> want = einsum_reference(c.eq, c.shapes, xs);
    for (const auto& got : run_both(g, in)) {
      ASSERT_EQ(got[0].f.size(), want.size()) << c.eq;
      EXPECT_LT(cpu::max_rel_error(std::span<const float>(got[0].f), std::span<const double>(want)), 1e-5) << c.eq;
    }
  }
}

TEST(DenseGraph, CumSumOfFloatsAndIntegers) {
  for (bool ints : {false, true})
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1}) {
        cnn::Graph g;
        g.source = "cumsum";
        g.opset = 14;
        cnn::Node n;
        n.op = "CumSum";
        n.inputs = {"x", "axis"};
        n.outputs = {"y"};
        n.attrs["exclusive"] = int_attr(exclusive);
        n.attrs["reverse"] = int_attr(reverse);
        g.nodes.push_back(n);
        g.constants["axis"] = std::make_shared<cnn::HostTensor>(cnn::HostTensor::ints({}, {1}));
        std::vector<int64_t> shape = {3, 13, 2};
        g.inputs.push_back(value("x", ints ? 7 : 1, shape));
        g.outputs.push_back({"y", ints ? 7 : 1, false, {}});
        std::vector<float> xf = test::random_floats(78, 5, -4, 4);
        std::vector<int64_t> xi;
        for (float v : xf) xi.push_back(int64_t(std::lround(v * 10)));
        cnn::HostTensor x = ints ? cnn::HostTensor::ints(shape, xi) : cnn::HostTensor(shape, xf);
        std::vector<double> want(78);
        for (int a = 0; a < 3; ++a)
          for (int c = 0; c < 2; ++c) {
            double s = 0;
            for (int k = 0; k < 13; ++k) {
              int l = reverse ? 12 - k : k;
              size_t at = size_t((a * 13 + l) * 2 + c);
              double v = ints ? double(xi[at]) : double(xf[at]);
              if (!exclusive) s += v;
              want[at] = s;
              if (exclusive) s += v;
            }
          }
        for (const auto& got : run_both(g, {x})) {
          ASSERT_EQ(got[0].integer, ints);
          if (ints) {
            EXPECT_EQ(std::vector<double>(got[0].i.begin(), got[0].i.end()), want);
          } else {
            EXPECT_LT(cpu::max_rel_error(std::span<const float>(got[0].f), std::span<const double>(want)), 1e-5);
          }
        }
      }
}

// ONNX's ReduceLogSumExp cases are float64: a float one here, with values whose exponentials
// overflow float (the largest of each row is taken out first), both keepdims, one axis and two.
TEST(DenseGraph, ReduceLogSumExpDoesNotOverflow) {
  const std::vector<int64_t> shape = {3, 13, 5};
  std::vector<float> x = test::random_floats(195, 11, -3, 3);
  for (size_t k = 0; k < x.size(); k += 7) x[k] += 120.f;  // exp(120) is beyond float's range
  for (int64_t keep : {0, 1})
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, std::vector<int64_t>{0, -1}}) {
      cnn::Graph g;
      g.source = "reduce_log_sum_exp";
      g.opset = 13;
      cnn::Node n;
      n.op = "ReduceLogSumExp";
      n.inputs = {"x"};
      n.outputs = {"y"};
      n.attrs["keepdims"] = int_attr(keep);
      cnn::Attribute a;
      a.kind = cnn::Attribute::Kind::Ints;
      a.ints = axes;
      n.attrs["axes"] = a;
      g.nodes.push_back(n);
      g.inputs.push_back(value("x", 1, shape));
      g.outputs.push_back({"y", 1, false, {}});
      bool over_j = axes.size() == 1;  // else over i and k
      std::vector<double> want;
      if (over_j) {
        for (int i = 0; i < 3; ++i)
          for (int k = 0; k < 5; ++k) {
            double s = 0;
            for (int j = 0; j < 13; ++j) s += std::exp(double(x[size_t((i * 13 + j) * 5 + k)]) - 120.0);
            want.push_back(std::log(s) + 120.0);
          }
      } else {
        for (int j = 0; j < 13; ++j) {
          double s = 0;
          for (int i = 0; i < 3; ++i)
            for (int k = 0; k < 5; ++k) s += std::exp(double(x[size_t((i * 13 + j) * 5 + k)]) - 120.0);
          want.push_back(std::log(s) + 120.0);
        }
      }
      std::vector<int64_t> out_shape = over_j ? std::vector<int64_t>{3, 5} : std::vector<int64_t>{13};
      if (keep) out_shape = over_j ? std::vector<int64_t>{3, 1, 5} : std::vector<int64_t>{1, 13, 1};
      for (const auto& got : run_both(g, {cnn::HostTensor(shape, x)})) {
        EXPECT_EQ(got[0].shape, out_shape);
        ASSERT_EQ(got[0].f.size(), want.size());
        EXPECT_LT(cpu::max_rel_error(std::span<const float>(got[0].f), std::span<const double>(want)), 1e-5);
      }
    }
}

// An embedding lookup by token ids and a padding mask, as a transformer encoder's first ops: the
// integer inputs stay on the device (one plan for any ids), Equal / Where / Cast / ArgMax on it.
TEST(DenseGraph, IntegerInputsOnTheDevice) {
  cnn::Graph g;
  g.source = "ids";
  g.opset = 13;
  const int64_t vocab = 11, dim = 6, t = 5;
  std::vector<float> table = test::random_floats(size_t(vocab * dim), 8);
  g.constants["table"] = std::make_shared<cnn::HostTensor>(cnn::Shape{vocab, dim}, table);
  g.constants["zero"] = std::make_shared<cnn::HostTensor>(cnn::HostTensor::ints({}, {0}));
  g.constants["neg"] = std::make_shared<cnn::HostTensor>(cnn::Shape{}, std::vector<float>{-100.f});
  g.constants["axes"] = std::make_shared<cnn::HostTensor>(cnn::HostTensor::ints({1}, {2}));
  auto node = [&](std::string op, std::vector<std::string> ins, std::vector<std::string> outs) {
    cnn::Node n;
    n.op = std::move(op);
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    g.nodes.push_back(n);
    return &g.nodes.back();
  };
  node("Gather", {"table", "ids"}, {"emb"});                          // [2, t, dim]
  node("Equal", {"mask", "zero"}, {"pad"});                           // [2, t] bool
  node("Unsqueeze", {"pad", "axes"}, {"pad3"});                       // [2, t, 1]
  node("Where", {"pad3", "neg", "emb"}, {"masked"});                  // padded positions -100
  node("ArgMax", {"masked"}, {"best"})->attrs["axis"] = int_attr(2);  // [2, t, 1] int
  node("Cast", {"pad"}, {"padf"})->attrs["to"] = int_attr(1);
  g.inputs = {value("ids", 7, {2, t}), value("mask", 7, {2, t})};
  g.outputs = {{"masked", 1, false, {}}, {"best", 7, false, {}}, {"padf", 1, false, {}}};
  for (uint32_t seed : {1u, 2u}) {
    std::vector<int64_t> ids, mask;
    std::mt19937 rng(seed);
    for (int i = 0; i < 2 * t; ++i) ids.push_back(int64_t(rng() % vocab) - (i == 3 ? vocab : 0));  // one negative id
    for (int i = 0; i < 2 * t; ++i) mask.push_back(i % t < t - int(seed) ? 1 : 0);
    std::vector<cnn::HostTensor> in = {cnn::HostTensor::ints({2, t}, ids), cnn::HostTensor::ints({2, t}, mask)};
    for (cnn::Device d : {cnn::Device::Cpu, cnn::Device::Gpu}) {
      cnn::Model m(ctx(), g, {d});
      auto got = m.run(in);
      ASSERT_EQ(got.size(), 3u);
      ASSERT_FALSE(got[1].f.size());
      for (int i = 0; i < 2 * t; ++i) {
        int64_t id = ids[size_t(i)] < 0 ? ids[size_t(i)] + vocab : ids[size_t(i)];
        int64_t best = 0;
        for (int k = 0; k < dim; ++k) {
          float want = mask[size_t(i)] == 0 ? -100.f : table[size_t(id * dim + k)];
          EXPECT_EQ(got[0].f[size_t(i * dim + k)], want) << to_string(d) << " position " << i;
          if (table[size_t(id * dim + k)] > table[size_t(id * dim + best)]) best = k;
        }
        EXPECT_EQ(got[1].i[size_t(i)], mask[size_t(i)] == 0 ? 0 : best) << to_string(d);
        EXPECT_EQ(got[2].f[size_t(i)], mask[size_t(i)] == 0 ? 1.f : 0.f) << to_string(d);
      }
      // The ids are run-time tensors: the same plan serves both sets of values.
      EXPECT_EQ(m.plan(in).input_slots[0] >= 0, true) << to_string(d);
    }
  }
}

// The exporters' erf GELU (Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5) becomes one Gelu node at load;
// a chain that differs (0.4 for 0.5) is left as it is. Both against GELU in double.
TEST(DenseGraph, GeluChainFused) {
  for (float half : {0.5f, 0.4f}) {
    cnn::Graph g;
    g.source = "gelu";
    g.opset = 17;
    auto scalar = [&](const char* name, float v) {
      g.constants[name] = std::make_shared<cnn::HostTensor>(cnn::Shape{}, std::vector<float>{v});
    };
    scalar("sqrt2", 1.41421356f);
    scalar("one", 1.f);
    scalar("half", half);
    auto node = [&](std::string op, std::vector<std::string> ins, std::string out) {
      cnn::Node n;
      n.op = std::move(op);
      n.inputs = std::move(ins);
      n.outputs = {std::move(out)};
      g.nodes.push_back(n);
    };
    node("Div", {"x", "sqrt2"}, "d");
    node("Erf", {"d"}, "e");
    node("Add", {"e", "one"}, "a");
    node("Mul", {"x", "a"}, "m");
    node("Mul", {"m", "half"}, "y");
    g.inputs = {value("x", 1, {3, 37})};
    g.outputs = {{"y", 1, false, {}}};
    std::vector<float> x = test::random_floats(111, 4, -5, 5);
    std::vector<double> want;
    for (float v : x) want.push_back(double(v) * (1 + std::erf(double(v) / std::sqrt(2.0))) * double(half));
    for (cnn::Device d : {cnn::Device::Cpu, cnn::Device::Gpu}) {
      cnn::Model m(ctx(), g, {d});
      EXPECT_EQ(m.fused().gelus, half == 0.5f ? 1 : 0);
      EXPECT_EQ(m.graph().nodes.size(), half == 0.5f ? 1u : 5u);
      auto got = m.run(std::vector<cnn::HostTensor>{cnn::HostTensor({3, 37}, x)});
      EXPECT_LT(cpu::max_rel_error(std::span<const float>(got[0].f), std::span<const double>(want)), 1e-6)
          << to_string(d) << " " << half;
    }
  }
}

// Wrong models and inputs for the new ops are errors naming the node and what is wrong, before
// anything is allocated or run; what wgc does not take is Unsupported.
TEST(DenseGraph, BadModelsAndInputsAreErrors) {
  auto one_node = [](std::string op, std::vector<std::string> ins, std::vector<int64_t> xshape,
                     std::map<std::string, cnn::Attribute> attrs, std::map<std::string, cnn::HostTensorPtr> consts) {
    cnn::Graph g;
    g.source = "bad.onnx";
    g.opset = 18;
    cnn::Node n;
    n.name = "n0";
    n.op = std::move(op);
    n.inputs = std::move(ins);
    n.outputs = {"y"};
    for (auto& [k, v] : attrs) n.attrs[k] = v;
    g.nodes.push_back(n);
    g.constants.insert(consts.begin(), consts.end());
    g.inputs = {value("x", 1, xshape)};
    g.outputs = {{"y", 1, false, {}}};
    return g;
  };
  auto i64 = [](std::vector<int64_t> shape, std::vector<int64_t> v) {
    return std::make_shared<cnn::HostTensor>(cnn::HostTensor::ints(std::move(shape), std::move(v)));
  };
  auto f32 = [](std::vector<int64_t> shape, std::vector<float> v) {
    return std::make_shared<cnn::HostTensor>(std::move(shape), std::move(v));
  };
  struct Case {
    cnn::Graph g;
    std::string says;
    bool unsupported = false;
  };
  std::vector<Case> cases;
  // Resize to 2^40 elements: refused before its taps are made.
  cases.push_back(
      {one_node("Resize", {"x", "", "", "sizes"}, {1, 1, 4, 4}, {}, {{"sizes", i64({4}, {1, 1, 1 << 20, 1 << 20})}}),
       "too large"});
  cases.push_back({one_node("TopK", {"x", "k"}, {2, 5}, {}, {{"k", i64({1}, {6})}}), "out of range"});
  cases.push_back({one_node("Pad", {"x", "pads"}, {2, 3}, {}, {{"pads", i64({4}, {0, -5, 0, 0})}}), "extent"});
  cases.push_back(
      {one_node("GatherElements", {"x", "idx"}, {2, 3}, {}, {{"idx", i64({2, 1}, {0, 7})}}), "out of range"});
  cases.push_back({one_node("Einsum", {"x", "x"}, {2, 3}, {{"equation", str_attr("ij,jk->ik")}}, {}), "extents"});
  cases.push_back({one_node("Einsum", {"x"}, {2, 3}, {{"equation", str_attr("ii->i")}}, {}), "diagonal", true});
  cases.push_back(
      {one_node("ConvTranspose", {"x", "w"}, {1, 4, 5, 5}, {}, {{"w", f32({3, 2, 3, 3}, std::vector<float>(54))}}),
       "does not fit"});
  cases.push_back({one_node("LayerNormalization", {"x", "s"}, {2, 6}, {}, {{"s", f32({4}, std::vector<float>(4))}}),
                   "do not broadcast"});
  cases.push_back({one_node("DepthToSpace", {"x"}, {1, 6, 2, 2}, {{"blocksize", int_attr(2)}}, {}), "multiple"});
  for (auto& c : cases) {
    cnn::Model m(std::nullopt, c.g, {cnn::Device::Cpu});
    std::vector<int64_t> shape = c.g.inputs[0].dims;
    cnn::HostTensor x(shape, std::vector<float>(size_t(cnn::element_count(shape))));
    try {
      m.run(std::vector<cnn::HostTensor>{x});
      ADD_FAILURE() << c.g.nodes[0].op << ": no error";
    } catch (const cnn::Unsupported& e) {
      EXPECT_TRUE(c.unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    } catch (const Error& e) {
      EXPECT_FALSE(c.unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find("node 'n0'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  // An int64 input value beyond the device's 32-bit integers names the input and the offset.
  cnn::Graph g;
  g.source = "ids.onnx";
  g.opset = 13;
  g.constants["table"] = f32({4, 2}, std::vector<float>(8, 1.f));
  cnn::Node n;
  n.op = "Gather";
  n.inputs = {"table", "ids"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.inputs = {value("ids", 7, {3})};
  g.outputs = {{"y", 1, false, {}}};
  cnn::Model m(std::nullopt, g, {cnn::Device::Cpu});
  try {
    m.run(std::vector<cnn::HostTensor>{cnn::HostTensor::ints({3}, {0, int64_t(1) << 40, 1})});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'ids': value 1099511627776 at offset 1"), std::string::npos)
        << e.what();
  }
}
