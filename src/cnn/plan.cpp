#include "cnn/plan.h"

#include "cnn/plan_ops.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

namespace wgc::cnn {
namespace {

using detail::In;
using detail::NodePlan;
using detail::Ref;

struct Value {
  Shape shape;
  HostTensorPtr constant;
  int slot = -1;
  bool integer = false;
};

// Activation buffers: a value gets a free slot (the smallest that fits, else the largest free one,
// grown) and gives it back after its last reader; views share their source's slot.
class Slots {
 public:
  explicit Slots(std::vector<uint64_t>& elems) : elems_(elems) {}
  int take(uint64_t n) {
    n = std::max<uint64_t>(n, 1);
    int best = -1;
    for (int s : free_)
      if (elems_[size_t(s)] >= n && (best < 0 || elems_[size_t(s)] < elems_[size_t(best)])) best = s;
    if (best < 0)
      for (int s : free_)
        if (best < 0 || elems_[size_t(s)] > elems_[size_t(best)]) best = s;
    if (best >= 0) {
      free_.erase(std::find(free_.begin(), free_.end(), best));
      elems_[size_t(best)] = std::max(elems_[size_t(best)], n);
    } else {
      best = int(elems_.size());
      elems_.push_back(n);
      refs_.push_back(0);
    }
    refs_[size_t(best)] = 1;
    return best;
  }
  void retain(int s) { ++refs_[size_t(s)]; }
  void release(int s) {
    if (--refs_[size_t(s)] == 0) free_.push_back(s);
  }

