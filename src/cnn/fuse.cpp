#include "cnn/fuse.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace wgc::cnn {
namespace {

bool is_constant(const Graph& g, const std::string& name) { return !name.empty() && g.constant(name) != nullptr; }

// A Constant node's value (value, value_float(s), value_int(s)); nullptr for forms not supported.
HostTensorPtr constant_value(const Node& n) {
  if (const Attribute* a = n.attr("value"); a && a->kind == Attribute::Kind::Tensor) return a->t;
  if (const Attribute* a = n.attr("value_float"))
    return std::make_shared<HostTensor>(Shape{}, std::vector<float>{a->f});
  if (const Attribute* a = n.attr("value_floats"))
    return std::make_shared<HostTensor>(Shape{int64_t(a->floats.size())}, a->floats);
  if (const Attribute* a = n.attr("value_int")) return std::make_shared<HostTensor>(HostTensor::ints({}, {a->i}));
  if (const Attribute* a = n.attr("value_ints"))
    return std::make_shared<HostTensor>(HostTensor::ints({int64_t(a->ints.size())}, a->ints));
  return nullptr;
}

// The activation a Relu or Clip node applies, if it can go into a convolution's epilogue.
bool fusable_activation(const Graph& g, const Node& n, ConvEpilogue& ep) {
  if (n.op == "Relu" && n.inputs.size() == 1) {
    ep.act = Activation::Relu;
    return true;
  }
  if (n.op != "Clip") return false;
  float lo = -INFINITY, hi = INFINITY;
  if (g.opset < 11) {
    lo = n.attr_float("min", -INFINITY);
    hi = n.attr_float("max", INFINITY);
  } else {
    for (size_t k : {size_t(1), size_t(2)}) {
      if (!n.has_input(k)) continue;
      const HostTensor* c = g.constant(n.inputs[k]);
      if (!c || c->integer || c->f.size() != 1) return false;
      (k == 1 ? lo : hi) = c->f[0];
    }
  }
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) return false;
  ep.act = Activation::Clip;
  ep.clip_min = lo;
  ep.clip_max = hi;
  return true;
}

}  // namespace

