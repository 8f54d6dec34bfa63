#include "cnn/onnx.h"

#include "cpu/llm/dequant.h"
#include "util/error.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

namespace wgc::cnn {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> read_file(const fs::path& path, uint64_t limit) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error("wgc: cannot read '" + path.string() + "': " + ec.message());
  if (size > limit)
    throw Error("wgc: '" + path.string() + "' is " + std::to_string(size) + " bytes, more than the limit of " +
                std::to_string(limit));
  std::vector<std::byte> bytes(size);
  std::ifstream f(path, std::ios::binary);
  if (!f || !f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size)))
    throw Error("wgc: cannot read '" + path.string() + "'");
  return bytes;
}

template <class Message>
void parse_message(Message& m, std::span<const std::byte> bytes, const std::string& source, const char* what) {
  if (bytes.size() > kMaxModelBytes)
    throw Error("wgc: " + source + ": " + std::to_string(bytes.size()) + " bytes exceed the limit of " +
                std::to_string(kMaxModelBytes));
  google::protobuf::io::ArrayInputStream raw(bytes.data(), int(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(int(bytes.size()));
  in.SetRecursionLimit(kMaxProtobufNesting);
  if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw Error("wgc: " + source + " is not a valid " + what +
                " (protobuf parse failed: truncated, corrupt, or nested "
                "deeper than " +
                std::to_string(kMaxProtobufNesting) + ")");
}

// Checks dims and returns the element count.
int64_t checked_numel(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& what) {
  if (size_t(dims.size()) > kMaxTensorRank)
    throw Error("wgc: " + what + " has " + std::to_string(dims.size()) + " dimensions (at most " +
                std::to_string(kMaxTensorRank) + ")");
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error("wgc: " + what + " has a negative dimension " + std::to_string(d));
    if (d > 0 && n > kMaxTensorElements / d)
      throw Error("wgc: " + what + " has more than " + std::to_string(kMaxTensorElements) + " elements");
    n *= d;
  }
  if (n > kMaxTensorElements)
    throw Error("wgc: " + what + " has more than " + std::to_string(kMaxTensorElements) + " elements");
  return n;
}

template <class T>
std::vector<T> raw_values(const std::string& raw, int64_t n, const std::string& what) {
  if (raw.size() != uint64_t(n) * sizeof(T))
    throw Error("wgc: " + what + ": raw_data holds " + std::to_string(raw.size()) + " bytes, the shape needs " +
                std::to_string(uint64_t(n) * sizeof(T)));
  std::vector<T> v(static_cast<size_t>(n));
  if (n) std::memcpy(v.data(), raw.data(), raw.size());
  return v;
}

template <class Field>
void check_count(const Field& f, int64_t n, const std::string& what, const char* field) {
  if (int64_t(f.size()) != n)
    throw Error("wgc: " + what + ": " + field + " holds " + std::to_string(f.size()) + " values, the shape needs " +
                std::to_string(n));
}

HostTensor tensor_value(const onnx::TensorProto& t, const std::string& what) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    throw Unsupported("wgc: " + what + " keeps its data in an external file, which is not supported");
  if (t.has_segment()) throw Unsupported("wgc: " + what + " is a segment of a tensor, which is not supported");
  HostTensor c;
  int64_t n = checked_numel(t.dims(), what);
  c.shape.assign(t.dims().begin(), t.dims().end());
  bool raw = t.has_raw_data();
  auto ints_from = [&](auto values) {
    c.integer = true;
    c.i.assign(values.begin(), values.end());
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (raw) {
        c.f = raw_values<float>(t.raw_data(), n, what);
      } else {
        check_count(t.float_data(), n, what, "float_data");
        c.f.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      bool bf = t.data_type() == onnx::TensorProto::BFLOAT16;
      std::vector<uint16_t> h;
      if (raw) {
        h = raw_values<uint16_t>(t.raw_data(), n, what);
      } else {
        check_count(t.int32_data(), n, what, "int32_data");
        for (int32_t v : t.int32_data()) h.push_back(uint16_t(v));
      }
      c.f.resize(h.size());
      for (size_t k = 0; k < h.size(); ++k) c.f[k] = bf ? llm::bf16_to_f32(h[k]) : llm::f16_to_f32(h[k]);
      break;
    }
    case onnx::TensorProto::DOUBLE:
      if (raw) {
        auto d = raw_values<double>(t.raw_data(), n, what);
        c.f.assign(d.begin(), d.end());
      } else {
        check_count(t.double_data(), n, what, "double_data");
        for (double d : t.double_data()) c.f.push_back(float(d));
      }
      break;
    case onnx::TensorProto::INT64:
      if (raw) {
        ints_from(raw_values<int64_t>(t.raw_data(), n, what));
      } else {
        check_count(t.int64_data(), n, what, "int64_data");
        ints_from(t.int64_data());
      }
      break;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      if (raw) {
        switch (t.data_type()) {
          case onnx::TensorProto::INT32: ints_from(raw_values<int32_t>(t.raw_data(), n, what)); break;
          case onnx::TensorProto::INT16: ints_from(raw_values<int16_t>(t.raw_data(), n, what)); break;
          case onnx::TensorProto::INT8: ints_from(raw_values<int8_t>(t.raw_data(), n, what)); break;
          case onnx::TensorProto::UINT16: ints_from(raw_values<uint16_t>(t.raw_data(), n, what)); break;
          default: ints_from(raw_values<uint8_t>(t.raw_data(), n, what)); break;
        }
      } else {
        check_count(t.int32_data(), n, what, "int32_data");
        ints_from(t.int32_data());
      }
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64: {
      std::vector<uint64_t> u;
      if (raw && t.data_type() == onnx::TensorProto::UINT32) {
        auto v = raw_values<uint32_t>(t.raw_data(), n, what);
        u.assign(v.begin(), v.end());
      } else if (raw) {
        u = raw_values<uint64_t>(t.raw_data(), n, what);
      } else {
        check_count(t.uint64_data(), n, what, "uint64_data");
        u.assign(t.uint64_data().begin(), t.uint64_data().end());
      }
      for (uint64_t v : u)
        if (v > uint64_t(INT64_MAX)) throw Error("wgc: " + what + " holds a uint64 value past int64's range");
      ints_from(u);
      break;
    }
    default:
      throw Unsupported("wgc: " + what + " has element type " + std::string(onnx_type_name(t.data_type())) +
                        ", which is not supported (float32/16/64, bfloat16 and integer types are)");
  }
  return c;
}

