// wgc upscale: super-resolution of an image by an ONNX model of [1, c, h, w] in [0, 1] to
// [1, c, h r, w r] (ESPCN and the like: c = 1 runs on the luma, c = 3 on RGB).
#include "cli/cnn_flags.h"
#include "cli/command.h"
#include "cnn/vision.h"
#include "io/image.h"

namespace wgc::cli {
namespace {

struct Flags {
  GpuFlags gpu;
  std::optional<std::string> model, out;
  std::string image, device = "auto";
  bool force = false;
};

int upscale_cmd(const Flags& f) {
  if (!f.model) throw UsageError("--model FILE.onnx is required");
  if (!f.out) throw UsageError("--out FILE.png is required");
  Overwrite overwrite = overwrite_rule(f.force);
  check_output(*f.out, overwrite);
  Image img = read_image(f.image);
  CnnModel lm = load_cnn_model(*f.model, cnn::parse_device(f.device), f.gpu);
  const cnn::Graph& g = lm.model->graph();
  if (g.inputs.size() != 1)
    throw Error("wgc upscale: " + *f.model + " takes " + std::to_string(g.inputs.size()) + " inputs, not 1");
  const auto& dims = g.inputs[0].dims;
  int channels = g.inputs[0].has_shape && dims.size() == 4 && dims[1] > 0 ? int(dims[1]) : 3;
  Image big = cnn::upscale(img, channels, [&](const cnn::HostTensor& x) { return lm.model->run(x); });
  write_image(*f.out, big, 95, overwrite);
  std::fprintf(stderr, "wgc upscale: %d x %d -> %d x %d (%s), wrote %s\n", img.width, img.height, big.width, big.height,
               channels == 1 ? "luma" : "RGB", f.out->c_str());
  return 0;
}

Register reg{{"upscale", "super-resolution of an image by an ONNX model (ESPCN-style: luma or RGB)", [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                add_text(app, "--model,-m", f->model, "the ONNX model (required)")->type_name("FILE");
                app.add_option("IMAGE", f->image, "a PNG or JPEG image")->required();
                add_text(app, "--out,-o", f->out, "the larger image (PNG or JPEG, required)")->type_name("FILE");
                app.add_option("--device", f->device, "where the model runs: auto, gpu or cpu");
                add_force(app, f->force);
                add_gpu_flags(app, f->gpu);
                return [f] { return upscale_cmd(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
