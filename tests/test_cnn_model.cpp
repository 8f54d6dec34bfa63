// The ONNX graph executor end to end: torchvision MobileNetV2 (x0.35) exported by PyTorch against
// PyTorch's float64 logits (../shared/fixtures/mobilenet_v2_035), on the GPU path and on the CPU
// path; the loader's errors on broken models; fusion and buffer reuse.
#include "cnn.h"
#include "io/npy.h"
#include "ops/conv.h"
#include "test_util.h"
#include "util/json.h"

#include <fstream>

using namespace wgc;
using wgc::test::ctx;

namespace {

std::filesystem::path fixture(const std::string& f) { return test::fixtures_dir() / "mobilenet_v2_035" / f; }

cnn::HostTensor npy_tensor(const std::filesystem::path& p) {
  npy::Array a = npy::read(p);
  return {a.shape, a.to_f32()};
}

// max |got - want| / max |want| over the logits, and the same for image 0 minus image 1 (the part of
// the output that depends on the input: a wrong backbone cannot hide behind the classifier's bias).
std::pair<double, double> logit_errors(const cnn::HostTensor& got, const cnn::HostTensor& want) {
  EXPECT_EQ(got.shape, want.shape);
  size_t classes = size_t(want.shape[1]);
  std::vector<float> gd(classes), wd(classes);
  for (size_t i = 0; i < classes; ++i) {
    gd[i] = got.f[i] - got.f[classes + i];
    wd[i] = want.f[i] - want.f[classes + i];
  }
  return {test::rel_error(got.f, want.f), test::rel_error(gd, wd)};
}

}  // namespace

TEST(CnnModel, MobileNetV2MatchesPyTorchOnTheGpu) {
  WGC_REQUIRE_FILE(fixture("mobilenet_v2_035.onnx"));
  cnn::Model m(ctx(), fixture("mobilenet_v2_035.onnx"), {cnn::Device::Gpu});
  // BatchNorm came folded by the exporter; ReLU6 (Clip) and the residual Adds fuse here.
  EXPECT_GE(m.fused().activations, 30);
  EXPECT_EQ(m.fused().residuals, 10);
  auto x = npy_tensor(fixture("mobilenet_v2_035.input.npy"));
  auto want = npy_tensor(fixture("mobilenet_v2_035.logits.npy"));
  ASSERT_TRUE(m.on_gpu({x}));
  auto [all, diff] = logit_errors(m.run(x), want);
  std::printf("GPU path: max rel error %.2e on the logits, %.2e on image 0 - image 1\n", all, diff);
  // 1e-4 in f32 arithmetic, 1e-3 where Auto picks Winograd for a 3x3 layer; the input-dependent
  // part within 10x that.
  bool winograd = false;
  for (const auto& s : m.plan({x}).steps)
    if (const auto* c = std::get_if<cnn::ConvStep>(&s.op))
      winograd |= choose_conv2d(ctx(), c->dims) == Conv2dVersion::Winograd2x2;
  EXPECT_LT(all, winograd ? 1e-3 : 1e-4);
  EXPECT_LT(diff, winograd ? 1e-2 : 1e-3);
  // The plan is per shape: its buffers are reused, fewer than the graph has values.
  const cnn::Plan& p = m.plan({x});
  EXPECT_LT(p.slot_elems.size(), 8u);
  EXPECT_GT(p.flops(), 1e8);
}

TEST(CnnModel, MobileNetV2MatchesPyTorchOnTheCpuAtBatchOne) {
  WGC_REQUIRE_FILE(fixture("mobilenet_v2_035.onnx"));
  cnn::Model m(fixture("mobilenet_v2_035.onnx"));
  auto x = npy_tensor(fixture("mobilenet_v2_035.input.npy"));
  auto want = npy_tensor(fixture("mobilenet_v2_035.logits.npy"));
  auto both = m.run(x);
  std::printf("CPU path: max rel error %.2e on the logits, %.2e on image 0 - image 1\n", logit_errors(both, want).first,
              logit_errors(both, want).second);
  EXPECT_LT(logit_errors(both, want).first, 1e-4);
  EXPECT_LT(logit_errors(both, want).second, 1e-3);
  // Batch 1 (a second plan) gives image 1's logits alone.
  cnn::HostTensor one({1, 3, 224, 224}, std::vector<float>(x.f.begin() + 3 * 224 * 224, x.f.end()));
  auto y = m.run(one);
  ASSERT_EQ(y.shape, (Shape{1, 1000}));
  std::vector<float> want1(want.f.begin() + 1000, want.f.end());
  EXPECT_LT(test::rel_error(y.f, want1), 1e-4);
}