ValueInfo value_info(const onnx::ValueInfoProto& v);

struct GraphLimits {
  size_t nodes = 0, constants = 0;  // so far, over the graph and its subgraphs
};
using Names = std::set<std::string, std::less<>>;
void parse_body(const onnx::GraphProto& gp, Graph& g, Names& defined, GraphLimits& lim, int depth,
                std::set<std::string, std::less<>>* outer_reads);

Attribute attribute_value(const onnx::AttributeProto& a, const std::string& what, const Graph& parent,
                          const Names& defined, GraphLimits& lim, int depth, Names& reads) {
  Attribute r;
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT: r.kind = Attribute::Kind::Float, r.f = a.f(); break;
    case onnx::AttributeProto::INT: r.kind = Attribute::Kind::Int, r.i = a.i(); break;
    case onnx::AttributeProto::STRING: r.kind = Attribute::Kind::String, r.s = a.s(); break;
    case onnx::AttributeProto::FLOATS:
      r.kind = Attribute::Kind::Floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      r.kind = Attribute::Kind::Ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::STRINGS: r.kind = Attribute::Kind::Strings; break;
    case onnx::AttributeProto::TENSOR:
      r.kind = Attribute::Kind::Tensor;
      r.t = std::make_shared<HostTensor>(tensor_value(a.t(), what + " attribute '" + a.name() + "'"));
      break;
    case onnx::AttributeProto::GRAPH: {
      if (depth >= kMaxSubgraphDepth)
        throw Error("wgc: " + what + ": subgraphs nested deeper than " + std::to_string(kMaxSubgraphDepth));
      auto sub = std::make_shared<Graph>();
      sub->source = parent.source + " (subgraph '" + a.name() + "')";
      sub->opset = parent.opset;
      Names inner = defined;  // the outer scope's values are visible inside
      for (const auto& v : a.g().input()) sub->inputs.push_back(value_info(v)), inner.insert(v.name());
      parse_body(a.g(), *sub, inner, lim, depth + 1, &reads);
      r.kind = Attribute::Kind::Graph;
      r.g = std::move(sub);
      break;
    }
    case onnx::AttributeProto::GRAPHS:
      throw Unsupported("wgc: " + what + ": attribute '" + a.name() + "' is a list of subgraphs, not supported");
    default: r.kind = Attribute::Kind::Other; break;
  }
  if (a.has_ref_attr_name())
    throw Unsupported("wgc: " + what + ": attribute '" + a.name() + "' refers to a function attribute, not supported");
  return r;
}

