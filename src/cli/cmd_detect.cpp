// wgc detect: object detection with an SSD-style ONNX model that gives per-anchor box regressions
// and class logits (torchvision's SSD / SSDLite network without its post-processing, as
// scripts/export_dense_models.py exports it, with its anchors as .npy); torchvision's decoding and
// NMS on the host (cnn/detection.h).
#include "cli/cnn_flags.h"
#include "cli/command.h"
#include "cnn/vision.h"
#include "io/image.h"
#include "io/npy.h"
#include "util/json.h"

#include <algorithm>

namespace wgc::cli {
namespace {

struct Flags {
  GpuFlags gpu;
  std::optional<std::string> model, anchors, out;
  std::string image, device = "auto";
  int size = 320, max = 100;
  float score = 0.3f, iou = 0.55f, mean = 0.5f, std = 0.5f;
  bool json = false, force = false;
};

int detect_cmd(const Flags& f) {
  if (!f.model) throw UsageError("--model FILE.onnx is required");
  if (!f.anchors) throw UsageError("--anchors FILE.npy is required (the model's anchors, [anchors, 4] corners)");
  if (f.size < 8 || f.size > 4096) throw UsageError("--size expects 8..4096, got " + std::to_string(f.size));
  if (!(f.score >= 0 && f.score <= 1) || !(f.iou >= 0 && f.iou <= 1)) throw UsageError("--score and --iou expect 0..1");
  if (f.max < 1) throw UsageError("--max expects a positive count");
  if (!(f.std > 0)) throw UsageError("--std expects a positive value");
  Overwrite overwrite = overwrite_rule(f.force);
  if (f.out) check_output(*f.out, overwrite);
  Image img = read_image(f.image);
  npy::Array anchors = npy::read(*f.anchors);
  if (anchors.shape.size() != 2 || anchors.shape[1] != 4)
    throw Error("wgc detect: " + *f.anchors + " holds " + to_string(anchors.shape) + ", not [anchors, 4]");
  cnn::HostTensor x = cnn::image_tensor(img, f.size, f.size, {f.mean, f.mean, f.mean}, {f.std, f.std, f.std});
  CnnModel lm = load_cnn_model(*f.model, cnn::parse_device(f.device), f.gpu);
  auto ys = lm.model->run(std::vector<cnn::HostTensor>{x});
  if (ys.size() < 2 || ys[0].shape.size() != 3 || ys[1].shape.size() != 3 || ys[0].shape[2] != 4 ||
      ys[0].shape[1] != anchors.shape[0] || ys[1].shape[1] != anchors.shape[0])
    throw Error("wgc detect: " + *f.model + " gives " +
                (ys.empty() ? std::string("no outputs") : to_string(ys[0].shape)) +
                (ys.size() > 1 ? " and " + to_string(ys[1].shape) : std::string()) +
                ", not box regressions [1, anchors, 4] and class logits [1, anchors, classes] for " +
                std::to_string(anchors.shape[0]) + " anchors");
  cnn::DetectionOptions o;
  o.nms_thresh = f.iou;
  o.image_width = o.image_height = float(f.size);
  auto dets = cnn::ssd_postprocess(ys[0].f, ys[1].f, anchors.to_f32(), uint32_t(ys[1].shape[2]), o);
  // Kept above --score, at most --max; boxes back to the image's pixels.
  std::vector<cnn::Detection> shown;
  float sx = float(img.width) / float(f.size), sy = float(img.height) / float(f.size);
  for (auto d : dets) {
    if (d.score < f.score || int(shown.size()) >= f.max) continue;
    d.box = {d.box.x1 * sx, d.box.y1 * sy, d.box.x2 * sx, d.box.y2 * sy};
    shown.push_back(d);
  }
  if (f.out) write_image(*f.out, cnn::draw_detections(img, shown), 92, overwrite);
  if (f.json) {
    json::Value list = json::Value::array();
    for (const auto& d : shown) {
      json::Value e = json::Value::object();
      e.set("label", d.label);
      e.set("score", double(d.score));
      e.set("box", json::Array{double(d.box.x1), double(d.box.y1), double(d.box.x2), double(d.box.y2)});
      list.push_back(e);
    }
    json::Value doc = json::Value::object();
    doc.set("image", f.image);
    doc.set("detections", list);
    std::printf("%s\n", doc.dump(1).c_str());
  } else {
    std::printf("%s: %zu detections (score >= %.2f)\n", f.image.c_str(), shown.size(), double(f.score));
    for (const auto& d : shown)
      std::printf("  class %3d  %5.3f  [%.1f, %.1f, %.1f, %.1f]\n", d.label, double(d.score), double(d.box.x1),
                  double(d.box.y1), double(d.box.x2), double(d.box.y2));
  }
  if (f.out) std::fprintf(stderr, "wgc detect: wrote %s\n", f.out->c_str());
  return 0;
}

Register reg{
    {"detect", "object detection with an SSD-style ONNX model: boxes drawn on the image, or JSON", [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_text(app, "--model,-m", f->model, "the ONNX model (required): box regressions and class logits")
           ->type_name("FILE");
       add_text(app, "--anchors", f->anchors, "the model's anchors, [anchors, 4] corners (.npy, required)")
           ->type_name("FILE");
       app.add_option("IMAGE", f->image, "a PNG or JPEG image")->required();
       add_text(app, "--out,-o", f->out, "the image with the boxes drawn (PNG or JPEG)")->type_name("FILE");
       add_number(app, "--score", f->score, "the lowest score shown");
       add_number(app, "--iou", f->iou, "NMS: the overlap above which the weaker box goes");
       add_number(app, "--max", f->max, "the most detections shown");
       add_number(app, "--size", f->size, "the square side the model sees, in pixels");
       add_number(app, "--mean", f->mean, "input normalisation: (pixel in [0, 1] - mean) / std");
       add_number(app, "--std", f->std, "input normalisation: (pixel in [0, 1] - mean) / std");
       app.add_flag("--json", f->json, "print the detections as JSON");
       app.add_option("--device", f->device, "where the model runs: auto, gpu or cpu");
       add_force(app, f->force);
       add_gpu_flags(app, f->gpu);
       return [f] { return detect_cmd(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
