// wgc infer / classify / bench-cnn: ONNX models (cnn/model.h) from the command line.
#include "cli/command.h"
#include "cnn/imagenet.h"
#include "cnn/model.h"
#include "cnn/onnx.h"
#include "io/chart.h"
#include "io/image.h"
#include "io/npy.h"
#include "util/error.h"
#include "util/json.h"
#include "util/output_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>

namespace wgc::cli {
namespace {

namespace fs = std::filesystem;

// A model on the device the flags ask for; the GPU context is made only when it can be used.
struct LoadedModel {
  std::optional<Context> ctx;
  std::unique_ptr<cnn::Model> model;
};

LoadedModel load_model(const std::string& path, cnn::Device dev, const GpuFlags& g) {
  LoadedModel m;
  if (dev != cnn::Device::Cpu) m.ctx.emplace(g.context_options());
  m.model = std::make_unique<cnn::Model>(m.ctx, cnn::load_onnx(path), cnn::ModelOptions{dev});
  return m;
}

cnn::HostTensor read_input(const std::string& path, const cnn::ValueInfo& vi) {
  npy::Array a = npy::read(path);
  cnn::HostTensor t;
  t.shape = a.shape;
  if (vi.elem_type == 6 || vi.elem_type == 7) {
    auto v = a.to_i32();
    t.integer = true;
    t.i.assign(v.begin(), v.end());
  } else {
    t.f = a.to_f32();
  }
  return t;
}

// The flags of the three commands (each uses what it registers).
struct Flags {
  GpuFlags gpu;
  std::optional<std::string> model, out, output;
  OutputFlags bench_out;  // bench-cnn's --json, --png, --force
  std::string device = "auto";
  std::vector<std::string> inputs, images;
  std::vector<int> batches{1};
  int top = 5, repeats = 20;
  bool force = false, profile = false, json = false;  // force: infer's --force; json: classify's
};

void add_common(CLI::App& app, Flags& f, const char* device_default) {
  f.device = device_default;
  add_text(app, "--model,-m", f.model, "the ONNX model (required)")->type_name("FILE");
  app.add_option("--device", f.device, "where the model runs: auto, gpu or cpu");
  add_gpu_flags(app, f.gpu);
}

int infer_cmd(const Flags& f) {
  const auto& model_path = f.model;
  const auto& out = f.out;
  const auto& output_name = f.output;
  const auto& inputs = f.inputs;
  const auto& g = f.gpu;
  cnn::Device dev = cnn::parse_device(f.device);
  if (!model_path) throw UsageError("--model FILE.onnx is required");
  if (!out) throw UsageError("--out FILE.npy is required");
  if (inputs.empty()) throw UsageError("give --input X.npy (or --input NAME=X.npy) for each model input");
  const Overwrite overwrite = overwrite_rule(f.force);
  check_output(*out, overwrite);

  LoadedModel lm = load_model(*model_path, dev, g);
  const cnn::Graph& graph = lm.model->graph();
  // NAME=FILE goes to that input; plain files fill the remaining inputs in order.
  std::vector<std::optional<cnn::HostTensor>> xs(graph.inputs.size());
  std::vector<std::string> plain;
  for (const auto& s : inputs) {
    size_t eq = s.find('=');
    auto it = eq == std::string::npos ? graph.inputs.end()
                                      : std::find_if(graph.inputs.begin(), graph.inputs.end(),
                                                     [&](const auto& v) { return v.name == s.substr(0, eq); });
    if (it == graph.inputs.end()) {
      plain.push_back(s);
      continue;
    }
    size_t k = size_t(it - graph.inputs.begin());
    if (xs[k]) throw Error("wgc infer: input '" + it->name + "' is given twice");
    xs[k] = read_input(s.substr(eq + 1), *it);
  }
  size_t next = 0;
  for (const auto& p : plain) {
    while (next < xs.size() && xs[next]) ++next;
    if (next == xs.size())
      throw Error("wgc infer: " + *model_path + " takes " + std::to_string(xs.size()) + " inputs; '" + p +
                  "' is one too many");
    xs[next] = read_input(p, graph.inputs[next]);
  }
  std::vector<cnn::HostTensor> args;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (!xs[k]) throw Error("wgc infer: input '" + graph.inputs[k].name + "' is missing (--input NAME=FILE.npy)");
    args.push_back(std::move(*xs[k]));
  }
  size_t which = 0;
  if (output_name) {
    auto it =
        std::find_if(graph.outputs.begin(), graph.outputs.end(), [&](const auto& v) { return v.name == *output_name; });
    if (it == graph.outputs.end()) {
      std::string names;
      for (const auto& o : graph.outputs) names += (names.empty() ? "" : ", ") + o.name;
      throw Error("wgc infer: the model has no output '" + *output_name + "' (" + names + ")");
    }
    which = size_t(it - graph.outputs.begin());
  }
  bool gpu = lm.model->on_gpu(args);
  auto t0 = std::chrono::steady_clock::now();
  auto ys = lm.model->run(args);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const cnn::HostTensor& y = ys.at(which);
  if (y.integer) {
    std::vector<int32_t> v;
    for (int64_t e : y.i) v.push_back(int32_t(std::clamp<int64_t>(e, INT32_MIN, INT32_MAX)));
    npy::write(*out, v, y.shape, overwrite);
  } else {
    npy::write(*out, y.f, y.shape, overwrite);
  }
  std::fprintf(stderr, "wgc infer: wrote %s: '%s' %s %s (%s, %.1f ms including the first run's setup)\n", out->c_str(),
               graph.outputs[which].name.c_str(), y.integer ? "int32" : "float32", to_string(y.shape).c_str(),
               gpu ? ("gpu on " + lm.ctx->adapter().device).c_str() : "cpu", ms);
  return 0;
}

int classify_cmd(const Flags& f) {
  const auto& model_path = f.model;
  const auto& images = f.images;
  const auto& g = f.gpu;
  const int top = f.top;
  cnn::Device dev = cnn::parse_device(f.device);
  if (!model_path) throw UsageError("--model FILE.onnx is required");
  if (images.empty()) throw UsageError("give one or more images (PNG or JPEG)");
  if (top < 1) throw UsageError("--top expects a positive count");
  LoadedModel lm = load_model(*model_path, dev, g);
  // All images in one batch: one run, one submit.
  cnn::HostTensor batch({int64_t(images.size()), 3, 224, 224}, {});
  for (const auto& path : images) {
    cnn::HostTensor x = cnn::imagenet_input(read_image(path));
    batch.f.insert(batch.f.end(), x.f.begin(), x.f.end());
  }
  cnn::HostTensor y = lm.model->run(batch);
  if (y.integer || y.shape.size() != 2 || y.shape[0] != int64_t(images.size()))
    throw Error("wgc classify: the model's first output is " + to_string(y.shape) + ", not [images, classes]");
  size_t classes = size_t(y.shape[1]);
  if (classes == 1000 && cnn::imagenet_classes().empty())
    std::fprintf(stderr, "wgc classify: this build has no ImageNet class names (scripts/setup.sh); showing indices\n");
  json::Value all = json::Value::array();
  for (size_t i = 0; i < images.size(); ++i) {
    auto best = cnn::top_k(std::span(y.f).subspan(i * classes, classes), int(top));
    if (f.json) {
      json::Value img = json::Value::object(), list = json::Value::array();
      img.set("image", images[i]);
      for (const auto& p : best) {
        json::Value c = json::Value::object();
        c.set("index", p.index);
        c.set("label", p.label);
        c.set("score", double(p.score));
        list.push_back(std::move(c));
      }
      img.set("top", std::move(list));
      all.push_back(std::move(img));
      continue;
    }
    std::printf("%s\n", images[i].c_str());
    for (const auto& p : best) std::printf("  %6.2f%%  %4d  %s\n", 100.0 * p.score, p.index, p.label.c_str());
  }
  if (f.json) std::printf("%s\n", all.dump(1).c_str());
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int bench_cnn_cmd(const Flags& f) {
  const auto& model_path = f.model;
  const auto& g = f.gpu;
  const int repeats = f.repeats;
  const bool profile = f.profile;
  const auto& png = f.bench_out.png;
  const std::vector<int>& batches = f.batches;
  cnn::Device dev = cnn::parse_device(f.device);
  if (!model_path) throw UsageError("--model FILE.onnx is required");
  if (repeats < 1) throw UsageError("-r must be at least 1");
  for (int v : batches)
    if (v < 1 || v > 4096) throw UsageError("--batch expects sizes 1..4096, got " + std::to_string(v));
  if (profile && dev == cnn::Device::Cpu) throw UsageError("--profile times GPU dispatches (--device gpu)");
  f.bench_out.check();
  std::FILE* table = f.bench_out.table();
  LoadedModel lm = load_model(*model_path, dev, g);
  cnn::Model& m = *lm.model;
  const cnn::Graph& graph = m.graph();
  if (graph.inputs.size() != 1)
    throw Error("wgc bench-cnn: the model takes " + std::to_string(graph.inputs.size()) +
                " inputs; bench-cnn feeds one image tensor");
  const cnn::ValueInfo& in = graph.inputs[0];
  for (size_t d = 1; d < in.dims.size(); ++d)
    if (in.dims[d] < 0)
      throw Error("wgc bench-cnn: input '" + in.name + "' has an unknown dimension " + std::to_string(d) +
                  " (only the batch may be open)");
  std::string device = lm.ctx && dev != cnn::Device::Cpu ? lm.ctx->adapter().device : "cpu";
  std::fprintf(table, "%s on %s (%s path), %d runs per batch size after a warm-up run\n\n", model_path->c_str(),
               device.c_str(), std::string(to_string(dev)).c_str(), repeats);
  std::fprintf(table, "%6s %10s %10s %12s %10s %8s %12s %12s %10s\n", "batch", "ms/run", "img/s", "GFLOP/run",
               "GFLOP/s", "submits", "pipelined", "GPU-only ms", "img/s");

  struct HostRow {
    int batch;
    double input, submit, ahead, wait, e2e_ms, spin_ms, block_ms, gpu_e2e_ms, gpu_net_ms;  // gpu: time_span, 0 if none
    double in_place_ms;
  };
  std::vector<HostRow> host_rows;
  json::Value results = json::Value::array();
  std::vector<std::string> cats;
  chart::BarSeries bars{"images/s", {}};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (int b : batches) {
    Shape shape = in.dims;
    if (shape.empty()) throw Error("wgc bench-cnn: input '" + in.name + "' declares no shape");
    shape[0] = b;
    cnn::HostTensor x(shape, std::vector<float>(size_t(numel(shape))));
    for (auto& v : x.f) v = nd(rng);
    std::vector<cnn::HostTensor> xs{x};
    bool gpu = m.on_gpu(xs);
    if (profile && !gpu && b == batches.front())
      warn("--profile times GPU dispatches; batch " + std::to_string(b) + " runs on the CPU (--device gpu)");
    // What the run waits for, with an estimate once the warm-up has been timed (SwiftShader's GPU
    // path takes minutes per batch size).
    const bool say = verbosity() != Verbosity::Quiet;
    if (say) std::fprintf(stderr, "wgc bench-cnn: batch %d on the %s: warm-up run...\n", b, gpu ? "GPU" : "CPU");
    auto w0 = std::chrono::steady_clock::now();
    m.run(xs);  // warm-up: plan, buffers, pipelines, prepared weights
    if (say) {
      const double per_run = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
      // The passes below: three end-to-end (one untimed run each), pipelined, GPU-only, two spans,
      // in place (two fills); the CPU path only the first.
      const int runs = gpu ? 6 * repeats + 2 * std::min(repeats, 10) + 5 + int(profile) : repeats + 1;
      std::fprintf(stderr, "wgc bench-cnn: batch %d: %d more runs, about %.0f s at the warm-up's pace (%.2f s)\n", b,
                   runs, per_run * runs, per_run);
    }
    // One inference at a time (upload, one submit, readback), with the host's share of each run.
    struct E2e {
      std::vector<double> ms, input, submit, ahead, wait;
    };
    auto e2e = [&](WaitMode mode) {
      WaitMode before = wait_mode();
      set_wait_mode(mode);
      E2e e;
      m.run(xs);  // the next run encoded ahead, under this mode's waits
      for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        cnn::Model::Pending p = m.start(xs);
        p.wait();
        e.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        const auto& h = p.host_times();
        e.input.push_back(h.input_ms), e.submit.push_back(h.submit_ms), e.ahead.push_back(h.encode_ahead_ms);
        e.wait.push_back(h.wait_ms);
      }
      set_wait_mode(before);
      return e;
    };
    // The GPU's time for one run, from before its first command to after its last (Batch::time_span):
    // e2e (the input's copy from the staging buffer, the network, the logits' copy) and the network.
    auto gpu_span = [&](bool upload) {
      std::vector<double> t;
      for (int r = 0; r < std::min(repeats, 10); ++r) {
        Batch sb(*lm.ctx);
        sb.time_span();
        auto rec = m.record(sb, xs, upload);
        sb.run();
        for (const auto& o : rec.outputs)
          if (o) o.wait();
        t.push_back(sb.total_ms());
      }
      return median(t);
    };
    // e2e with the input already in the staging buffers (Model::input_in_place), as PyTorch's
    // +copies reads pinned host memory: each run waits for its staging buffer and submits.
    auto in_place = [&] {
      std::vector<Shape> shapes{shape};
      for (int t = 0; t < 2; ++t) {  // both staging buffers get the input once
        std::span<float> dst = m.input_in_place(shapes);
        std::copy(x.f.begin(), x.f.end(), dst.begin());
        m.start_in_place(shapes).wait();
      }
      std::vector<double> t;
      for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        m.input_in_place(shapes);
        m.start_in_place(shapes).wait();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      return median(t);
    };
    E2e blocking = e2e(wait_mode());  // the process's waits (WGC_WAIT; Auto unless set)
    E2e spinning = gpu ? e2e(WaitMode::Spin) : E2e{};
    E2e sleeping = gpu ? e2e(WaitMode::Block) : E2e{};
    const std::vector<double>& ms = blocking.ms;
    double med = median(ms), flops = m.plan(xs).flops();
    double pipelined = 0, resident = 0;
    if (gpu) {
      // End to end with the next run's inputs filled while this one computes (Model::start).
      auto t0 = std::chrono::steady_clock::now();
      std::deque<cnn::Model::Pending> q;
      for (int r = 0; r < repeats; ++r) {
        q.push_back(m.start(xs));
        if (q.size() == 2) q.front().wait(), q.pop_front();
      }
      for (auto& p : q) p.wait();
      pipelined =
          repeats * b * 1e3 / std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      // GPU only: the inputs already on the device, no readback (one submit and its wait per run).
      std::vector<double> gms;
      for (int r = 0; r < repeats; ++r) {
        auto g0 = std::chrono::steady_clock::now();
        Batch rb(*lm.ctx);
        m.record(rb, xs, false);
        rb.run();
        gms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g0).count());
      }
      resident = median(gms);
    }
    std::fprintf(table, "%6d %10.3f %10.1f %12.3f %10.1f %8d %12.1f %12.3f %10.1f\n", b, med, b * 1e3 / med,
                 flops * 1e-9, flops / med * 1e-6, gpu ? 1 : 0, pipelined, resident,
                 resident > 0 ? b * 1e3 / resident : 0.0);
    if (gpu)
      host_rows.push_back({b, median(blocking.input), median(blocking.submit), median(blocking.ahead),
                           median(blocking.wait), med, median(spinning.ms), median(sleeping.ms), gpu_span(true),
                           gpu_span(false), in_place()});
    json::Value r = json::Value::object();
    r.set("batch", b);
    r.set("device", gpu ? "gpu" : "cpu");
    r.set("ms_median", med);
    r.set("images_per_s", b * 1e3 / med);
    r.set("flops", flops);
    r.set("submits_per_run", gpu ? 1 : 0);
    if (gpu) {
      const HostRow& h = host_rows.back();
      r.set("host_input_ms", h.input);
      r.set("host_submit_ms", h.submit);
      r.set("host_encode_ahead_ms", h.ahead);
      r.set("wait_ms", h.wait);
      r.set("gpu_ms_e2e", h.gpu_e2e_ms);
      r.set("gpu_ms_network", h.gpu_net_ms);
      r.set("ms_median_spin_wait", h.spin_ms);
      r.set("images_per_s_spin_wait", b * 1e3 / h.spin_ms);
      r.set("ms_median_block_wait", h.block_ms);
      r.set("images_per_s_block_wait", b * 1e3 / h.block_ms);
      r.set("ms_median_in_place", h.in_place_ms);
      r.set("images_per_s_in_place", b * 1e3 / h.in_place_ms);
      r.set("images_per_s_pipelined", pipelined);
      r.set("ms_gpu_only", resident);
      r.set("images_per_s_gpu_only", b * 1e3 / resident);
    }
    json::Value runs = json::Value::array();
    for (double v : ms) runs.push_back(v);
    r.set("ms", runs);
    if (profile && gpu) {  // one more run with a timestamp around each dispatch
      Batch tb(*lm.ctx, true);
      auto rec = m.record(tb, xs);
      tb.run();
      const auto& t = tb.timings();
      size_t at = 0;
      std::vector<std::pair<double, std::string>> layers;
      json::Value prof = json::Value::array();
      double total = 0;
      for (const auto& s : rec.steps) {
        double us = 0;
        for (size_t k = 0; k < s.dispatches && at < t.size(); ++k) us += t[at++].ms * 1e3;
        total += us;
        layers.emplace_back(us, s.label);
        json::Value l = json::Value::object();
        l.set("layer", s.label);
        l.set("us", us);
        l.set("dispatches", int64_t(s.dispatches));
        l.set("flops", s.flops);
        prof.push_back(l);
      }
      r.set("gpu_us_total", total);
      r.set("layers", prof);
      std::fprintf(
          table,
          "\n  batch %d: GPU time %.1f us over %zu dispatches (timestamps per dispatch; each in its own pass,\n"
          "  so the sum is above the one-pass run); slowest layers:\n",
          b, total, t.size());
      std::sort(layers.rbegin(), layers.rend());
      for (size_t k = 0; k < layers.size() && k < 15; ++k)
        std::fprintf(table, "  %10.1f us %5.1f%%  %s\n", layers[k].first, 100 * layers[k].first / total,
                     layers[k].second.c_str());
      std::fprintf(table, "\n");
    }
    results.push_back(r);
    cats.push_back("batch " + std::to_string(b));
    bars.values.push_back(b * 1e3 / med);
  }
  if (!host_rows.empty()) {
    std::fprintf(
        table,
        "\nWhere one inference's time goes (ms, medians; e2e = input + submit + wait, the GPU's work inside wait):\n"
        "%6s %9s %9s %9s %9s %9s %9s %10s %10s %10s %11s %10s %12s\n",
        "batch", "e2e", "GPU e2e", "GPU net", "input", "submit", "wait", "host+idle", "spin e2e", "spin img/s",
        "block img/s", "in place", "in-pl img/s");
    for (const auto& h : host_rows)
      std::fprintf(table, "%6d %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %10.3f %10.3f %10.1f %11.1f %10.3f %12.1f\n",
                   h.batch, h.e2e_ms, h.gpu_e2e_ms, h.gpu_net_ms, h.input, h.submit, h.wait, h.e2e_ms - h.gpu_e2e_ms,
                   h.spin_ms, h.batch * 1e3 / h.spin_ms, h.batch * 1e3 / h.block_ms, h.in_place_ms,
                   h.batch * 1e3 / h.in_place_ms);
    std::fprintf(
        table,
        "GPU e2e: the GPU's time for a run (timestamps before its first command and after its last: the input's\n"
        "copy, the network, the outputs' copy); GPU net: the network alone; input: the host copying the input into\n"
        "a mapped staging buffer; submit: submitting the run encoded ahead; wait: until the outputs are on the\n"
        "host; host+idle: e2e - GPU e2e, what one run at a time spends outside the GPU's work (e2e under the\n"
        "process's waits: WGC_WAIT, auto unless set); spin / block: the same runs with the waits always polling /\n"
        "always sleeping; in place: e2e with the input already in the staging\n"
        "buffers (Model::input_in_place, as PyTorch's +copies reads pinned memory). The JSON also has the host's\n"
        "time encoding the next run after each submit (host_encode_ahead_ms; it overlaps the GPU's work).\n");
  }
  std::fprintf(
      table,
      "\nms/run, img/s: median wall-clock of one inference (input upload, one submit, output readback).\n"
      "pipelined: images/s end to end with the next batch's upload overlapping this one's work (Model::start).\n"
      "GPU-only: median of one submit and its wait with the input already on the device, no readback.\n");
  if (png)
    chart::write_bar_chart(*png, fs::path(*model_path).filename().string() + " on " + device, "images/s", cats, {bars},
                           {}, f.bench_out.overwrite());
  if (f.bench_out.json) {
    json::Value doc = json::Value::object();
    doc.set("model", *model_path);
    doc.set("device", device);
    doc.set("repeats", repeats);
    doc.set("results", results);
    f.bench_out.write_json(doc.dump(1));
  }
  return 0;
}

