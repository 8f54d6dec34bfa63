// What the commands that run ONNX models share (infer, classify, bench-cnn, segment, detect,
// upscale): loading a model on the device the flags ask for.
#pragma once

#include "cli/command.h"
#include "cnn/model.h"

#include <memory>
#include <optional>
#include <string>

namespace wgc::cli {

// A model on the device the flags ask for; the GPU context is made only when it can be used.
struct CnnModel {
  std::optional<Context> ctx;
  std::unique_ptr<cnn::Model> model;
};
CnnModel load_cnn_model(const std::string& path, cnn::Device dev, const GpuFlags& g);

}  // namespace wgc::cli