ValueInfo value_info(const onnx::ValueInfoProto& v) {
  ValueInfo r;
  r.name = v.name();
  r.elem_type = v.type().has_tensor_type() || !v.has_type() ? 0 : -1;
  if (v.type().has_tensor_type()) {
    const auto& tt = v.type().tensor_type();
    r.elem_type = tt.elem_type();
    if (tt.has_shape()) {
      r.has_shape = true;
      if (size_t(tt.shape().dim_size()) > kMaxTensorRank)
        throw Error("wgc: graph input/output '" + r.name + "' declares " + std::to_string(tt.shape().dim_size()) +
                    " dimensions (at most " + std::to_string(kMaxTensorRank) + ")");
      for (const auto& d : tt.shape().dim()) r.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
  }
  return r;
}

// The initializers, inputs (top level only), outputs and nodes of gp into g. `defined` holds the
// names visible so far (a subgraph's starts with its outer scope's); a subgraph's reads of outer
// values are added to *outer_reads.
void parse_body(const onnx::GraphProto& gp, Graph& g, Names& defined, GraphLimits& lim, int depth, Names* outer_reads) {
  const std::string& source = g.source;
  lim.nodes += size_t(gp.node_size());
  lim.constants += size_t(gp.initializer_size()) + size_t(gp.sparse_initializer_size());
  if (lim.nodes > kMaxNodes)
    throw Error("wgc: " + source + ": " + std::to_string(lim.nodes) + " nodes (at most " + std::to_string(kMaxNodes) +
                ")");
  if (lim.constants > kMaxConstants)
    throw Error("wgc: " + source + ": " + std::to_string(lim.constants) + " initializers (at most " +
                std::to_string(kMaxConstants) + ")");
  if (gp.sparse_initializer_size() > 0) throw Unsupported("wgc: " + source + ": sparse initializers are not supported");
  for (const auto& t : gp.initializer()) {
    if (t.name().empty()) throw Error("wgc: " + source + ": an initializer has no name");
    g.constants[t.name()] = std::make_shared<HostTensor>(tensor_value(t, source + ": initializer '" + t.name() + "'"));
  }
  if (depth == 0)
    for (const auto& v : gp.input())
      if (!g.constants.count(v.name())) g.inputs.push_back(value_info(v));
  for (const auto& v : gp.output()) g.outputs.push_back(value_info(v));
  if (g.outputs.empty()) throw Error("wgc: " + source + ": the graph has no outputs");

  Names own;  // defined in this graph (not the outer scope)
  for (const auto& [name, c] : g.constants) defined.insert(name), own.insert(name);
  for (const auto& v : g.inputs) defined.insert(v.name), own.insert(v.name);
  auto read = [&](const std::string& name) {
    if (outer_reads && !own.count(name)) outer_reads->insert(name);
  };
  g.nodes.reserve(size_t(gp.node_size()));
  for (const auto& np : gp.node()) {
    Node n;
    n.name = np.name();
    n.op = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    if (size_t(np.input_size()) > kMaxNodeIo || size_t(np.output_size()) > kMaxNodeIo)
      throw Error("wgc: " + g.where(n) + ": " + std::to_string(np.input_size()) + " inputs and " +
                  std::to_string(np.output_size()) + " outputs (at most " + std::to_string(kMaxNodeIo) + " each)");
    if (size_t(np.attribute_size()) > kMaxAttributes)
      throw Error("wgc: " + g.where(n) + ": " + std::to_string(np.attribute_size()) + " attributes (at most " +
                  std::to_string(kMaxAttributes) + ")");
    if (std::all_of(np.output().begin(), np.output().end(), [](const auto& o) { return o.empty(); }))
      throw Error("wgc: " + g.where(n) + ": the node has no output");
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      if (!defined.count(in))
        throw Error("wgc: " + g.where(n) + ": input '" + in +
                    "' is neither a graph input, an initializer nor an earlier node's output (missing initializer, "
                    "or nodes out of order)");
      read(in);
    }
    Names reads;  // outer values the node's subgraphs read
    for (const auto& a : np.attribute())
      n.attrs[a.name()] = attribute_value(a, g.where(n), g, defined, lim, depth, reads);
    for (const auto& name : reads) {
      n.captured.push_back(name);
      n.inputs.push_back(name);
      read(name);
    }
    // ONNX graphs are single-assignment: a second writer of a value would silently win.
    for (const auto& out : n.outputs)
      if (!out.empty()) {
        if (!defined.insert(out).second)
          throw Error("wgc: " + g.where(n) + ": output '" + out +
                      "' is already a graph input, an initializer or another node's output (a value has one producer)");
        own.insert(out);
      }
    g.nodes.push_back(std::move(n));
  }
  for (const auto& v : g.outputs) {
    if (!defined.count(v.name))
      throw Error("wgc: " + source + ": graph output '" + v.name + "' is produced by no node");
    read(v.name);
  }
}

}  // namespace

