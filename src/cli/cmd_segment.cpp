// wgc segment: semantic segmentation of an image by an ONNX model (torchvision's LRASPP, DeepLabV3,
// FCN exported to ONNX, or any model of [1, 3, h, w] -> [1, classes, h, w] logits).
#include "cli/cnn_flags.h"
#include "cli/command.h"
#include "cnn/vision.h"
#include "io/image.h"
#include "util/json.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace wgc::cli {
namespace {

struct Flags {
  GpuFlags gpu;
  std::optional<std::string> model, out;
  std::string image, device = "auto";
  int size = 520;
  float alpha = 0.5f;
  bool json = false, force = false;
};

int segment_cmd(const Flags& f) {
  if (!f.model) throw UsageError("--model FILE.onnx is required");
  if (!f.out && !f.json) throw UsageError("give --out FILE.png (the classes over the image) and / or --json");
  if (f.size < 8 || f.size > 4096) throw UsageError("--size expects 8..4096, got " + std::to_string(f.size));
  if (!(f.alpha >= 0 && f.alpha <= 1)) throw UsageError("--alpha expects 0..1");
  Overwrite overwrite = overwrite_rule(f.force);
  if (f.out) check_output(*f.out, overwrite);
  Image img = read_image(f.image);
  // torchvision's segmentation preset: the shorter side to --size (bilinear), ImageNet statistics.
  double s = double(f.size) / std::min(img.width, img.height);
  int w = std::max(1, int(std::lround(img.width * s))), h = std::max(1, int(std::lround(img.height * s)));
  cnn::HostTensor x = cnn::image_tensor(img, w, h, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
  CnnModel lm = load_cnn_model(*f.model, cnn::parse_device(f.device), f.gpu);
  cnn::HostTensor y = lm.model->run(x);
  std::vector<int32_t> map = cnn::class_map(y);
  int mw = int(y.shape[3]), mh = int(y.shape[2]);
  std::map<int, size_t> count;
  for (int32_t c : map) ++count[c];
  if (f.out) write_image(*f.out, cnn::overlay_classes(img, map, mw, mh, f.alpha), 92, overwrite);
  if (f.json) {
    json::Value classes = json::Value::array();
    for (auto [c, k] : count) {
      json::Value e = json::Value::object();
      e.set("class", c);
      e.set("pixels", int64_t(k));
      e.set("fraction", double(k) / double(map.size()));
      auto col = cnn::class_colour(c);
      e.set("colour", json::Array{int(col[0]), int(col[1]), int(col[2])});
      classes.push_back(e);
    }
    json::Value doc = json::Value::object();
    doc.set("image", f.image);
    doc.set("map_size", json::Array{mw, mh});
    doc.set("classes", classes);
    std::printf("%s\n", doc.dump(1).c_str());
  } else {
    std::printf("%s: %d x %d map, %zu classes present\n", f.image.c_str(), mw, mh, count.size());
    for (auto [c, k] : count) std::printf("  class %3d  %6.2f%%\n", c, 100.0 * double(k) / double(map.size()));
  }
  if (f.out) std::fprintf(stderr, "wgc segment: wrote %s\n", f.out->c_str());
  return 0;
}

Register reg{
    {"segment", "semantic segmentation of an image by an ONNX model: the classes coloured over it", [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_text(app, "--model,-m", f->model, "the ONNX model (required)")->type_name("FILE");
       app.add_option("IMAGE", f->image, "a PNG or JPEG image")->required();
       add_text(app, "--out,-o", f->out, "the image with the classes over it (PNG or JPEG)")->type_name("FILE");
       add_number(app, "--size", f->size, "the shorter side the model sees, in pixels");
       add_number(app, "--alpha", f->alpha, "the class colours' weight over the image");
       app.add_flag("--json", f->json, "print the classes present as JSON");
       app.add_option("--device", f->device, "where the model runs: auto, gpu or cpu");
       add_force(app, f->force);
       add_gpu_flags(app, f->gpu);
       return [f] { return segment_cmd(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