TEST(CnnModel, WrongInputShapeNamesTheInput) {
  WGC_REQUIRE_FILE(fixture("mobilenet_v2_035.onnx"));
  cnn::Model m(fixture("mobilenet_v2_035.onnx"));
  try {
    m.run(cnn::HostTensor({1, 3, 200}, std::vector<float>(600)));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'input'"), std::string::npos) << e.what();
  }
}

TEST(CnnModel, BrokenFilesGiveErrorsNotCrashes) {
  auto dir = test::temp_dir("cnn");
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return dir / name;
  };
  EXPECT_THROW(cnn::load_onnx(write("empty.onnx", "")), Error);
  EXPECT_THROW(cnn::load_onnx(write("junk.onnx", "\x08\x07\x12\xff\xff\xff\xff\x0f garbage")), Error);
  EXPECT_THROW(cnn::load_onnx(dir / "missing.onnx"), Error);
  if (std::filesystem::exists(fixture("mobilenet_v2_035.onnx"))) {
    std::ifstream f(fixture("mobilenet_v2_035.onnx"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    try {
      cnn::load_onnx(write("cut.onnx", bytes.substr(0, bytes.size() / 2)));
      FAIL() << "a truncated model loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.onnx"), std::string::npos) << e.what();
    }
  }
}

TEST(CnnModel, UnknownOpNamesNodeOpAndOpset) {
  cnn::Graph g;
  g.source = "test.onnx";
  g.opset = 13;
  g.inputs.push_back({"x", 1, true, {2, 3}});
  g.outputs.push_back({"y", 1, false, {}});
  cnn::Node n;
  n.name = "weird_0";
  n.op = "FancyOp";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  cnn::Model m(std::nullopt, g);
  try {
    m.run(cnn::HostTensor({2, 3}, std::vector<float>(6)));
    FAIL() << "no error";
  } catch (const cnn::Unsupported& e) {
    std::string s = e.what();
    EXPECT_NE(s.find("weird_0"), std::string::npos) << s;
    EXPECT_NE(s.find("FancyOp"), std::string::npos) << s;
    EXPECT_NE(s.find("opset 13"), std::string::npos) << s;
  }
}

// Every NAME.onnx with NAME.input.npy and NAME.logits.npy in $WGC_CNN_MODELS (made by
// scripts/export_cnn_models.py: ResNet, SqueezeNet, ShuffleNet, MobileNetV3, EfficientNet), on the
// GPU path when WGC_CNN_MODELS_GPU=1 (slow on SwiftShader), else the CPU path.
TEST(CnnModel, ExportedTorchvisionModelsMatchPyTorch) {
  const char* dir = std::getenv("WGC_CNN_MODELS");
  if (!dir || !*dir) GTEST_SKIP() << "set WGC_CNN_MODELS to a folder made by scripts/export_cnn_models.py";
  const char* gpu = std::getenv("WGC_CNN_MODELS_GPU");
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".onnx") continue;
    std::string stem = e.path().stem().string();
    auto in = e.path().parent_path() / (stem + ".input.npy"), ref = e.path().parent_path() / (stem + ".logits.npy");
    if (!std::filesystem::exists(in) || !std::filesystem::exists(ref)) continue;
    cnn::Model m(ctx(), e.path(), {gpu && *gpu == '1' ? cnn::Device::Gpu : cnn::Device::Cpu});
    auto x = npy_tensor(in);
    auto [all, diff] = logit_errors(m.run(x), npy_tensor(ref));
    std::printf("%s: max rel error %.2e on the logits, %.2e on image 0 - image 1\n", stem.c_str(), all, diff);
    EXPECT_LT(all, 1e-3) << stem;
    EXPECT_LT(diff, 1e-2) << stem;
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no NAME.onnx + NAME.input.npy + NAME.logits.npy in " << dir;
}

