// An ONNX model as the graph executor sees it: nodes in topological order, constants (initializers
// and Constant nodes) on the host, the inputs and outputs. Made by cnn/onnx.h from a file; it knows
// no protobuf and no GPU.
#pragma once

#include "cpu/conv.h"
#include "cpu/tensor_ops.h"
#include "util/error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::cnn {

// A model uses something wgc does not support (an op, attribute, data type or opset): the
// conformance test counts these apart from wrong results.
struct Unsupported : Error {
  using Error::Error;
};

// Shapes as wgc::Shape (gpu/tensor.h) is, without the GPU layer: the loader and planner link
// without Dawn (the fuzz target).
using Shape = std::vector<int64_t>;
int64_t element_count(const Shape& s);     // the product of the dims (1 for a scalar)
std::string shape_string(const Shape& s);  // "[1, 3, 224, 224]"

// A tensor on the host: the graph's constants (initializers, Constant nodes, shapes computed at
// load) and the model's inputs and outputs. f32 values, or i64 ones (shapes, indices, axes; ONNX's
// integer and bool types are widened to i64, float16 / bfloat16 / double become f32).
struct HostTensor {
  Shape shape;
  bool integer = false;
  std::vector<float> f;
  std::vector<int64_t> i;

  HostTensor() = default;
  HostTensor(Shape s, std::vector<float> data) : shape(std::move(s)), f(std::move(data)) {}
  static HostTensor ints(Shape s, std::vector<int64_t> data);
  int64_t numel() const { return element_count(shape); }
};
using HostTensorPtr = std::shared_ptr<const HostTensor>;

struct Graph;

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Graph, Other };
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  HostTensorPtr t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::shared_ptr<const Graph> g;  // Kind::Graph: a subgraph (If's branches)
};

struct Node {
  std::string name, op, domain;
  std::vector<std::string> inputs, outputs;  // "" marks an absent optional input
  std::map<std::string, Attribute, std::less<>> attrs;
  // Conv only: what the loader fused into it (cnn/fuse.h): a residual Add after it (its other
  // operand is inputs[3]) and an activation after that. The bias flag is not used.
  ConvEpilogue fused;
  // A node with subgraphs (If): the outer values its subgraphs read, as the subgraphs name them.
  // The loader appends them to `inputs` after the op's own (so that liveness, fusion and staging
  // see them); fuse() may rename those inputs, and the planner maps these names onto them.
  std::vector<std::string> captured;

  const Attribute* attr(std::string_view key) const;
  bool has(std::string_view key) const { return attr(key) != nullptr; }
  int64_t attr_int(std::string_view key, int64_t fallback) const;
  float attr_float(std::string_view key, float fallback) const;
  std::string attr_string(std::string_view key, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view key, std::vector<int64_t> fallback = {}) const;
  // The number of inputs present (trailing absent ones not counted).
  size_t input_count() const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
};

// A graph input or output as declared: ONNX element type (1 float, 7 int64, ...; -1 for a
// sequence, map or optional) and dims (-1 where symbolic or unknown).
struct ValueInfo {
  std::string name;
  int32_t elem_type = 0;
  bool has_shape = false;
  std::vector<int64_t> dims;
};

struct Graph {
  std::string source;  // the file or buffer name, for messages
  int64_t opset = 0;   // of the default domain
  std::vector<Node> nodes;
  std::map<std::string, HostTensorPtr, std::less<>> constants;
  std::vector<ValueInfo> inputs;  // without the initializers some exporters also list as inputs
  std::vector<ValueInfo> outputs;

  // "model.onnx: node 'Conv_3' (Conv, opset 13)" for error messages.
  std::string where(const Node& n) const;
  const HostTensor* constant(std::string_view name) const;
};

// ONNX element type names for messages ("float32", "int64", "uint8", ...).
std::string_view onnx_type_name(int32_t elem_type);
// The integer types wgc computes with (int8 / uint8 / int16 / uint16 / int32 / int64, and bool as
// 0 / 1): i64 on the host, i32 on the device.
inline bool is_integer_type(int32_t elem_type) { return (elem_type >= 2 && elem_type <= 7) || elem_type == 9; }

}  // namespace wgc::cnn
