// wgc's ONNX image models in one include: load a model, run it on the GPU (or the CPU references),
// inspect its graph and plan. See cnn/model.h.
#pragma once

#include "cnn/graph.h"
#include "cnn/model.h"
#include "cnn/onnx.h"
#include "ops/tensor_ops.h"
#include "wgc.h"
