#include "cnn/model.h"

#include "cnn/onnx.h"
#include "gpu/staging.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/fused_attention.h"
#include "ops/index_ops.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/pool.h"
#include "ops/resize.h"
#include "ops/tensor_ops.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace wgc::cnn {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// What a plan needs on the GPU: a tensor per slot, each convolution prepared, and the whole network
// recorded once (bind groups made and parameters uploaded at the first run; a run replays it).
struct GpuPlan {
  std::vector<Tensor> slots;
  std::vector<PreparedConv> convs;    // per step (empty for other steps)
  Recording net;                      // every step, in order (empty under WGC_PROFILE)
  std::vector<size_t> step_commands;  // per step: the commands it recorded
  std::vector<StagedUpload> inputs;   // two per graph input, used in turn (empty for integer ones)
  size_t turn = 0;                    // which of the two the next run fills
  // The next run encoded ahead (its inputs' copies from the staging buffers of `turn`, the network,
  // the readbacks) while the GPU runs the last one: a run then only fills the staging buffers and
  // submits (Model::start).
  std::unique_ptr<Batch> ahead;
  Model::Recorded ahead_rec;
};

// A graph that needs values it computes (NeedsValues, cnn/plan.h), run in two models: the nodes
// before the cut, whose outputs are the values live across it, and the nodes from the cut, whose
// inputs are the graph inputs they read and the live values (those known on the host at plan
// time become its constants; the needed ones are planned by value). The second model may cut
// again. Each cut is a readback and a new plan for the values read back (docs/cnn.md).
struct Staged {
  std::unique_ptr<Model> first, rest;
  std::vector<size_t> rest_graph_inputs;  // the graph inputs the rest reads, in order
  std::vector<bool> rest_reads;           // per output of first: an input of the rest (else a constant of it)
};

struct CachedPlan {
  Plan plan;
  std::unique_ptr<GpuPlan> gpu;
  std::vector<std::vector<float>> cpu_slots;
  std::unique_ptr<Staged> staged;  // set instead of the plan for a graph run in stages
};

// Plans keyed by values read back from a run (staged graphs): at most this many kept.
constexpr size_t kMaxValuePlans = 16;

// Inputs a plan may take by value when the model needs them as constants: integer ones (shape
// arithmetic) and small float ones (parameters such as Resize's scales given as inputs).
bool plannable_by_value(const HostTensor& x) { return x.integer || x.numel() <= 64; }

// Plans are keyed by the inputs' shapes, and by the values of the inputs taken by value where the
// model computes with them on the host (by_value: the small ones; always: those named).
std::string plan_key(const std::vector<HostTensor>& inputs, bool by_value, const std::vector<bool>& always = {}) {
  std::string k = by_value ? "v" : "s";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor& x = inputs[i];
    k += wgc::to_string(x.shape);
    if ((by_value && plannable_by_value(x)) || (i < always.size() && always[i])) {
      char buf[32];
      if (x.integer)
        for (int64_t v : x.i) k.append(":").append(std::to_string(v));
      else
        for (float v : x.f) std::snprintf(buf, sizeof buf, ":%a", double(v)), k.append(buf);
    }
    k += ";";
  }
  return k;
}

// An integer input's values as the device holds them (i32), or an error naming it.
std::vector<int32_t> device_ints(const HostTensor& x, const std::string& name) {
  std::vector<int32_t> v(x.i.size());
  for (size_t k = 0; k < v.size(); ++k) {
    if (x.i[k] < INT32_MIN || x.i[k] > INT32_MAX)
      throw Error("wgc: input '" + name + "': value " + std::to_string(x.i[k]) + " at offset " + std::to_string(k) +
                  " does not fit the device's 32-bit integers");
    v[k] = int32_t(x.i[k]);
  }
  return v;
}

}  // namespace

struct Model::Impl {
  std::optional<Context> ctx;
  ModelOptions options;
  Graph graph;
  FuseStats stats;
  std::map<std::string, std::unique_ptr<CachedPlan>> plans;
  std::map<const HostTensor*, std::pair<HostTensorPtr, Tensor>> uploaded;  // constants on the device

