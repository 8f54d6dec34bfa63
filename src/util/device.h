// Where a model runs (an ONNX image model, a language model): the GPU through WebGPU, the CPU's
// own code, or Auto (each model type's rule; see cnn/model.h and llm/model/llama.h).
#pragma once

#include <string_view>

namespace wgc {

enum class Device { Auto, Gpu, Cpu };
std::string_view to_string(Device d);        // "auto", "gpu", "cpu"
Device parse_device(std::string_view name);  // wgc::Error listing the names otherwise

}  // namespace wgc
