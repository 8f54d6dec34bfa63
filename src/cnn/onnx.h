// Reads ONNX models (protobuf, through Debian's libonnx) into a cnn::Graph. Model files are
// untrusted: sizes, counts, ranks and nesting are bounded before anything is allocated, and every
// problem is a wgc::Error naming the file, the node (its name, op and the opset) or the tensor.
//
//   cnn::Graph g = cnn::load_onnx("mobilenet_v2.onnx");
#pragma once

#include "cnn/graph.h"

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace wgc::cnn {

// Bounds on what a model may declare (each past one is an error naming the limit).
inline constexpr uint64_t kMaxModelBytes = (2ull << 30) - 1;  // protobuf's own message limit
inline constexpr size_t kMaxNodes = 100000;
inline constexpr size_t kMaxConstants = 100000;
inline constexpr size_t kMaxAttributes = 64;  // per node
inline constexpr size_t kMaxNodeIo = 4096;    // inputs or outputs of one node (Concat of many)
inline constexpr size_t kMaxTensorRank = 8;
inline constexpr int64_t kMaxTensorElements = 1ll << 31;
inline constexpr int kMaxProtobufNesting = 32;  // messages inside messages
inline constexpr int kMaxSubgraphDepth = 8;     // If inside If ...
inline constexpr int64_t kMinOpset = 6, kMaxOpset = 18;

Graph load_onnx(const std::filesystem::path& path);
Graph parse_onnx(std::span<const std::byte> bytes, const std::string& source);

// A serialized TensorProto (the backend tests' input_0.pb, output_0.pb), with its name.
struct NamedTensor {
  std::string name;
  int32_t elem_type = 0;  // as stored (the values are widened, see HostTensor)
  HostTensor value;
};
NamedTensor load_tensor_pb(const std::filesystem::path& path);
NamedTensor parse_tensor_pb(std::span<const std::byte> bytes, const std::string& source);

}  // namespace wgc::cnn
