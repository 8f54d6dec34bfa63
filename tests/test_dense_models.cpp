// Models beyond classifiers end to end against PyTorch's float64 outputs: torchvision segmentation
// networks (LRASPP and DeepLabV3 on MobileNetV3-Large at half width), an ESPCN super-resolution
// network (DepthToSpace), a small U-Net (ConvTranspose, bilinear and nearest Resize, GroupNorm as
// exported, InstanceNorm, PRelu), a small ViT (torchvision VisionTransformer: LayerNormalization,
// erf GELU, attention) and a BERT-shaped encoder (transformers BertModel: int64 ids and mask on the
// device, Where / Equal masks), and the SSDLite320 network without its post-processing. Made by
// scripts/export_dense_models.py --size ci on the GPU machine (seeded random weights, BatchNorm
// calibrated); the folder is $WGC_DENSE_MODELS or ../shared/fixtures/dense. Full-size exports
// (--size full) use the same names and are checked the same way with WGC_DENSE_MODELS pointing at
// them.
#include "cnn.h"
#include "io/npy.h"
#include "ops/conv.h"
#include "test_util.h"

using namespace wgc;
using wgc::test::ctx;
namespace fs = std::filesystem;

namespace {

fs::path dense_dir() { return test::env_dir("WGC_DENSE_MODELS", (test::fixtures_dir() / "dense").c_str()); }

cnn::HostTensor npy_tensor(const fs::path& p) {
  npy::Array a = npy::read(p);
  std::vector<float> f = a.to_f32();
  if (a.dtype.find('i') == std::string::npos) return {a.shape, std::move(f)};
  std::vector<int64_t> v;
  for (float x : f) v.push_back(int64_t(x));  // ids and masks: exact below 2^24
  return cnn::HostTensor::ints(a.shape, std::move(v));
}

// The part of an output that depends on the input: image (sequence) 0 minus image 1.
std::vector<float> first_minus_second(const std::vector<float>& v) {
  size_t half = v.size() / 2;
  std::vector<float> d(half);
  for (size_t i = 0; i < half; ++i) d[i] = v[i] - v[half + i];
  return d;
}

// Runs NAME on both paths and checks every output against NAME.outK.npy: max |error| / max |ref|
// below 1e-4 (1e-3 where a convolution runs as Winograd), and, for batches of two, the difference
// between the two items within ten times that.
void check_model(const std::string& name, size_t inputs, size_t outputs) {
  fs::path dir = dense_dir();
  fs::path model = dir / (name + ".onnx");
  if (!fs::exists(model))
    GTEST_SKIP() << "model not found: " << model << " (scripts/export_dense_models.py, WGC_DENSE_MODELS)";
  std::vector<cnn::HostTensor> in;
  for (size_t k = 0; k < inputs; ++k) in.push_back(npy_tensor(dir / (name + ".in" + std::to_string(k) + ".npy")));
  std::vector<cnn::HostTensor> want;
  for (size_t k = 0; k < outputs; ++k) want.push_back(npy_tensor(dir / (name + ".out" + std::to_string(k) + ".npy")));
  for (cnn::Device d : {cnn::Device::Cpu, cnn::Device::Gpu}) {
    cnn::Model m(ctx(), model, {d});
    std::vector<cnn::HostTensor> got = m.run(in);
    bool winograd = false;
    if (d == cnn::Device::Gpu)
      for (const auto& s : m.plan(in).steps)
        if (const auto* c = std::get_if<cnn::ConvStep>(&s.op))
          winograd |= choose_conv2d(ctx(), c->dims) == Conv2dVersion::Winograd2x2;
    double tol = winograd ? 1e-3 : 1e-4;
    // Integer inputs (ids, masks) are run-time tensors on the device, not planned by value.
    for (size_t k = 0; k < in.size(); ++k) {
      if (in[k].integer) {
        EXPECT_GE(m.plan(in).input_slots[k], 0) << name << " input " << k;
      }
    }
    ASSERT_GE(got.size(), outputs);
    for (size_t k = 0; k < outputs; ++k) {
      std::string what = name + " output " + std::to_string(k) + " (" + std::string(to_string(d)) + ")";
      ASSERT_EQ(got[k].shape, want[k].shape) << what;
      double all = test::rel_error(got[k].f, want[k].f);
      EXPECT_LT(all, tol) << what;
      double diff = 0;
      if (want[k].shape[0] == 2) {
        diff = test::rel_error(first_minus_second(got[k].f), first_minus_second(want[k].f));
        EXPECT_LT(diff, 10 * tol) << what << ": the input-dependent part";
      }
      std::printf("%s: max rel error %.2e, item 0 - item 1 %.2e%s\n", what.c_str(), all, diff,
                  winograd ? " (Winograd)" : "");
    }
  }
}

}  // namespace

TEST(DenseModels, LrasppMobileNetV3) { check_model("lraspp_mobilenet_v3_large", 1, 1); }
TEST(DenseModels, DeepLabV3MobileNetV3) { check_model("deeplabv3_mobilenet_v3_large", 1, 1); }
TEST(DenseModels, FcnResNet50) { check_model("fcn_resnet50", 1, 1); }  // --size full only
TEST(DenseModels, EspcnDepthToSpace) { check_model("espcn", 1, 1); }
TEST(DenseModels, UNetConvTransposeResizeNorms) { check_model("unet", 1, 1); }
TEST(DenseModels, VisionTransformer) { check_model("vit_tiny", 1, 1); }
TEST(DenseModels, VitB16) { check_model("vit_b_16", 1, 1); }  // --size full only
TEST(DenseModels, BertEncoder) { check_model("bert", 3, 1); }

TEST(DenseModels, TransformersGeluFused) {
  for (const char* name : {"vit_tiny", "bert"}) {
    fs::path model = dense_dir() / (std::string(name) + ".onnx");
    if (!fs::exists(model)) GTEST_SKIP() << "model not found: " << model;
    cnn::Model m(model);
    EXPECT_EQ(m.fused().gelus, 2) << name;  // one per layer, two layers
    for (const auto& n : m.graph().nodes) EXPECT_NE(n.op, "Erf") << name;
  }
}
TEST(DenseModels, SsdLiteHead) { check_model("ssdlite320_mobilenet_v3_large_head", 1, 2); }