Graph parse_onnx(std::span<const std::byte> bytes, const std::string& source) {
  onnx::ModelProto m;
  parse_message(m, bytes, source, "ONNX model");
  Graph g;
  g.source = source;
  bool have_default = false;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      g.opset = o.version();
      have_default = true;
    }
  if (!have_default) {
    if (m.opset_import_size() == 0 && m.ir_version() > 0 && m.ir_version() < 3)
      g.opset = 1;  // very old files carry no opset_import
    else
      throw Unsupported("wgc: " + source +
                        ": no opset for the default ONNX domain (ops of other domains are not supported)");
  }
  if (g.opset < kMinOpset || g.opset > kMaxOpset)
    throw Unsupported("wgc: " + source + ": opset " + std::to_string(g.opset) + " is not supported (" +
                      std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset) + ")");
  const onnx::GraphProto& gp = m.graph();
  GraphLimits lim;
  Names defined;
  parse_body(gp, g, defined, lim, 0, nullptr);
  for (const auto& v : g.outputs)
    if (!defined.count(v.name))
      throw Error("wgc: " + source + ": graph output '" + v.name + "' is produced by no node");
  return g;
}

Graph load_onnx(const std::filesystem::path& path) {
  return parse_onnx(read_file(path, kMaxModelBytes), path.string());
}

NamedTensor parse_tensor_pb(std::span<const std::byte> bytes, const std::string& source) {
  onnx::TensorProto t;
  parse_message(t, bytes, source, "ONNX TensorProto");
  NamedTensor r;
  r.name = t.name();
  r.elem_type = t.data_type();
  r.value = tensor_value(t, source);
  return r;
}

NamedTensor load_tensor_pb(const std::filesystem::path& path) {
  return parse_tensor_pb(read_file(path, kMaxModelBytes), path.string());
}

}  // namespace wgc::cnn
