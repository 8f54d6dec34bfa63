#include "cnn/graph.h"

#include "util/error.h"

namespace wgc::cnn {

int64_t element_count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r.append(i ? ", " : "").append(std::to_string(s[i]));
  return r.append("]");
}

HostTensor HostTensor::ints(Shape s, std::vector<int64_t> data) {
  HostTensor t;
  t.shape = std::move(s);
  t.integer = true;
  t.i = std::move(data);
  return t;
}

const Attribute* Node::attr(std::string_view key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Node::attr_int(std::string_view key, int64_t fallback) const {
  const Attribute* a = attr(key);
  if (!a) return fallback;
  if (a->kind != Attribute::Kind::Int) throw Error("attribute '" + std::string(key) + "' is not an int");
  return a->i;
}

float Node::attr_float(std::string_view key, float fallback) const {
  const Attribute* a = attr(key);
  if (!a) return fallback;
  if (a->kind == Attribute::Kind::Int) return float(a->i);
  if (a->kind != Attribute::Kind::Float) throw Error("attribute '" + std::string(key) + "' is not a float");
  return a->f;
}

std::string Node::attr_string(std::string_view key, std::string fallback) const {
  const Attribute* a = attr(key);
  if (!a) return fallback;
  if (a->kind != Attribute::Kind::String) throw Error("attribute '" + std::string(key) + "' is not a string");
  return a->s;
}

std::vector<int64_t> Node::attr_ints(std::string_view key, std::vector<int64_t> fallback) const {
  const Attribute* a = attr(key);
  if (!a) return fallback;
  if (a->kind == Attribute::Kind::Int) return {a->i};
  if (a->kind != Attribute::Kind::Ints) throw Error("attribute '" + std::string(key) + "' is not a list of ints");
  return a->ints;
}

size_t Node::input_count() const {
  size_t n = inputs.size();
  while (n > 0 && inputs[n - 1].empty()) --n;
  return n;
}

std::string Graph::where(const Node& n) const {
  std::string name = !n.name.empty() ? n.name : !n.outputs.empty() ? "-> " + n.outputs[0] : "?";
  std::string s = source;
  s.append(": node '").append(name).append("' (").append(n.op).append(", opset ");
  return s.append(std::to_string(opset)).append(")");
}

const HostTensor* Graph::constant(std::string_view name) const {
  auto it = constants.find(name);
  return it == constants.end() ? nullptr : it->second.get();
}

std::string_view onnx_type_name(int32_t t) {
  switch (t) {
    case 1: return "float32";
    case 2: return "uint8";
    case 3: return "int8";
    case 4: return "uint16";
    case 5: return "int16";
    case 6: return "int32";
    case 7: return "int64";
    case 8: return "string";
    case 9: return "bool";
    case 10: return "float16";
    case 11: return "float64";
    case 12: return "uint32";
    case 13: return "uint64";
    case 14: return "complex64";
    case 15: return "complex128";
    case 16: return "bfloat16";
    default: return "unknown type";
  }
}

}  // namespace wgc::cnn