 private:
  std::vector<uint64_t>& elems_;
  std::vector<int> refs_;
  std::vector<int> free_;
};

// A host buffer while folding a node on the CPU.
struct HostBuf {
  bool integer = false;
  std::vector<float> f;
  std::vector<int64_t> i;
};

// Runs a node whose inputs are all constants on the host and returns its outputs as constants
// (floats as f32, integers as i64).
std::vector<HostTensorPtr> fold(const NodePlan& np, const std::vector<In>& ins) {
  std::vector<HostBuf> outs(np.outs.size()), temps(np.temps.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    outs[k].integer = np.outs[k].integer;
    size_t n = size_t(element_count(np.outs[k].shape));
    outs[k].integer ? outs[k].i.resize(n) : outs[k].f.resize(n);
  }
  for (size_t k = 0; k < temps.size(); ++k) {
    temps[k].integer = np.temp_integer(k);
    temps[k].integer ? temps[k].i.resize(size_t(np.temps[k])) : temps[k].f.resize(size_t(np.temps[k]));
  }
  auto words = [](const HostBuf& b) -> cpu::Words {
    if (b.integer) return {const_cast<int64_t*>(b.i.data()), cpu::WordType::I64, b.i.size()};
    return {const_cast<float*>(b.f.data()), cpu::WordType::F32, b.f.size()};
  };
  auto const_words = [](const HostTensor& c) -> cpu::ConstWords {
    if (c.integer) return {c.i.data(), cpu::WordType::I64, uint64_t(c.numel())};
    return {c.f.data(), cpu::WordType::F32, uint64_t(c.numel())};
  };
  for (const auto& s : np.steps) {
    HostBuf& dst = s.out.kind == Ref::Output ? outs[size_t(s.out.index)] : temps[size_t(s.out.index)];
    std::vector<cpu::ConstWords> in;
    for (const auto& r : s.in) {
      switch (r.kind) {
        case Ref::Input: in.push_back(const_words(*ins[size_t(r.index)].constant)); break;
        case Ref::Output: in.push_back(words(outs[size_t(r.index)]).in()); break;
        case Ref::Temp: in.push_back(words(temps[size_t(r.index)]).in()); break;
        case Ref::Const: in.push_back(const_words(*r.c)); break;
      }
    }
    run_step_cpu(Step{"", s.op, {}, {}, 0}, in, words(dst));
  }
  std::vector<HostTensorPtr> r;
  for (size_t k = 0; k < outs.size(); ++k) {
    const detail::OutSpec& o = np.outs[k];
    if (o.constant) {
      r.push_back(o.constant);
    } else if (o.alias >= 0) {
      auto t = std::make_shared<HostTensor>(*ins[size_t(o.alias)].constant);
      t->shape = o.shape;
      r.push_back(t);
    } else {
      auto t = std::make_shared<HostTensor>();
      t->shape = o.shape;
      t->integer = outs[k].integer;
      t->f = std::move(outs[k].f);
      t->i = std::move(outs[k].i);
      r.push_back(t);
    }
  }
  return r;
}

std::string strip_prefix(const char* what) {
  std::string s = what;
  return s.rfind("wgc: ", 0) == 0 ? s.substr(5) : s;
}

}  // namespace

double Plan::flops() const {
  double f = 0;
  for (const auto& s : steps) f += s.flops;
  return f;
}

uint64_t Plan::slot_bytes() const {
  uint64_t n = 0;
  for (uint64_t e : slot_elems) n += e * 4;
  return n;
}

Plan make_plan(const Graph& g, const std::vector<InputSpec>& inputs) {
  if (inputs.size() != g.inputs.size())
    throw Error("wgc: " + g.source + ": the model takes " + std::to_string(g.inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  Plan plan;
  plan.inputs = inputs;
  Slots slots(plan.slot_elems);
  std::map<std::string, Value, std::less<>> values;
  for (const auto& [name, c] : g.constants) values[name] = {c->shape, c, -1, c->integer};

  // The nodes as planned: g's, until an If is replaced by its branch (then a copy).
  std::shared_ptr<std::vector<Node>> spliced;
  const std::vector<Node>* nodes = &g.nodes;
  auto planned_nodes = [&]() {
    return spliced ? std::shared_ptr<const std::vector<Node>>(spliced)
                   : std::make_shared<const std::vector<Node>>(g.nodes);
  };

  // The last node reading each value (graph outputs: never given back).
  std::map<std::string, size_t, std::less<>> last_use;
  auto find_last_uses = [&]() {
    last_use.clear();
    for (size_t k = 0; k < nodes->size(); ++k)
      for (const auto& in : (*nodes)[k].inputs)
        if (!in.empty()) last_use[in] = k;
    for (const auto& o : g.outputs) last_use[o.name] = SIZE_MAX;
  };
  find_last_uses();

  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const ValueInfo& vi = g.inputs[k];
    const InputSpec& spec = inputs[k];
    std::string what = g.source + ": input '" + vi.name + "'";
    if (spec.shape.size() > 8) throw Error("wgc: " + what + ": rank " + std::to_string(spec.shape.size()) + " > 8");
    for (int64_t d : spec.shape)
      if (d < 0 || d > INT32_MAX) throw Error("wgc: " + what + ": bad dimension " + std::to_string(d));
    if (vi.has_shape) {
      bool ok = vi.dims.size() == spec.shape.size();
      for (size_t d = 0; ok && d < vi.dims.size(); ++d) ok = vi.dims[d] < 0 || vi.dims[d] == spec.shape[d];
      if (!ok)
        throw Error("wgc: " + what + ": shape " + shape_string(spec.shape) + " does not match the model's " +
                    shape_string(vi.dims) + " (-1: any)");
    }
    if (element_count(spec.shape) > kMaxValueElements)
      throw Error("wgc: " + what + ": " + shape_string(spec.shape) + " has more than " +
                  std::to_string(kMaxValueElements) + " elements (the limit of one tensor)");
    bool is_float = vi.elem_type == 1 || vi.elem_type == 0;
    bool is_int = is_integer_type(vi.elem_type);
    plan.input_integer.push_back(is_int);
    if ((is_float || is_int) && !spec.value) {
      int s = slots.take(uint64_t(element_count(spec.shape)));
      values[vi.name] = {spec.shape, nullptr, s, is_int};
      plan.input_slots.push_back(s);
      if (!last_use.count(vi.name)) slots.release(s);
    } else if (is_float || is_int) {
      if (spec.value->integer != is_int || spec.value->shape != spec.shape)
        throw Error("wgc: " + what + " is " + std::string(onnx_type_name(vi.elem_type)) + ": the values given (" +
                    shape_string(spec.value->shape) + ") do not match its type and shape " + shape_string(spec.shape));
      values[vi.name] = {spec.shape, spec.value, -1, is_int};
      plan.input_slots.push_back(-1);
    } else if (vi.elem_type < 0) {
      throw Unsupported("wgc: " + what + " is a sequence, map or optional: wgc runs tensors only");
    } else {
      throw Unsupported("wgc: " + what + " has type " + std::string(onnx_type_name(vi.elem_type)) +
                        ": wgc runs float32, int64, int32 and bool inputs");
    }
  }

  for (size_t k = 0; k < nodes->size(); ++k) {
    const Node& node = (*nodes)[k];
    try {
      if (node.outputs.empty()) throw Error("the node has no output");
      if (!node.domain.empty())
        throw Unsupported("ops of domain '" + node.domain + "' are not supported (only the default ONNX domain)");
      if (node.op == "If") {
        // The branch the condition takes replaces the node (its constants become constants, its
        // outputs are renamed to the If's by Identity nodes); then planning goes on from here.
        auto cond = node.inputs.empty() ? values.end() : values.find(node.inputs[0]);
        if (cond == values.end()) throw Error("If has no condition");
        if (!cond->second.constant)
          throw NeedsValues("wgc: " + g.where(node) + ": If's condition is computed at run time", k, node.inputs[0],
                            planned_nodes());
        const HostTensor& c = *cond->second.constant;
        if (c.numel() != 1) throw Error("If's condition has " + std::to_string(c.numel()) + " elements, not 1");
        bool taken = c.integer ? c.i[0] != 0 : c.f[0] != 0.f;
        const Attribute* br = node.attr(taken ? "then_branch" : "else_branch");
        if (!br || br->kind != Attribute::Kind::Graph || !br->g) throw Error("If has no subgraph for its branch");
        const Graph& b = *br->g;
        if (b.outputs.size() != node.outputs.size())
          throw Error("the branch has " + std::to_string(b.outputs.size()) + " outputs, the If " +
                      std::to_string(node.outputs.size()));
        // Outer values the branch reads, as named now (fuse may have renamed the If's inputs).
        std::map<std::string, std::string, std::less<>> rename;
        size_t first_captured = node.inputs.size() - node.captured.size();
        for (size_t i = 0; i < node.captured.size(); ++i) rename[node.captured[i]] = node.inputs[first_captured + i];
        auto renamed = [&](const std::string& n) {
          auto it = rename.find(n);
          return it == rename.end() ? n : it->second;
        };
        // The branch's initializers as Constant nodes first, so that the spliced list stands alone
        // (a staged run cuts it into graphs of their own).
        std::vector<Node> repl;
        for (const auto& [name, bc] : b.constants) {
          Node cn;
          cn.name = name;
          cn.op = "Constant";
          cn.outputs = {name};
          cn.attrs["value"].kind = Attribute::Kind::Tensor;
          cn.attrs["value"].t = bc;
          repl.push_back(std::move(cn));
        }
        for (Node bn : b.nodes) {
          for (auto& in : bn.inputs) in = renamed(in);
          repl.push_back(std::move(bn));
        }
        for (size_t o = 0; o < b.outputs.size(); ++o) {
          if (node.outputs[o].empty()) continue;
          Node id;
          id.name = (node.name.empty() ? node.outputs[0] : node.name) + "/branch_out" + std::to_string(o);
          id.op = "Identity";
          id.inputs = {renamed(b.outputs[o].name)};
          id.outputs = {node.outputs[o]};
          repl.push_back(std::move(id));
        }
        if (nodes->size() + repl.size() > 4 * g.nodes.size() + 100000)
          throw Error("If branches expand the graph past " + std::to_string(4 * g.nodes.size() + 100000) + " nodes");
        auto next = std::make_shared<std::vector<Node>>(nodes->begin(), nodes->begin() + long(k));
        next->insert(next->end(), repl.begin(), repl.end());
        next->insert(next->end(), nodes->begin() + long(k) + 1, nodes->end());
        spliced = next;
        nodes = spliced.get();
        find_last_uses();
        --k;
        continue;
      }
      detail::Planner planner = detail::find_planner(node.op);
      if (!planner)
        throw Unsupported("op " + node.op + " is not supported (supported: " + detail::supported_ops() + ")");
      std::vector<In> ins;
      bool all_const = true;
      for (const auto& name : node.inputs) {
        In in;
        if (!name.empty()) {
          auto it = values.find(name);
          if (it == values.end()) throw Error("input '" + name + "' is not computed by any earlier node");
          in.present = true;
          in.shape = it->second.shape;
          in.constant = it->second.constant;
          in.integer = it->second.integer;
          all_const &= in.constant != nullptr;
        }
        ins.push_back(std::move(in));
      }
      NodePlan np;
      try {
        np = planner(g, node, ins);
      } catch (const detail::NeedsInput& e) {
        if (e.input >= node.inputs.size()) throw;
        throw NeedsValues("wgc: " + g.where(node) + ": " + strip_prefix(e.what()), k, node.inputs[e.input],
                          planned_nodes());
      }
      if (np.outs.size() > node.outputs.size())
        throw Error("has " + std::to_string(node.outputs.size()) + " outputs, the op gives " +
                    std::to_string(np.outs.size()));
      for (const auto& o : np.outs)
        if (element_count(o.shape) > kMaxValueElements)
          throw Error("an output of " + shape_string(o.shape) + " has more than " + std::to_string(kMaxValueElements) +
                      " elements (the limit of one tensor)");
      if (all_const && (!np.steps.empty() || !ins.empty())) {
        auto consts = fold(np, ins);
        for (size_t o = 0; o < consts.size(); ++o)
          if (!node.outputs[o].empty()) values[node.outputs[o]] = {consts[o]->shape, consts[o], -1, consts[o]->integer};
      } else {
        // Outputs and scratch buffers first, so that none shares a slot with this node's inputs.
        std::vector<Value> outs;
        for (size_t o = 0; o < np.outs.size(); ++o) {
          const auto& spec = np.outs[o];
          Value v{spec.shape, spec.constant, -1, spec.integer};
          if (!spec.constant) {
            if (spec.alias >= 0) {
              const In& src = ins[size_t(spec.alias)];
              if (src.constant) {
                auto t = std::make_shared<HostTensor>(*src.constant);
                t->shape = spec.shape;
                v.constant = t;
              } else {
                v.slot = values[node.inputs[size_t(spec.alias)]].slot;
                slots.retain(v.slot);
              }
            } else {
              v.slot = slots.take(uint64_t(element_count(spec.shape)));
            }
          }
          outs.push_back(v);
        }
        std::vector<int> temps;
        for (uint64_t n : np.temps) temps.push_back(slots.take(n));
        for (const auto& s : np.steps) {
          auto operand = [&](const Ref& r) -> Operand {
            switch (r.kind) {
              case Ref::Input: {
                const Value& v = values[node.inputs[size_t(r.index)]];
                return {v.slot, v.constant, uint64_t(element_count(v.shape)), v.integer};
              }
              case Ref::Output:
                return {outs[size_t(r.index)].slot, nullptr, uint64_t(element_count(outs[size_t(r.index)].shape)),
                        outs[size_t(r.index)].integer};
              case Ref::Temp:
                return {temps[size_t(r.index)], nullptr, np.temps[size_t(r.index)], np.temp_integer(size_t(r.index))};
              case Ref::Const: return {-1, r.c, uint64_t(r.c->numel()), r.c->integer};
            }
            return {};
          };
          Step step{(node.name.empty() ? node.outputs[0] : node.name) + " (" + node.op + ")",
                    s.op,
                    {},
                    operand(s.out),
                    s.flops};
          for (const auto& r : s.in) step.in.push_back(operand(r));
          plan.steps.push_back(std::move(step));
        }
        for (int t : temps) slots.release(t);
        for (size_t o = 0; o < outs.size(); ++o) {
          const std::string& name = node.outputs[o];
          if (name.empty() || !last_use.count(name)) {  // nobody reads it
            if (outs[o].slot >= 0) slots.release(outs[o].slot);
            continue;
          }
          values[name] = outs[o];
        }
      }
      // Inputs read for the last time give their slots back.
      std::set<std::string_view> done;
      for (const auto& name : node.inputs) {
        if (name.empty() || !done.insert(name).second) continue;
        auto lu = last_use.find(name);
        if (lu != last_use.end() && lu->second == k) {
          Value& v = values[name];
          if (v.slot >= 0) slots.release(v.slot);
          v.slot = -2;  // given back
        }
      }
    } catch (const NeedsValues&) {
      throw;
    } catch (const Unsupported& e) {
      throw Unsupported("wgc: " + g.where(node) + ": " + strip_prefix(e.what()));
    } catch (const Error& e) {
      throw Error("wgc: " + g.where(node) + ": " + strip_prefix(e.what()));
    }
  }
  for (const auto& o : g.outputs) {
    auto it = values.find(o.name);
    if (it == values.end()) throw Error("wgc: " + g.source + ": output '" + o.name + "' is not computed");
    plan.outputs.push_back({it->second.shape, it->second.slot, it->second.constant, it->second.integer});
  }
  if (plan.slot_bytes() > kMaxPlanBytes)
    throw Error("wgc: " + g.source + ": these inputs need " + std::to_string(plan.slot_bytes()) +
                " bytes of activations, more than the limit of " + std::to_string(kMaxPlanBytes));
  return plan;
}

}  // namespace wgc::cnn
