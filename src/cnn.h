// wgc/cnn.h: one include for the ONNX image-model layer (installed as <wgc/cnn.h>): load a
// model, run it on the GPU (or the CPU references), inspect its graph and plan. See cnn/model.h.
// Includes <wgc.h>.
#pragma once

#include "cnn/graph.h"
#include "cnn/model.h"
#include "cnn/onnx.h"
#include "ops/tensor_ops.h"
#include "wgc.h"
