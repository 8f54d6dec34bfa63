// wgc segment / detect / upscale on a generated image with the models of test_dense_models (their
// folder: $WGC_DENSE_MODELS or ../shared/fixtures/dense), against the library calls they wrap, and
// the library helpers (cnn/vision.h) on their own.
#include "cnn.h"
#include "cnn/vision.h"
#include "io/image.h"
#include "io/npy.h"
#include "test_util.h"
#include "util/json.h"

using namespace wgc;
namespace fs = std::filesystem;

namespace {

fs::path dense_dir() { return test::env_dir("WGC_DENSE_MODELS", (test::fixtures_dir() / "dense").c_str()); }

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("wgc_dense_cli_" + std::to_string(getpid()));
  fs::create_directories(d);
  return d / name;
}

// A 57 x 41 RGB image of gradients and a bright square (something for a model to look at).
fs::path test_image() {
  fs::path p = scratch("in.png");
  if (fs::exists(p)) return p;
  Image img(57, 41, 3);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      img.at(x, y, 0) = uint8_t(x * 4);
      img.at(x, y, 1) = uint8_t(y * 6);
      img.at(x, y, 2) = (x > 20 && x < 35 && y > 10 && y < 25) ? 250 : 30;
    }
  write_png(p, img);
  return p;
}

}  // namespace

TEST(Vision, ColoursMapsAndYCbCr) {
  EXPECT_EQ(cnn::class_colour(0), (std::array<uint8_t, 3>{0, 0, 0}));
  EXPECT_EQ(cnn::class_colour(1), (std::array<uint8_t, 3>{128, 0, 0}));       // PASCAL VOC: aeroplane
  EXPECT_EQ(cnn::class_colour(15), (std::array<uint8_t, 3>{192, 128, 128}));  // person
  cnn::HostTensor logits({1, 3, 1, 2}, {0, 5, 2, 1, 1, 9});                   // pixel 0: class 1; pixel 1: class 2
  EXPECT_EQ(cnn::class_map(logits), (std::vector<int32_t>{1, 2}));
  float y, cb, cr, r, g, b;
  cnn::rgb_to_ycbcr(0.2f, 0.6f, 0.9f, y, cb, cr);
  cnn::ycbcr_to_rgb(y, cb, cr, r, g, b);
  EXPECT_NEAR(r, 0.2f, 1e-5);
  EXPECT_NEAR(g, 0.6f, 1e-5);
  EXPECT_NEAR(b, 0.9f, 1e-5);
  // An identity "model" upscales nothing; one that repeats pixels makes a 2x image of the same
  // colours (through luma and the bilinear chroma).
  Image img = read_image(test_image());
  auto twice = [](const cnn::HostTensor& x) {
    int64_t h = x.shape[2], w = x.shape[3];
    cnn::HostTensor t({1, x.shape[1], 2 * h, 2 * w}, std::vector<float>(size_t(x.numel() * 4)));
    for (int64_t c = 0; c < x.shape[1]; ++c)
      for (int64_t i = 0; i < 2 * h; ++i)
        for (int64_t j = 0; j < 2 * w; ++j)
          t.f[size_t((c * 2 * h + i) * 2 * w + j)] = x.f[size_t((c * h + i / 2) * w + j / 2)];
    return t;
  };
  for (int ch : {1, 3}) {
    Image big = cnn::upscale(img, ch, twice);
    ASSERT_EQ(big.width, 2 * img.width);
    // RGB: the pixels repeated exactly; luma: the brightness repeated (to rounding), the colour
    // scaled bilinearly (it differs only near the square's edges).
    double worst = 0;
    auto luma = [](const Image& im, int x, int yy) {
      return 0.299 * im.at(x, yy, 0) + 0.587 * im.at(x, yy, 1) + 0.114 * im.at(x, yy, 2);
    };
    for (int yy = 0; yy < big.height; ++yy)
      for (int xx = 0; xx < big.width; ++xx) {
        if (ch == 3)
          for (int k = 0; k < 3; ++k)
            worst = std::max(worst, double(std::abs(big.at(xx, yy, k) - img.at(xx / 2, yy / 2, k))));
        else
          worst = std::max(worst, std::fabs(luma(big, xx, yy) - luma(img, xx / 2, yy / 2)));
      }
    EXPECT_LE(worst, ch == 3 ? 0.0 : 2.5) << ch;
  }
}

