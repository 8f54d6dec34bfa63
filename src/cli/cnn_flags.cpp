#include "cli/cnn_flags.h"

#include "cnn/onnx.h"
#include "gpu/context.h"

namespace wgc::cli {

CnnModel load_cnn_model(const std::string& path, cnn::Device dev, const GpuFlags& g) {
  CnnModel m;
  if (dev != cnn::Device::Cpu) m.ctx.emplace(g.context_options());
  m.model = std::make_unique<cnn::Model>(m.ctx, cnn::load_onnx(path), cnn::ModelOptions{dev});
  return m;
}

}  // namespace wgc::cli
