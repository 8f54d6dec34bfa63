// Detection on the host (cpu/detect.h, cnn/detection.h): IoU and NMS on hand-made boxes, and
// SSDLite320 end to end: wgc runs the network (the head model, scripts/export_dense_models.py) and
// decodes and suppresses; torchvision's whole model (its own post-processing, float64) gave the
// boxes, scores and labels to match.
#include "cnn.h"
#include "cnn/detection.h"
#include "io/npy.h"
#include "test_util.h"

using namespace wgc;
using wgc::test::ctx;
namespace fs = std::filesystem;

TEST(Detection, IouAndNms) {
  cpu::Box a{0, 0, 10, 10}, b{5, 0, 15, 10}, c{20, 20, 30, 30};
  EXPECT_FLOAT_EQ(cpu::iou(a, b), 50.f / 150.f);
  EXPECT_EQ(cpu::iou(a, c), 0.f);
  std::vector<cpu::Box> boxes = {a, b, c, {0, 0, 10, 9}};
  std::vector<float> scores = {0.9f, 0.8f, 0.7f, 0.95f};
  // d (0.95) first; a overlaps it by 0.9 and goes; b overlaps d by 45/145 and stays at 0.5.
  EXPECT_EQ(cpu::nms(boxes, scores, 0.5f), (std::vector<uint32_t>{3, 1, 2}));
  EXPECT_EQ(cpu::nms(boxes, scores, 0.2f), (std::vector<uint32_t>{3, 2}));
  EXPECT_EQ(cpu::nms(boxes, scores, 0.5f, 2), (std::vector<uint32_t>{3, 1}));
  // ONNX's form: [y1, x1, y2, x2] with corners flipped, two classes, a score threshold.
  std::vector<float> onnx_boxes = {0, 0, 10, 10, 10, 5, 0, 15, 20, 20, 30, 30};
  std::vector<float> onnx_scores = {0.9f, 0.8f, 0.1f, 0.2f, 0.3f, 0.4f};
  auto sel = cpu::non_max_suppression(onnx_boxes, onnx_scores, 1, 2, 3, 10, 0.3f, 0.15f, false);
  // Class 0: box 1 overlaps box 0 by 1/3 > 0.3 and goes, box 2 scores below 0.15. Class 1: box 2,
  // then box 1 (no overlap), box 0 overlaps box 1 and goes.
  ASSERT_EQ(sel.size(), 3u);
  EXPECT_EQ(sel[0], (std::array<int64_t, 3>{0, 0, 0}));
  EXPECT_EQ(sel[1], (std::array<int64_t, 3>{0, 1, 2}));
  EXPECT_EQ(sel[2], (std::array<int64_t, 3>{0, 1, 1}));
}

TEST(Detection, SsdLiteMatchesTorchvision) {
  fs::path dir = test::env_dir("WGC_DENSE_MODELS", (test::fixtures_dir() / "dense").c_str());
  const std::string name = "ssdlite320_mobilenet_v3_large";
  WGC_REQUIRE_FILE(dir / (name + "_head.onnx"));
  auto read = [&](const std::string& f) { return npy::read(dir / f); };
  npy::Array x = read(name + "_head.in0.npy"), anchors = read(name + "_head.anchors.npy");
  cnn::Model m(dir / (name + "_head.onnx"));  // the CPU path (the GPU path: test_dense_models)
  auto y = m.run(std::vector<cnn::HostTensor>{{x.shape, x.to_f32()}});
  ASSERT_EQ(y.size(), 2u);
  uint32_t classes = uint32_t(y[1].shape.back());
  auto dets = cnn::ssd_postprocess(y[0].f, y[1].f, anchors.to_f32(), classes);  // the model's settings
  std::vector<float> boxes = read(name + ".out0.npy").to_f32(), scores = read(name + ".out1.npy").to_f32();
  std::vector<float> labels = read(name + ".out2.npy").to_f32();
  ASSERT_EQ(dets.size(), scores.size());
  std::vector<float> got_boxes, got_scores;
  size_t same_label = 0;
  for (size_t i = 0; i < dets.size(); ++i) {
    got_boxes.insert(got_boxes.end(), {dets[i].box.x1, dets[i].box.y1, dets[i].box.x2, dets[i].box.y2});
    got_scores.push_back(dets[i].score);
    same_label += float(dets[i].label) == labels[i];
  }
  EXPECT_EQ(same_label, dets.size());
  EXPECT_LT(test::rel_error(got_scores, scores), 1e-4);
  EXPECT_LT(test::rel_error(got_boxes, boxes), 1e-4);
  std::printf("SSDLite: %zu detections; scores %.2e, boxes %.2e max rel error against torchvision (float64)\n",
              dets.size(), test::rel_error(got_scores, scores), test::rel_error(got_boxes, boxes));
}