TEST(DenseCli, SegmentDetectUpscale) {
  fs::path dir = dense_dir();
  WGC_REQUIRE_FILE(dir / "lraspp_mobilenet_v3_large.onnx");
  WGC_REQUIRE_FILE(dir / "espcn.onnx");
  std::string img = test::quote(test_image().string());
  // segment: the JSON's fractions add up to 1 and the picture has the image's size.
  fs::path seg = scratch("seg.png");
  auto r = test::run_cli("segment --device cpu -m " + test::quote((dir / "lraspp_mobilenet_v3_large.onnx").string()) +
                         " " + img + " --size 48 --json --force -o " + test::quote(seg.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  json::Value doc = json::parse(r.out);
  double total = 0;
  for (const auto& c : doc["classes"].items()) total += c["fraction"].as_double();
  EXPECT_NEAR(total, 1.0, 1e-9);
  EXPECT_EQ(read_image(seg).width, 57);
  // The output is not overwritten without --force.
  r = test::run_cli("segment --device cpu -m " + test::quote((dir / "lraspp_mobilenet_v3_large.onnx").string()) + " " +
                    img + " -o " + test::quote(seg.string()));
  EXPECT_NE(r.rc, 0);
  // upscale: ESPCN triples each side.
  fs::path up = scratch("up.png");
  r = test::run_cli("upscale --device cpu -m " + test::quote((dir / "espcn.onnx").string()) + " " + img +
                    " --force -o " + test::quote(up.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  Image big = read_image(up);
  EXPECT_EQ(big.width, 3 * 57);
  EXPECT_EQ(big.height, 3 * 41);
  // detect: usage errors first (no anchors; a model that is no detector), then the real thing.
  r = test::run_cli("detect -m " + test::quote((dir / "espcn.onnx").string()) + " " + img);
  EXPECT_EQ(r.rc, 2) << r.err;
  fs::path ssd = dir / "ssdlite320_mobilenet_v3_large_head.onnx";
  if (!fs::exists(ssd)) GTEST_SKIP() << "no " << ssd << ": wgc detect not run";
  fs::path anchors = dir / "ssdlite320_mobilenet_v3_large_head.anchors.npy";
  r = test::run_cli("detect --device cpu -m " + test::quote((dir / "espcn.onnx").string()) + " --anchors " +
                    test::quote(anchors.string()) + " " + img);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("does not match"), std::string::npos) << r.err;  // a 1-channel model
  fs::path det = scratch("det.png");
  r = test::run_cli("detect --device cpu -m " + test::quote(ssd.string()) + " --anchors " +
                    test::quote(anchors.string()) + " " + img + " --score 0.05 --max 7 --json --force -o " +
                    test::quote(det.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  doc = json::parse(r.out);
  const auto& dets = doc["detections"].items();
  EXPECT_LE(dets.size(), 7u);
  // The same through the library: the model on the 320 x 320 input, torchvision's post-processing.
  cnn::Model m(ssd);
  Image im = read_image(test_image());
  auto ys =
      m.run(std::vector<cnn::HostTensor>{cnn::image_tensor(im, 320, 320, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f})});
  auto want = cnn::ssd_postprocess(ys[0].f, ys[1].f, npy::read(anchors).to_f32(), uint32_t(ys[1].shape[2]));
  size_t k = 0;
  for (const auto& d : want) {
    if (d.score < 0.05f || k >= dets.size()) continue;
    EXPECT_EQ(dets[k]["label"].as_int(), d.label);
    EXPECT_NEAR(dets[k]["score"].as_double(), d.score, 1e-6);
    EXPECT_NEAR(dets[k]["box"][0].as_double(), d.box.x1 * 57.0 / 320, 1e-3);
    ++k;
  }
  EXPECT_EQ(k, dets.size());
  EXPECT_EQ(read_image(det).height, 41);
}
