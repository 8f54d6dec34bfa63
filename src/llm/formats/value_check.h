// Finite weights: one NaN or infinity in a norm or an embedding row turns the activations to NaN,
// and the output to one token repeated (a damaged download, a bad conversion). open_model checks
// the tensors that are cheap to scan and that every token goes through (the norms, the biases,
// the embedding and the output projection) and refuses a file with non-finite values there.
#pragma once

#include "llm/formats/model_file.h"

#include <cstdint>
#include <optional>

namespace wgc::llm {

// The index of t's first element that is NaN or infinite (dequantized for block types), or
// nullopt when all are finite (and for integer types).
std::optional<int64_t> first_non_finite(const ModelTensor& t);

// Throws wgc::Error naming the file, the tensor and the element when a checked tensor of `m` holds
// a NaN or an infinity: the norms and biases (1-D), the token embedding and the output projection.
// A streamed file's tensors are not at hand: ModelFile::load checks each one it reads instead.
void check_finite_weights(const ModelFile& m);
// The same for one tensor of m (nothing to do unless it is one of those checked).
void check_finite_tensor(const ModelFile& m, const ModelTensor& t);

}  // namespace wgc::llm