TEST(CnnCli, InferClassifyAndBench) {
  WGC_REQUIRE_FILE(fixture("mobilenet_v2_035.onnx"));
  using test::quote;
  auto dir = test::temp_dir("cnn_cli");
  std::string model = quote(fixture("mobilenet_v2_035.onnx").string());
  std::string out = (dir / "y.npy").string();
  auto r =
      test::run_cli("infer --model " + model + " --input " + quote(fixture("mobilenet_v2_035.input.npy").string()) +
                    " --out " + quote(out) + " --device cpu");
  ASSERT_EQ(r.rc, 0) << r.err;
  npy::Array y = npy::read(out);
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 1000}));
  EXPECT_LT(test::rel_error(y.to_f32(), npy_tensor(fixture("mobilenet_v2_035.logits.npy")).f), 1e-4);
  // No overwrite without --force; unknown output names and missing inputs are errors naming them.
  r = test::run_cli("infer --model " + model + " --input " + quote(fixture("mobilenet_v2_035.input.npy").string()) +
                    " --out " + quote(out));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  r = test::run_cli("infer --model " + model + " --input " + quote(fixture("mobilenet_v2_035.input.npy").string()) +
                    " --out " + quote(out) + " --force --output nope");
  EXPECT_NE(r.err.find("no output 'nope'"), std::string::npos) << r.err;

  r = test::run_cli("classify --model " + model + " " + quote(std::string(WGC_SOURCE_DIR) + "/docs/images/hills.png") +
                    " --top 3 --device cpu");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;  // the file, then 3 classes

  std::string js = (dir / "b.json").string();
  r = test::run_cli("bench-cnn --model " + model + " --batch 1,2 -r 1 --device cpu --json " + quote(js));
  ASSERT_EQ(r.rc, 0) << r.err;
  json::Value doc = json::parse_file(js);
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_GT(doc["results"][1]["images_per_s"].as_double(), 0);
}