Register reg_infer{{"infer",
                    "runs an ONNX model on float32 .npy tensors and writes the first output (or --output NAME)",
                    [](CLI::App& app) {
                      auto f = std::make_shared<Flags>();
                      add_common(app, *f, "auto");
                      app.add_option("--input", f->inputs, "an input tensor X.npy, or NAME=X.npy (repeatable)")
                          ->type_name("[NAME=]FILE")
                          ->allow_extra_args(false)
                          ->default_str("");
                      add_text(app, "--out", f->out, "the .npy file to write (required)")->type_name("FILE");
                      add_text(app, "--output", f->output, "the model output to write (default: the first)");
                      add_force(app, f->force);
                      return [f] { return infer_cmd(*f); };
                    }}};
Register reg_classify{
    {"classify", "ImageNet classification of PNG/JPEG images (torchvision preprocessing, top-k with names)",
     [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_common(app, *f, "auto");
       add_number(app, "--top", f->top, "classes shown per image");
       app.add_flag("--json", f->json, "print JSON: per image its path and top classes (index, label, score)");
       add_rest(app, f->images, "IMAGE ...", "PNG or JPEG images (required)");
       return [f] { return classify_cmd(*f); };
     }}};
Register reg_bench{
    {"bench-cnn", "images/s of an ONNX model per batch size; --profile: GPU time per layer", [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_common(app, *f, "auto");
       add_numbers(app, "--batch", f->batches, "batch sizes, one test each");
       add_number(app, "-r,--repetitions", f->repeats, "timed runs per batch size");
       app.add_flag("--profile", f->profile, "GPU time per layer (one more run, timed per dispatch)");
       add_output_flags(app, f->bench_out, "every number as JSON", "a bar chart of images/s");
       return [f] { return bench_cnn_cmd(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