  std::set<std::string> by_value;                   // shape keys whose plans need the integer inputs' values
  std::set<std::string, std::less<>> value_inputs;  // inputs always planned by value (NeedsValues named them)

  std::vector<bool> value_input_flags() const {
    std::vector<bool> f;
    for (const auto& in : graph.inputs) f.push_back(value_inputs.count(in.name) > 0);
    return f;
  }
  std::string key_of(const std::vector<HostTensor>& inputs) const {
    std::string key = plan_key(inputs, false, value_input_flags());
    if (by_value.count(key)) key = plan_key(inputs, true, value_input_flags());
    return key;
  }

  CachedPlan& cached(const std::vector<HostTensor>& inputs) {
    std::string key = key_of(inputs);
    auto it = plans.find(key);
    if (it != plans.end()) return *it->second;
    if (inputs.size() != graph.inputs.size())
      throw Error("wgc: " + graph.source + ": the model takes " + std::to_string(graph.inputs.size()) +
                  " inputs, got " + std::to_string(inputs.size()));
    std::vector<InputSpec> specs;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const HostTensor& x = inputs[k];
      if (uint64_t(x.numel()) != (x.integer ? x.i.size() : x.f.size()))
        throw Error("wgc: input '" + graph.inputs[k].name +
                    "': " + std::to_string(x.integer ? x.i.size() : x.f.size()) + " values for shape " +
                    wgc::to_string(x.shape));
      int32_t type = graph.inputs[k].elem_type;
      bool int_input = is_integer_type(type);
      if (!int_input && type != 1 && type != 0)
        throw Unsupported("wgc: " + graph.source + ": input '" + graph.inputs[k].name + "' has type " +
                          std::string(onnx_type_name(type)) + ": wgc runs float32, integer and bool inputs");
      if (x.integer != int_input)
        throw Error("wgc: input '" + graph.inputs[k].name + "' is " +
                    std::string(onnx_type_name(graph.inputs[k].elem_type)) + ", the values given are " +
                    (x.integer ? "integers" : "floats"));
      specs.push_back({x.shape, nullptr});
    }
    auto c = std::make_unique<CachedPlan>();
    // Every input as a run-time tensor first (images, ids, masks); a model that computes shapes
    // from its integer inputs, or takes parameters as inputs where wgc needs constants, is
    // planned with their values instead.
    // Inputs whose values a node needs (NeedsValues naming a graph input) are planned by value
    // from then on; a value the graph computes makes the run staged.
    bool any_by_value = false;
    for (const auto& x : inputs) any_by_value |= plannable_by_value(x);
    auto set_values = [&]() {
      for (size_t k = 0; k < inputs.size(); ++k)
        if (value_inputs.count(graph.inputs[k].name)) specs[k].value = std::make_shared<HostTensor>(inputs[k]);
    };
    set_values();
    for (size_t tries = 0;; ++tries) {
      try {
        c->plan = make_plan(graph, specs);
        break;
      } catch (const NeedsValues& e) {
        size_t k = input_index(e.value);
        if (k < inputs.size() && !specs[k].value && tries <= inputs.size()) {
          value_inputs.insert(e.value);
          set_values();
          continue;
        }
        if (k < inputs.size()) throw;
        c->staged = stage(*e.nodes, e.node, e.value, inputs);
        break;
      } catch (const Unsupported&) {
        if (!any_by_value || by_value.count(plan_key(inputs, false, value_input_flags()))) throw;
        for (size_t k = 0; k < inputs.size(); ++k)
          if (plannable_by_value(inputs[k])) specs[k].value = std::make_shared<HostTensor>(inputs[k]);
        by_value.insert(plan_key(inputs, false, value_input_flags()));
      }
    }
    key = key_of(inputs);
    if (!value_inputs.empty() && plans.size() >= kMaxValuePlans) plans.clear();  // runs of staged graphs wait
    return *plans.emplace(key, std::move(c)).first->second;
  }

  size_t input_index(std::string_view name) const {
    for (size_t k = 0; k < graph.inputs.size(); ++k)
      if (graph.inputs[k].name == name) return k;
    return SIZE_MAX;
  }

  // Cuts the graph (its nodes as planned) before node `cut`, which needs the values of `needed`.
  std::unique_ptr<Staged> stage(const std::vector<Node>& nodes, size_t cut, const std::string& needed,
                                const std::vector<HostTensor>& inputs) {
    if (cut == 0 || cut >= nodes.size())
      throw Error("wgc: " + graph.source + ": cannot cut the graph at node " + std::to_string(cut));
    std::set<std::string, std::less<>> later;  // read from the cut on, or graph outputs
    for (size_t k = cut; k < nodes.size(); ++k)
      for (const auto& in : nodes[k].inputs)
        if (!in.empty()) later.insert(in);
    for (const auto& o : graph.outputs) later.insert(o.name);
    auto st = std::make_unique<Staged>();
    Graph g1, g2;
    g1.source = graph.source + " (up to node " + std::to_string(cut) + ")";
    g2.source = graph.source + " (from node " + std::to_string(cut) + ")";
    g1.opset = g2.opset = graph.opset;
    g1.constants = g2.constants = graph.constants;
    g1.inputs = graph.inputs;
    g1.nodes.assign(nodes.begin(), nodes.begin() + long(cut));
    g2.nodes.assign(nodes.begin() + long(cut), nodes.end());
    g2.outputs = graph.outputs;
    for (const auto& n : g1.nodes)
      for (const auto& o : n.outputs)
        if (!o.empty() && later.count(o)) g1.outputs.push_back({o, 0, false, {}});
    for (size_t k = 0; k < graph.inputs.size(); ++k)
      if (later.count(graph.inputs[k].name)) {
        st->rest_graph_inputs.push_back(k);
        g2.inputs.push_back(graph.inputs[k]);
      }
    if (g1.outputs.empty())
      throw Error("wgc: " + graph.source + ": nothing crosses the cut at node " + std::to_string(cut));
    st->first = std::make_unique<Model>(ctx, std::move(g1), options);
    const Plan& p1 = st->first->plan(inputs);
    const Graph& first = st->first->graph();
    for (size_t o = 0; o < first.outputs.size(); ++o) {
      const PlannedValue& v = p1.outputs[o];
      st->rest_reads.push_back(!v.constant);
      if (v.constant)
        g2.constants[first.outputs[o].name] = v.constant;
      else
        g2.inputs.push_back({first.outputs[o].name, v.integer ? 7 : 1, false, {}});
    }
    st->rest = std::make_unique<Model>(ctx, std::move(g2), options);
    st->rest->impl_->value_inputs.insert(needed);
    return st;
  }

  std::vector<HostTensor> run_staged(Staged& st, const std::vector<HostTensor>& inputs) {
    std::vector<HostTensor> mid = st.first->run(inputs);
    std::vector<HostTensor> rin;
    for (size_t k : st.rest_graph_inputs) rin.push_back(inputs[k]);
    for (size_t o = 0; o < mid.size(); ++o)
      if (st.rest_reads[o]) rin.push_back(std::move(mid[o]));
    return st.rest->run(rin);
  }

  [[noreturn]] void staged_error(const char* what) const {
    throw Error("wgc: " + graph.source + ": " + what +
                ": the model runs in stages (shapes that depend on values computed at run time); use run() or start()");
  }

  // The plan of float inputs of these shapes, on the GPU (inputs written in place); `like` gets
  // the inputs that name it (shapes, no values).
  CachedPlan& in_place_plan(const std::vector<Shape>& shapes, std::vector<HostTensor>& like) {
    for (const auto& in : graph.inputs)
      if (is_integer_type(in.elem_type))
        throw Error("wgc: " + graph.source + ": input '" + in.name +
                    "' is an integer tensor; inputs written in place are float ones");
    like.clear();
    for (const auto& sh : shapes) like.emplace_back(sh, std::vector<float>());
    auto it = plans.find(plan_key(like, false));
    CachedPlan* c = nullptr;
    if (it != plans.end()) {
      c = it->second.get();
    } else {  // the first time: a plan made from zeros
      std::vector<HostTensor> zeros;
      for (const auto& sh : shapes) zeros.emplace_back(sh, std::vector<float>(size_t(numel(sh))));
      c = &cached(zeros);
    }
    if (c->staged) staged_error("inputs written in place");
    if (!use_gpu(c->plan)) throw Error("wgc: " + graph.source + ": inputs written in place need the GPU path");
    gpu_plan(*c);
    return *c;
  }

  bool use_gpu(const Plan& p) const {
    if (!ctx || options.device == Device::Cpu) return false;
    if (options.device == Device::Gpu) return true;
    return !ctx->adapter().is_cpu() && p.flops() >= kCpuBelowFlops;
  }

  const Tensor& device_constant(const HostTensorPtr& c) {
    auto it = uploaded.find(c.get());
    if (it != uploaded.end()) return it->second.second;
    Tensor t = make_tensor(*ctx, {std::max<int64_t>(c->numel(), 1)});
    if (c->numel() && c->integer) {  // i32 on the device, saturated (INT64_MAX as "to the end" stays largest)
      std::vector<int32_t> v(c->i.size());
      for (size_t k = 0; k < v.size(); ++k) v[k] = int32_t(std::clamp<int64_t>(c->i[k], INT32_MIN, INT32_MAX));
      upload(*ctx, t, std::as_bytes(std::span(v)));
    } else if (c->numel()) {
      upload(*ctx, t, std::as_bytes(std::span(c->f)));
    }
    return uploaded.emplace(c.get(), std::make_pair(c, t)).first->second.second;
  }

  GpuPlan& gpu_plan(CachedPlan& c) {
    if (c.gpu) return *c.gpu;
    auto g = std::make_unique<GpuPlan>();
    for (uint64_t n : c.plan.slot_elems) g->slots.push_back(make_tensor(*ctx, {int64_t(n)}));
    g->convs.resize(c.plan.steps.size());
    for (size_t k = 0; k < c.plan.steps.size(); ++k)
      if (const auto* cs = std::get_if<ConvStep>(&c.plan.steps[k].op); cs && cs->weights) {
        std::span<const float> bias = cs->bias ? std::span<const float>(cs->bias->f) : std::span<const float>();
        g->convs[k] = prepare_conv2d(*ctx, cs->weights->f, bias, cs->dims);
      }
    Batch b(*ctx);
    for (size_t k = 0; k < c.plan.steps.size(); ++k) {
      size_t before = b.size();
      record_step(b, *g, k, c.plan.steps[k]);
      g->step_commands.push_back(b.size() - before);
    }
    if (!b.timed()) g->net = b.freeze();  // WGC_PROFILE times every batch: then each run records the steps
    g->inputs.resize(2 * c.plan.inputs.size());
    for (size_t k = 0; k < c.plan.inputs.size(); ++k)
      if (c.plan.input_slots[k] >= 0 && numel(c.plan.inputs[k].shape) > 0)
        for (size_t t = 0; t < 2; ++t)
          g->inputs[2 * k + t] = StagedUpload(*ctx, uint64_t(numel(c.plan.inputs[k].shape)) * 4);
    c.gpu = std::move(g);
    return *c.gpu;
  }

  Tensor operand(GpuPlan& g, const Operand& o) {
    Tensor t = o.slot >= 0 ? g.slots[size_t(o.slot)] : device_constant(o.constant);
    return t.view({std::max<int64_t>(int64_t(o.elems), 1)});
  }

  void record_step(Batch& b, GpuPlan& g, size_t k, const Step& s) {
    std::vector<Tensor> in;
    for (const auto& o : s.in) in.push_back(operand(g, o));
    Tensor out = operand(g, s.out);
    std::visit(
        [&](const auto& op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, ConvStep>) {
            Tensor res = op.res_in >= 0 ? in[size_t(op.res_in)] : Tensor();
            if (op.weights) {
              conv2d(b, g.convs[k], in[0], res, out, op.ep);
            } else {
              Tensor bias = op.b_in >= 0 ? in[size_t(op.b_in)] : op.bias ? device_constant(op.bias) : Tensor();
              conv2d(b, in[0], in[size_t(op.w_in)], bias, res, out, op.dims, op.ep);
            }
          } else if constexpr (std::is_same_v<T, PoolStep>) {
            pool2d(b, in[0], out, op.dims, op.kind);
          } else if constexpr (std::is_same_v<T, GlobalPoolStep>) {
            global_average_pool(b, in[0], out, op.n, op.c, op.hw);
          } else if constexpr (std::is_same_v<T, MatmulStep>) {
            matmul(b, in[0], in[1], out, op.dims);
          } else if constexpr (std::is_same_v<T, BatchedMatmulStep>) {
            batched_matmul(b, in[0], in[1], out, op.dims);
          } else if constexpr (std::is_same_v<T, BinaryStep>) {
            binary(b, in[0], in[1], out, op.dims, op.op);
          } else if constexpr (std::is_same_v<T, UnaryStep>) {
            unary(b, in[0].view({int64_t(op.count)}), out.view({int64_t(op.count)}), op.p);
          } else if constexpr (std::is_same_v<T, SoftmaxStep>) {
            softmax(b, in[0], out, op.dims, op.log);
          } else if constexpr (std::is_same_v<T, ReduceStep>) {
            if (s.in[0].integer)
              axis_reduce_ints(b, in[0], out, op.dims, op.op);
            else
              axis_reduce(b, in[0], out, op.dims, op.op);
          } else if constexpr (std::is_same_v<T, CopyStep>) {
            strided_copy(b, in[0], out, op.dims);
          } else if constexpr (std::is_same_v<T, EwStep>) {
            Tensor none;
            elementwise(b, in[0], in.size() > 1 ? in[1] : none, in.size() > 2 ? in[2] : none, out, op.p, op.dims);
          } else if constexpr (std::is_same_v<T, NormStep>) {
            if (op.stats)
              norm_stats(b, in[0], out, op.dims);
            else
              norm(b, in[0], in[1], in[2], out, op.dims);
          } else if constexpr (std::is_same_v<T, ResizeStep>) {
            resize(b, in[0], in[1], out, op.dims);
          } else if constexpr (std::is_same_v<T, PadStep>) {
            pad(b, in[0], out, op.dims);
          } else if constexpr (std::is_same_v<T, GatherStep>) {
            gather(b, in[0], in[1], out, op.dims);
          } else if constexpr (std::is_same_v<T, GatherElementsStep>) {
            gather_elements(b, in[0], in[1], out, op.dims);
          } else if constexpr (std::is_same_v<T, ArgReduceStep>) {
            arg_reduce(b, in[0], out, op.dims);
          } else if constexpr (std::is_same_v<T, TopKStep>) {
            topk(b, in[0], out, op.dims, op.indices);
          } else if constexpr (std::is_same_v<T, CumSumStep>) {
            cumsum(b, in[0], out, op.dims, s.out.integer);
          } else if constexpr (std::is_same_v<T, ScatterElementsStep>) {
            scatter_elements(b, in[0], in[1], in[2], out, op.dims);
          } else if constexpr (std::is_same_v<T, RoiAlignStep>) {
            roi_align(b, in[0], in[1], in[2], out, op.dims);
          } else if constexpr (std::is_same_v<T, AttentionStep>) {
            fused_attention(b, in[0], in[1], in[2], op.dims.mask ? in[3] : Tensor(), out, op.dims);
          }
        },
        s.op);
  }

  Recorded record(Batch& b, CachedPlan& c, const std::vector<HostTensor>& inputs, bool upload_inputs) {
    GpuPlan& g = gpu_plan(c);
    const Plan& p = c.plan;
    if (upload_inputs)
      for (size_t k = 0; k < inputs.size(); ++k) {
        if (p.input_slots[k] < 0 || inputs[k].numel() == 0) continue;
        const Tensor& slot = g.slots[size_t(p.input_slots[k])];
        if (inputs[k].integer) {
          std::vector<int32_t> v = device_ints(inputs[k], graph.inputs[k].name);
          g.inputs[2 * k + g.turn].write(b, std::as_bytes(std::span(v)), slot);
        } else {
          g.inputs[2 * k + g.turn].write(b, std::as_bytes(std::span(inputs[k].f)), slot);
        }
      }
    return record_network(b, c);
  }

  // The staged inputs of a plan: their index and bytes (graph inputs with a slot and values).
  std::vector<std::pair<size_t, uint64_t>> staged_inputs(const CachedPlan& c) const {
    std::vector<std::pair<size_t, uint64_t>> r;
    for (size_t k = 0; k < c.plan.inputs.size(); ++k)
      if (c.plan.input_slots[k] >= 0 && c.gpu->inputs[2 * k].bytes())
        r.emplace_back(k, uint64_t(numel(c.plan.inputs[k].shape)) * 4);
    return r;
  }

  // Encodes the next run of plan c (staging buffers of the current turn) into g.ahead.
  void encode_ahead(CachedPlan& c) {
    GpuPlan& g = *c.gpu;
    g.ahead.reset();
    if (!g.net) return;
    auto b = std::make_unique<Batch>(*ctx);
    for (auto [k, bytes] : staged_inputs(c))
      g.inputs[2 * k + g.turn].record_copy(*b, bytes, g.slots[size_t(c.plan.input_slots[k])]);
    g.ahead_rec = record_network(*b, c);
    b->encode();
    g.ahead = std::move(b);
  }

  // The network (replayed, or recorded step by step under WGC_PROFILE) and the outputs' readbacks.
  Recorded record_network(Batch& b, CachedPlan& c) {
    GpuPlan& g = *c.gpu;
    const Plan& p = c.plan;
    if (g.net)
      b.replay(g.net);
    else
      for (size_t k = 0; k < p.steps.size(); ++k) record_step(b, g, k, p.steps[k]);
    Recorded r;
    for (size_t k = 0; k < p.steps.size(); ++k)
      r.steps.push_back({p.steps[k].label, g.step_commands[k], p.steps[k].flops});
    for (const auto& o : p.outputs) {
      r.shapes.push_back(o.shape);
      r.constants.push_back(o.constant);
      r.integer.push_back(o.integer);
      uint64_t bytes = uint64_t(numel(o.shape)) * 4;
      r.outputs.push_back(o.slot >= 0 && bytes ? b.read(g.slots[size_t(o.slot)], 0, bytes) : Readback());
    }
    return r;
  }

  std::vector<HostTensor> run_cpu(CachedPlan& c, const std::vector<HostTensor>& inputs) {
    const Plan& p = c.plan;
    c.cpu_slots.resize(p.slot_elems.size());
    for (size_t k = 0; k < p.slot_elems.size(); ++k) c.cpu_slots[k].resize(p.slot_elems[k]);
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (p.input_slots[k] < 0) continue;
      auto& slot = c.cpu_slots[size_t(p.input_slots[k])];
      if (inputs[k].integer) {
        std::vector<int32_t> v = device_ints(inputs[k], graph.inputs[k].name);
        if (!v.empty()) std::memcpy(slot.data(), v.data(), v.size() * 4);  // an empty tensor: no pointer
      } else {
        std::copy(inputs[k].f.begin(), inputs[k].f.end(), slot.begin());
      }
    }
    run_plan_cpu(p, c.cpu_slots);
    std::vector<HostTensor> out;
    for (const auto& o : p.outputs) {
      if (o.constant) {
        out.push_back(*o.constant);
        continue;
      }
      const auto& src = c.cpu_slots[size_t(o.slot)];
      size_t n = size_t(numel(o.shape));
      if (o.integer) {
        std::vector<int32_t> v(n);
        if (n) std::memcpy(v.data(), src.data(), n * 4);
        out.push_back(HostTensor::ints(o.shape, std::vector<int64_t>(v.begin(), v.end())));
      } else {
        out.emplace_back(o.shape, std::vector<float>(src.begin(), src.begin() + long(n)));
      }
    }
    return out;
  }
};