// PyTorch's exporter writes a channel shuffle with a dynamic batch as Shape -> Gather -> Unsqueeze
// -> Concat -> Reshape around a Transpose (ShuffleNetV2), then Split and a ReduceMean; all of the
// shape arithmetic must resolve at plan time, per batch size, on both paths.
TEST(CnnModel, ExporterShapeChainsResolvePerBatchSize) {
  cnn::Graph g;
  g.source = "shuffle.onnx";
  g.opset = 13;
  g.inputs.push_back({"x", 1, true, {-1, 4, 3, 3}});
  g.outputs.push_back({"pooled", 1, false, {}});
  g.outputs.push_back({"rest", 1, false, {}});
  auto ints = [&](const std::string& name, Shape s, std::vector<int64_t> v) {
    g.constants[name] = std::make_shared<cnn::HostTensor>(cnn::HostTensor::ints(std::move(s), std::move(v)));
  };
  ints("zero", {}, {0});
  ints("axes0", {1}, {0});
  ints("tail5", {4}, {2, 2, 3, 3});
  ints("tail4", {3}, {-1, 3, 3});
  ints("halves", {2}, {2, 2});
  auto int_attr = [](int64_t v) {
    cnn::Attribute a;
    a.kind = cnn::Attribute::Kind::Int;
    a.i = v;
    return a;
  };
  auto node = [&](std::string op, std::vector<std::string> in, std::vector<std::string> out) {
    cnn::Node n;
    n.op = std::move(op);
    n.name = out[0] + "_node";
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    g.nodes.push_back(n);
    return &g.nodes.back();
  };
  node("Shape", {"x"}, {"s"});
  node("Gather", {"s", "zero"}, {"n"});
  node("Unsqueeze", {"n", "axes0"}, {"n1"});
  node("Concat", {"n1", "tail5"}, {"shape5"})->attrs["axis"] = int_attr(0);
  node("Reshape", {"x", "shape5"}, {"y"});
  cnn::Attribute perm;
  perm.kind = cnn::Attribute::Kind::Ints;
  perm.ints = {0, 2, 1, 3, 4};
  node("Transpose", {"y"}, {"t"})->attrs["perm"] = perm;
  node("Concat", {"n1", "tail4"}, {"shape4"})->attrs["axis"] = int_attr(0);
  node("Reshape", {"t", "shape4"}, {"z"});
  node("Split", {"z", "halves"}, {"a", "rest"})->attrs["axis"] = int_attr(1);
  cnn::Attribute axes;
  axes.kind = cnn::Attribute::Kind::Ints;
  axes.ints = {2, 3};
  cnn::Node* rm = node("ReduceMean", {"a"}, {"m"});
  rm->attrs["axes"] = axes;
  rm->attrs["keepdims"] = int_attr(0);
  node("HardSwish", {"m"}, {"pooled"});

  for (cnn::Device dev : {cnn::Device::Cpu, cnn::Device::Gpu}) {
    cnn::Model m(ctx(), g, {dev});
    for (int64_t n : {1, 3}) {
      auto x = test::random_floats(size_t(n) * 36, uint32_t(n), -4.f, 4.f);
      auto ys = m.run(std::vector<cnn::HostTensor>{cnn::HostTensor({n, 4, 3, 3}, x)});
      ASSERT_EQ(ys.size(), 2u);
      ASSERT_EQ(ys[0].shape, (Shape{n, 2}));
      ASSERT_EQ(ys[1].shape, (Shape{n, 2, 3, 3}));
      // Shuffled channel c = 2 * cpg + group holds input channel 2 * group + cpg: 0, 2 | 1, 3.
      const int from[4] = {0, 2, 1, 3};
      std::vector<float> pooled, rest;
      for (int64_t b = 0; b < n; ++b) {
        for (int c = 0; c < 2; ++c) {
          double s = 0;
          for (int p = 0; p < 9; ++p) s += x[size_t((b * 4 + from[c]) * 9 + p)];
          float mean = float(s / 9);
          pooled.push_back(mean * std::clamp(mean / 6.f + 0.5f, 0.f, 1.f));
        }
        for (int c = 2; c < 4; ++c)
          for (int p = 0; p < 9; ++p) rest.push_back(x[size_t((b * 4 + from[c]) * 9 + p)]);
      }
      EXPECT_LT(test::rel_error(ys[0].f, pooled), 1e-6) << to_string(dev) << " n=" << n;
      EXPECT_EQ(ys[1].f, rest) << to_string(dev) << " n=" << n;
    }
  }
}

// Found by fuzz_onnx: an axis of a scalar (rank 0) read past the shape.
TEST(CnnModel, AxisOfAScalarIsAnError) {
  cnn::Graph g;
  g.source = "scalar.onnx";
  g.opset = 11;
  g.inputs.push_back({"x", 1, true, {}});
  g.outputs.push_back({"y", 1, false, {}});
  cnn::Node n;
  n.op = "Split";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  cnn::Model m(std::nullopt, g);
  EXPECT_THROW(m.run(cnn::HostTensor({}, std::vector<float>{1.f})), Error);
}

