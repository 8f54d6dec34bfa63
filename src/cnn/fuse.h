// Load-time rewrites of a graph: Identity and Dropout dropped, Constant nodes made constants,
// BatchNormalization folded into the convolution before it, and a residual Add and a Relu / Clip
// after a convolution fused into its epilogue (so each runs in the kernel that writes the
// convolution's output, not as a pass of its own); a Relu / Clip after a ConvTranspose likewise;
// the exporters' erf GELU (Div, Erf, Add, Mul, Mul) made one Gelu node; attention
// (MatMul(Q, Kt) -> [Mul | Div by a scalar] -> [Add mask] -> Softmax(last axis) -> MatMul(P, V), as
// PyTorch exports ViT's and BERT's) made one FusedAttention node (one kernel, ops/fused_attention.h).
#pragma once

#include "cnn/graph.h"

namespace wgc::cnn {

struct FuseStats {
  int batchnorms = 0, residuals = 0, activations = 0, dropped = 0, constants = 0;
  int gelus = 0;       // Div / Erf / Add / Mul / Mul chains made one Gelu node
  int attentions = 0;  // MatMul / scale / mask / Softmax / MatMul chains made one FusedAttention node
};

struct FuseOptions {
  bool attention = true;
};

FuseStats fuse(Graph& g, FuseOptions options = {});

}  // namespace wgc::cnn