Model::Model(const Context& ctx, const std::filesystem::path& onnx, ModelOptions options)
    : Model(std::optional<Context>(ctx), load_onnx(onnx), options) {}

Model::Model(const std::filesystem::path& onnx) : Model(std::nullopt, load_onnx(onnx), {Device::Cpu}) {}

Model::Model(std::optional<Context> ctx, Graph graph, ModelOptions options) : impl_(std::make_unique<Impl>()) {
  if (!ctx && options.device == Device::Gpu) throw Error("wgc: a model on the GPU needs a device context");
  impl_->ctx = std::move(ctx);
  impl_->options = options;
  // WGC_CNN_FUSE_ATTENTION=0: the exporters' attention ops as they are (the A/B against the fused
  // kernel with any command, docs/cnn.md).
  if (const char* env = std::getenv("WGC_CNN_FUSE_ATTENTION")) {
    std::string_view v(env);
    if (v != "0" && v != "1") throw Error("wgc: WGC_CNN_FUSE_ATTENTION must be 0 or 1, not '" + std::string(v) + "'");
    if (v == "0") options.fuse_attention = false;
  }
  impl_->stats = fuse(graph, {options.fuse_attention});
  impl_->graph = std::move(graph);
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const Graph& Model::graph() const { return impl_->graph; }
const FuseStats& Model::fused() const { return impl_->stats; }

bool Model::on_gpu(const std::vector<HostTensor>& inputs) {
  CachedPlan& c = impl_->cached(inputs);
  return c.staged ? c.staged->first->on_gpu(inputs) : impl_->use_gpu(c.plan);
}

const Plan& Model::plan(const std::vector<HostTensor>& inputs) {
  CachedPlan& c = impl_->cached(inputs);
  return c.staged ? c.staged->first->plan(inputs) : c.plan;
}

bool Model::staged(const std::vector<HostTensor>& inputs) { return bool(impl_->cached(inputs).staged); }

HostTensor Model::run(const HostTensor& x) {
  if (impl_->graph.inputs.size() != 1)
    throw Error("wgc: " + impl_->graph.source + " takes " + std::to_string(impl_->graph.inputs.size()) +
                " inputs; pass them all");
  return run(std::vector<HostTensor>{x}).at(0);
}

std::vector<HostTensor> Model::run(const std::vector<HostTensor>& inputs) { return start(inputs).wait(); }

Model::Pending Model::start(const std::vector<HostTensor>& inputs) {
  CachedPlan& c = impl_->cached(inputs);
  Pending p;
  if (c.staged) {
    p.ready = impl_->run_staged(*c.staged, inputs);
    return p;
  }
  if (!impl_->use_gpu(c.plan)) {
    p.ready = impl_->run_cpu(c, inputs);
    return p;
  }
  return start_gpu(inputs, false);
}

std::span<float> Model::input_in_place(const std::vector<Shape>& shapes, size_t k) {
  std::vector<HostTensor> like;
  CachedPlan& c = impl_->in_place_plan(shapes, like);
  for (auto [i, bytes] : impl_->staged_inputs(c))
    if (i == k) {
      std::span<std::byte> m = c.gpu->inputs[2 * k + c.gpu->turn].mapped();
      return {reinterpret_cast<float*>(m.data()), size_t(bytes / 4)};
    }
  throw Error("wgc: " + impl_->graph.source + ": no input " + std::to_string(k) +
              " with values to write (the model takes " + std::to_string(impl_->graph.inputs.size()) + ")");
}

Model::Pending Model::start_in_place(const std::vector<Shape>& shapes) {
  std::vector<HostTensor> like;
  impl_->in_place_plan(shapes, like);
  return start_gpu(like, true);
}

Model::Pending Model::start_gpu(const std::vector<HostTensor>& inputs, bool in_place) {
  CachedPlan& c = impl_->cached(inputs);
  if (c.staged) impl_->staged_error("inputs written in place");
  Pending p;
  auto t0 = std::chrono::steady_clock::now();
  GpuPlan& g = impl_->gpu_plan(c);
  auto staged = impl_->staged_inputs(c);
  for (auto [k, bytes] : staged)
    if (in_place && !g.inputs[2 * k + g.turn].is_mapped())
      throw Error("wgc: " + impl_->graph.source + ": input '" + impl_->graph.inputs[k].name +
                  "' was not written in place for this run (Model::input_in_place)");
  bool ahead = bool(g.ahead);
  for (auto [k, bytes] : staged) ahead = ahead && (in_place || uint64_t(inputs[k].numel()) * 4 == bytes);
  if (ahead || in_place) {  // the staging buffers filled (or written in place), the encoded run submitted
    for (auto [k, bytes] : staged) {
      if (in_place) {
        g.inputs[2 * k + g.turn].unmap();
      } else if (inputs[k].integer) {
        std::vector<int32_t> v = device_ints(inputs[k], impl_->graph.inputs[k].name);
        g.inputs[2 * k + g.turn].fill(std::as_bytes(std::span(v)));
      } else {
        g.inputs[2 * k + g.turn].fill(std::as_bytes(std::span(inputs[k].f)));
      }
    }
    p.times.input_ms = ms_since(t0);
    if (!ahead) impl_->encode_ahead(c);  // in place without a run encoded ahead (WGC_PROFILE, the first run)
    if (g.ahead) {
      p.rec = std::move(g.ahead_rec);
      g.ahead->submit();
    } else {  // WGC_PROFILE: nothing is encoded ahead
      Batch b(*impl_->ctx);
      for (auto [k, bytes] : staged)
        g.inputs[2 * k + g.turn].record_copy(b, bytes, g.slots[size_t(c.plan.input_slots[k])]);
      p.rec = impl_->record_network(b, c);
      b.submit();
    }
    g.ahead.reset();
  } else {
    g.ahead.reset();
    Batch b(*impl_->ctx);
    p.rec = impl_->record(b, c, inputs, true);
    p.times.input_ms = ms_since(t0);  // with the recording: the copy is not timed apart here
    b.submit();  // the batch may go: the queue keeps what its work needs, the readbacks wait for it
  }
  p.times.submit_ms = ms_since(t0) - p.times.input_ms;
  for (auto [k, bytes] : staged) g.inputs[2 * k + g.turn].remap();  // mapped again once this run's copy is done
  g.turn ^= 1;
  auto t1 = std::chrono::steady_clock::now();
  impl_->encode_ahead(c);  // the next run, while the GPU computes this one
  p.times.encode_ahead_ms = ms_since(t1);
  return p;
}

std::vector<HostTensor> Model::Pending::wait() {
  if (waited) throw Error("wgc: a model run's outputs are waited for once");
  waited = true;
  if (ready) return std::move(*ready);
  auto t0 = std::chrono::steady_clock::now();
  struct Timer {  // also when a wait throws
    HostTimes& t;
    std::chrono::steady_clock::time_point t0;
    ~Timer() { t.wait_ms = ms_since(t0); }
  } timer{times, t0};
  std::vector<HostTensor> out;
  for (size_t k = 0; k < rec.outputs.size(); ++k) {
    if (rec.constants[k]) {
      out.push_back(*rec.constants[k]);
      continue;
    }
    HostTensor t(rec.shapes[k], std::vector<float>(size_t(numel(rec.shapes[k]))));
    if (rec.outputs[k]) rec.outputs[k].wait(std::as_writable_bytes(std::span(t.f)));
    if (k < rec.integer.size() && rec.integer[k]) {  // i32 on the device
      std::vector<int32_t> v(t.f.size());
      if (!v.empty()) std::memcpy(v.data(), t.f.data(), v.size() * 4);
      t = HostTensor::ints(t.shape, std::vector<int64_t>(v.begin(), v.end()));
    }
    out.push_back(std::move(t));
  }
  return out;
}

Model::Recorded Model::record(Batch& batch, const std::vector<HostTensor>& inputs, bool upload_inputs) {
  if (!impl_->ctx) throw Error("wgc: Model::record needs a model made with a device context");
  CachedPlan& c = impl_->cached(inputs);
  if (c.staged) impl_->staged_error("Model::record");
  return impl_->record(batch, c, inputs, upload_inputs);
}

}  // namespace wgc::cnn