// A classifier-shaped Gemm (y = x W^T + c, W and c constants) is planned as a 1x1 convolution with
// the bias fused (split K on the GPU: K = 130), and runs started back to back (Model::start, two
// staging buffers per input used in turn) each give their own inputs' outputs.
TEST(CnnModel, ClassifierGemmAndPipelinedRuns) {
  const int64_t k = 130, classes = 7, n = 3;
  cnn::Graph g;
  g.source = "classifier.onnx";
  g.opset = 13;
  g.inputs.push_back({"x", 1, true, {-1, k}});
  g.outputs.push_back({"y", 1, false, {}});
  auto w = test::random_floats(size_t(classes * k), 11), c = test::random_floats(size_t(classes), 12);
  g.constants["w"] = std::make_shared<cnn::HostTensor>(Shape{classes, k}, w);
  g.constants["c"] = std::make_shared<cnn::HostTensor>(Shape{classes}, c);
  cnn::Node gemm;
  gemm.op = "Gemm";
  gemm.name = "fc";
  gemm.inputs = {"x", "w", "c"};
  gemm.outputs = {"y"};
  cnn::Attribute one;
  one.kind = cnn::Attribute::Kind::Int;
  one.i = 1;
  gemm.attrs["transB"] = one;
  g.nodes.push_back(gemm);

  auto want = [&](const std::vector<float>& x) {
    std::vector<float> y(size_t(n * classes));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < classes; ++o) {
        double s = c[size_t(o)];
        for (int64_t i = 0; i < k; ++i) s += double(x[size_t(b * k + i)]) * w[size_t(o * k + i)];
        y[size_t(b * classes + o)] = float(s);
      }
    return y;
  };
  for (cnn::Device dev : {cnn::Device::Cpu, cnn::Device::Gpu}) {
    cnn::Model m(ctx(), g, {dev});
    std::vector<std::vector<float>> xs;
    for (uint32_t r = 0; r < 3; ++r) xs.push_back(test::random_floats(size_t(n * k), 20 + r));
    auto in = [&](size_t r) { return std::vector<cnn::HostTensor>{cnn::HostTensor({n, k}, xs[r])}; };
    const cnn::Plan& p = m.plan(in(0));
    ASSERT_EQ(p.steps.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<cnn::ConvStep>(p.steps[0].op));
    auto first = m.start(in(0));
    auto second = m.start(in(1));
    auto y1 = second.wait(), y0 = first.wait();
    auto y2 = m.run(in(2));  // the first staging buffer again
    // Another shape (its own plan, its own run encoded ahead) between two of this one, the waits
    // polling.
    set_wait_mode(WaitMode::Spin);
    auto one_row = m.run({cnn::HostTensor({1, k}, std::vector<float>(xs[2].begin(), xs[2].begin() + k))});
    auto y3 = m.run(in(0));
    set_wait_mode(WaitMode::Auto);
    for (auto [got, r] : {std::pair{&y0, 0}, {&y1, 1}, {&y2, 2}, {&y3, 0}}) {
      ASSERT_EQ(got->at(0).shape, (Shape{n, classes}));
      EXPECT_LT(test::rel_error(got->at(0).f, want(xs[size_t(r)])), 1e-5) << to_string(dev) << " run " << r;
    }
    std::vector<float> want_row = want(xs[2]);
    want_row.resize(size_t(classes));
    ASSERT_EQ(one_row.shape, (Shape{1, classes}));
    EXPECT_LT(test::rel_error(one_row.f, want_row), 1e-5);
    EXPECT_THROW(first.wait(), Error);
    // Inputs written in place (straight into the staging buffers), both buffers in turn.
    std::vector<Shape> shapes{{n, k}};
    if (dev == cnn::Device::Cpu) {
      EXPECT_THROW(m.input_in_place(shapes), Error);
      continue;
    }
    for (size_t r : {1, 2, 0}) {
      std::span<float> dst = m.input_in_place(shapes);
      ASSERT_EQ(dst.size(), size_t(n * k));
      std::copy(xs[r].begin(), xs[r].end(), dst.begin());
      auto y = m.start_in_place(shapes).wait();
      EXPECT_LT(test::rel_error(y.at(0).f, want(xs[r])), 1e-5) << "in place, run " << r;
    }
    EXPECT_THROW(m.start_in_place(shapes), Error);                        // nothing written for this run
    EXPECT_THROW(m.input_in_place(shapes, 1), Error);                     // no second input
    EXPECT_LT(test::rel_error(m.run(in(2)).at(0).f, want(xs[2])), 1e-5);  // and copied in again
  }
}