FuseStats fuse(Graph& g, FuseOptions options) {
  FuseStats st;
  std::set<std::string, std::less<>> graph_outputs;
  for (const auto& o : g.outputs) graph_outputs.insert(o.name);

  // Constants, and Identity / Dropout as renames.
  std::map<std::string, std::string, std::less<>> alias;
  auto resolve = [&](const std::string& s) {
    auto it = alias.find(s);
    return it == alias.end() ? s : it->second;
  };
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (Node& n : g.nodes) {
    for (auto& in : n.inputs) in = resolve(in);
    if (n.op == "Constant" && n.domain.empty() && n.outputs.size() == 1) {
      if (HostTensorPtr v = constant_value(n)) {
        g.constants[n.outputs[0]] = v;
        ++st.constants;
        continue;
      }
    }
    bool passthrough = n.domain.empty() && (n.op == "Identity" || n.op == "Dropout") && n.input_count() >= 1 &&
                       !n.outputs.empty() && !graph_outputs.count(n.outputs[0]) &&
                       (n.outputs.size() < 2 || n.outputs[1].empty()) &&
                       (n.op == "Identity" || !n.has_input(2));  // Dropout in training mode is not a no-op
    if (passthrough) {
      alias[n.outputs[0]] = n.inputs[0];
      ++st.dropped;
      continue;
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);

  // Who reads each value (node indices; graph outputs count as a reader that cannot fuse).
  std::map<std::string, std::vector<size_t>, std::less<>> readers;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (const auto& in : g.nodes[k].inputs)
      if (!in.empty()) readers[in].push_back(k);
  std::vector<bool> removed(g.nodes.size(), false);
  // The one node that reads `name`, or SIZE_MAX if it has none, several, or is a graph output.
  auto sole_reader = [&](const std::string& name) -> size_t {
    if (graph_outputs.count(name)) return SIZE_MAX;
    size_t found = SIZE_MAX;
    int count = 0;
    for (size_t k : readers[name]) {
      if (removed[k]) continue;
      for (const auto& in : g.nodes[k].inputs) count += in == name;
      found = k;
    }
    return count == 1 ? found : SIZE_MAX;
  };

  // The convolution at `from`, with more fused in, takes the place of its reader `to` (and its
  // output); returns where it sits now.
  auto move_into = [&](size_t from, size_t to, Node moved) {
    moved.outputs[0] = g.nodes[to].outputs[0];
    for (const auto& in : moved.inputs)
      if (!in.empty()) readers[in].push_back(to);
    g.nodes[to] = std::move(moved);
    removed[from] = true;
    return to;
  };
  // GELU as PyTorch's exporter writes it before opset 20: Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x
  // -> Mul 0.5, five dispatches on the way; one node (an element-wise step) instead.
  auto scalar_is = [&](const std::string& name, double v) {
    const HostTensor* c = name.empty() ? nullptr : g.constant(name);
    return c && !c->integer && c->f.size() == 1 && std::fabs(double(c->f[0]) - v) <= 1e-6 * std::fabs(v);
  };
  auto other = [](const Node& n, const std::string& name) { return n.inputs[0] == name ? n.inputs[1] : n.inputs[0]; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& div = g.nodes[i];
    if (removed[i] || div.op != "Div" || !div.domain.empty() || div.inputs.size() != 2 || div.outputs.size() != 1 ||
        !scalar_is(div.inputs[1], std::sqrt(2.0)))
      continue;
    const std::string x = div.inputs[0];
    size_t e = sole_reader(div.outputs[0]);
    if (e == SIZE_MAX || g.nodes[e].op != "Erf" || !g.nodes[e].domain.empty() || g.nodes[e].outputs.size() != 1)
      continue;
    size_t a = sole_reader(g.nodes[e].outputs[0]);
    if (a == SIZE_MAX || g.nodes[a].op != "Add" || !g.nodes[a].domain.empty() || g.nodes[a].inputs.size() != 2 ||
        !scalar_is(other(g.nodes[a], g.nodes[e].outputs[0]), 1.0))
      continue;
    size_t m1 = sole_reader(g.nodes[a].outputs[0]);
    if (m1 == SIZE_MAX || g.nodes[m1].op != "Mul" || !g.nodes[m1].domain.empty() || g.nodes[m1].inputs.size() != 2 ||
        other(g.nodes[m1], g.nodes[a].outputs[0]) != x)
      continue;
    size_t m2 = sole_reader(g.nodes[m1].outputs[0]);
    if (m2 == SIZE_MAX || g.nodes[m2].op != "Mul" || !g.nodes[m2].domain.empty() || g.nodes[m2].inputs.size() != 2 ||
        !scalar_is(other(g.nodes[m2], g.nodes[m1].outputs[0]), 0.5))
      continue;
    Node gelu;
    gelu.name = g.nodes[m2].name.empty() ? g.nodes[m2].outputs[0] : g.nodes[m2].name;
    gelu.op = "Gelu";
    gelu.inputs = {x};
    gelu.outputs = g.nodes[m2].outputs;
    g.nodes[m2] = std::move(gelu);
    removed[i] = removed[e] = removed[a] = removed[m1] = true;
    ++st.gelus;
  }

  // Attention: MatMul(Q, Kt) -> [Mul / Div by a scalar constant] -> [Add mask] -> Softmax over the
  // last axis (opset 13's; before it Softmax flattens) -> MatMul(P, V), each value read once.
  auto plain = [&](size_t k, const char* op, size_t inputs) {
    return k != SIZE_MAX && !removed[k] && g.nodes[k].op == op && g.nodes[k].domain.empty() &&
           g.nodes[k].inputs.size() == inputs && g.nodes[k].outputs.size() == 1;
  };
  auto scalar_value = [&](const std::string& name, float& v) {
    const HostTensor* c = name.empty() ? nullptr : g.constant(name);
    if (!c || c->integer || c->f.size() != 1 || !std::isfinite(c->f[0])) return false;
    v = c->f[0];
    return true;
  };
  for (size_t i = 0; options.attention && i < g.nodes.size(); ++i) {
    if (!plain(i, "MatMul", 2)) continue;
    std::string s = g.nodes[i].outputs[0];
    float scale = 1, c = 0;
    std::vector<size_t> chain = {i};
    size_t r = sole_reader(s);
    if (plain(r, "Mul", 2) && (scalar_value(other(g.nodes[r], s), c))) {
      scale = c;
    } else if (plain(r, "Div", 2) && g.nodes[r].inputs[0] == s && scalar_value(g.nodes[r].inputs[1], c) && c != 0) {
      scale = 1 / c;
    } else {
      r = SIZE_MAX;
    }
    if (r != SIZE_MAX) {
      chain.push_back(r);
      s = g.nodes[r].outputs[0];
    }
    std::string mask;
    size_t a = sole_reader(s);
    if (plain(a, "Add", 2) && g.nodes[a].inputs[0] != g.nodes[a].inputs[1]) {
      mask = other(g.nodes[a], s);
      chain.push_back(a);
      s = g.nodes[a].outputs[0];
    }
    size_t sm = sole_reader(s);
    if (!plain(sm, "Softmax", 1) || g.opset < 13 || g.nodes[sm].attr_int("axis", -1) != -1) continue;
    size_t m2 = sole_reader(g.nodes[sm].outputs[0]);
    if (!plain(m2, "MatMul", 2) || g.nodes[m2].inputs[0] != g.nodes[sm].outputs[0]) continue;
    chain.push_back(sm);
    Node at;
    at.name = g.nodes[m2].name.empty() ? g.nodes[m2].outputs[0] : g.nodes[m2].name;
    at.op = "FusedAttention";
    at.inputs = {g.nodes[i].inputs[0], g.nodes[i].inputs[1], g.nodes[m2].inputs[1], mask};
    at.outputs = g.nodes[m2].outputs;
    at.attrs["scale"].kind = Attribute::Kind::Float;
    at.attrs["scale"].f = scale;
    for (const auto& in : at.inputs)
      if (!in.empty()) readers[in].push_back(m2);
    g.nodes[m2] = std::move(at);
    for (size_t k : chain) removed[k] = true;
    ++st.attentions;
  }

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (removed[i] || !g.nodes[i].domain.empty()) continue;
    // ConvTranspose takes an activation after it (its bias is fused by its planner already).
    if (g.nodes[i].op == "ConvTranspose") {
      Node& ct = g.nodes[i];
      ConvEpilogue ep;
      size_t r = ct.outputs.size() == 1 ? sole_reader(ct.outputs[0]) : SIZE_MAX;
      if (r != SIZE_MAX && g.nodes[r].domain.empty() && g.nodes[r].outputs.size() == 1 &&
          g.nodes[r].inputs[0] == ct.outputs[0] && fusable_activation(g, g.nodes[r], ep)) {
        Node moved = ct;
        moved.fused.act = ep.act;
        moved.fused.clip_min = ep.clip_min;
        moved.fused.clip_max = ep.clip_max;
        move_into(i, r, std::move(moved));
        ++st.activations;
      }
      continue;
    }
    if (g.nodes[i].op != "Conv") continue;
    size_t at = i;  // where the (moving) convolution sits now
    while (true) {
      Node& conv = g.nodes[at];
      if (conv.outputs.size() != 1 || conv.input_count() < 2) break;
      size_t r = sole_reader(conv.outputs[0]);
      if (r == SIZE_MAX) break;
      Node& next = g.nodes[r];
      if (!next.domain.empty()) break;
      bool nothing_fused = !conv.fused.residual && conv.fused.act == Activation::None;
      if (next.op == "BatchNormalization" && nothing_fused && next.inputs.size() >= 5 && next.input_count() == 5 &&
          next.inputs[0] == conv.outputs[0] && next.outputs.size() >= 1 &&
          std::all_of(next.outputs.begin() + 1, next.outputs.end(), [](const auto& o) { return o.empty(); }) &&
          next.attr_int("training_mode", 0) == 0 && next.attr_int("spatial", 1) != 0 &&
          is_constant(g, conv.inputs[1]) && (!conv.has_input(2) || is_constant(g, conv.inputs[2])) &&
          std::all_of(next.inputs.begin() + 1, next.inputs.begin() + 5,
                      [&](const auto& s) { return is_constant(g, s); })) {
        const HostTensor& w = *g.constant(conv.inputs[1]);
        if (w.integer || w.shape.empty() || w.shape[0] <= 0) break;
        uint32_t c_out = uint32_t(w.shape[0]);
        auto floats = [&](size_t k) -> const std::vector<float>& { return g.constant(next.inputs[k])->f; };
        auto nw = std::make_shared<HostTensor>(w);
        auto nb = std::make_shared<HostTensor>(Shape{int64_t(c_out)}, std::vector<float>(c_out, 0.f));
        if (conv.has_input(2)) nb->f = g.constant(conv.inputs[2])->f;
        try {
          cpu::fold_batchnorm(nw->f, nb->f, floats(1), floats(2), floats(3), floats(4),
                              next.attr_float("epsilon", 1e-5f), c_out);
        } catch (const Error&) {
          break;  // sizes that disagree: leave both nodes for the planner to report
        }
        std::string base = next.outputs[0];
        g.constants[base + ".folded_weights"] = nw;
        g.constants[base + ".folded_bias"] = nb;
        conv.inputs.resize(std::max<size_t>(conv.inputs.size(), 3));
        conv.inputs[1] = base + ".folded_weights";
        conv.inputs[2] = base + ".folded_bias";
        conv.outputs[0] = next.outputs[0];
        removed[r] = true;
        ++st.batchnorms;
        continue;
      }
      if (next.op == "Add" && nothing_fused && next.inputs.size() == 2 && next.inputs[0] != next.inputs[1] &&
          !next.inputs[0].empty() && !next.inputs[1].empty() && next.outputs.size() == 1) {
        // The Add's place: its other operand is computed by then (the graph is in order).
        Node moved = conv;
        moved.inputs.resize(std::max<size_t>(moved.inputs.size(), 4));
        moved.inputs[3] = next.inputs[0] == conv.outputs[0] ? next.inputs[1] : next.inputs[0];
        moved.fused.residual = true;
        at = move_into(at, r, std::move(moved));
        ++st.residuals;
        continue;
      }
      ConvEpilogue ep;
      if (conv.fused.act == Activation::None && next.outputs.size() == 1 && next.inputs[0] == conv.outputs[0] &&
          fusable_activation(g, next, ep)) {
        Node moved = conv;
        moved.fused.act = ep.act;
        moved.fused.clip_min = ep.clip_min;
        moved.fused.clip_max = ep.clip_max;
        at = move_into(at, r, std::move(moved));
        ++st.activations;
        continue;
      }
      break;
    }
  }
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!removed[k]) out.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(out);
  return st;
}

}  // namespace wgc::cnn
