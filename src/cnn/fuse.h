// Load-time rewrites of a graph: Identity and Dropout dropped, Constant nodes made constants,
// BatchNormalization folded into the convolution before it, and a residual Add and a Relu / Clip
// after a convolution fused into its epilogue (so each runs in the kernel that writes the
// convolution's output, not as a pass of its own); a Relu / Clip after a ConvTranspose likewise;
// the exporters' erf GELU (Div, Erf, Add, Mul, Mul) made one Gelu node.
#pragma once

#include "cnn/graph.h"

namespace wgc::cnn {

struct FuseStats {
  int batchnorms = 0, residuals = 0, activations = 0, dropped = 0, constants = 0;
  int gelus = 0;  // Div / Erf / Add / Mul / Mul chains made one Gelu node
};

FuseStats fuse(Graph& g);

}  // namespace wgc::cnn
