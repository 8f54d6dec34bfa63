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

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
  if (dev != cnn::Device::Cpu) m.ctx.emplace(ContextOptions{parse_backend(g.backend), g.debug});
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

int infer_cmd(Args& a) {
  auto g = gpu_flags(a);
  auto model_path = a.option("--model");
  auto out = a.option("--out");
  auto output_name = a.option("--output");
  bool force = a.flag("--force");
  cnn::Device dev = cnn::parse_device(a.option_or("--device", "auto"));
  std::vector<std::string> inputs;
  while (auto i = a.option("--input")) inputs.push_back(*i);
  a.done();
  if (!model_path) throw Error("wgc infer: --model FILE.onnx is required");
  if (!out) throw Error("wgc infer: --out FILE.npy is required");
  if (inputs.empty()) throw Error("wgc infer: give --input X.npy (or --input NAME=X.npy) for each model input");
  std::error_code ec;
  if (!force && fs::exists(*out, ec)) throw Error("wgc infer: " + *out + " exists; give --force to overwrite it");

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
    npy::write(*out, v, y.shape);
  } else {
    npy::write(*out, y.f, y.shape);
  }
  std::fprintf(stderr, "wgc infer: wrote %s: '%s' %s %s (%s, %.1f ms including the first run's setup)\n", out->c_str(),
               graph.outputs[which].name.c_str(), y.integer ? "int32" : "float32", to_string(y.shape).c_str(),
               gpu ? ("gpu on " + lm.ctx->adapter().device).c_str() : "cpu", ms);
  return 0;
}

int classify_cmd(Args& a) {
  auto g = gpu_flags(a);
  auto model_path = a.option("--model");
  double top = a.number_or("--top", 5);
  cnn::Device dev = cnn::parse_device(a.option_or("--device", "auto"));
  auto images = a.positionals();
  a.done();
  if (!model_path) throw Error("wgc classify: --model FILE.onnx is required");
  if (images.empty()) throw Error("wgc classify: give one or more images (PNG or JPEG)");
  if (top < 1 || top != double(int(top))) throw Error("wgc classify: --top expects a positive count");
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
  for (size_t i = 0; i < images.size(); ++i) {
    std::printf("%s\n", images[i].c_str());
    for (const auto& p : cnn::top_k(std::span(y.f).subspan(i * classes, classes), int(top)))
      std::printf("  %6.2f%%  %4d  %s\n", 100.0 * p.score, p.index, p.label.c_str());
  }
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int bench_cnn_cmd(Args& a) {
  auto g = gpu_flags(a);
  auto model_path = a.option("--model");
  auto batch_items = a.list("--batch");
  int repeats = int(a.number_or("-r", 20));
  bool profile = a.flag("--profile");
  auto json_path = a.option("--json");
  auto png = a.option("--png");
  cnn::Device dev = cnn::parse_device(a.option_or("--device", "gpu"));
  a.done();
  if (!model_path) throw Error("wgc bench-cnn: --model FILE.onnx is required");
  if (repeats < 1) throw Error("wgc bench-cnn: -r must be at least 1");
  std::vector<int> batches;
  for (const auto& s : batch_items.empty() ? std::vector<std::string>{"1"} : batch_items) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || v < 1 || v > 4096)
      throw Error("wgc bench-cnn: --batch expects sizes 1..4096, got '" + s + "'");
    batches.push_back(int(v));
  }
  if (profile && dev == cnn::Device::Cpu) throw Error("wgc bench-cnn: --profile times GPU dispatches (--device gpu)");
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
  std::printf("%s on %s (%s path), %d runs per batch size after a warm-up run\n\n", model_path->c_str(), device.c_str(),
              std::string(to_string(dev)).c_str(), repeats);
  std::printf("%6s %10s %10s %12s %10s %8s\n", "batch", "ms/run", "img/s", "GFLOP/run", "GFLOP/s", "submits");

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
    m.run(xs);  // warm-up: plan, buffers, pipelines, prepared weights
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      m.run(xs);  // upload, one submit, readback
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    double med = median(ms), flops = m.plan(xs).flops();
    std::printf("%6d %10.3f %10.1f %12.3f %10.1f %8d\n", b, med, b * 1e3 / med, flops * 1e-9, flops / med * 1e-6,
                gpu ? 1 : 0);
    json::Value r = json::Value::object();
    r.set("batch", b);
    r.set("device", gpu ? "gpu" : "cpu");
    r.set("ms_median", med);
    r.set("images_per_s", b * 1e3 / med);
    r.set("flops", flops);
    r.set("submits_per_run", gpu ? 1 : 0);
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
      std::printf(
          "\n  batch %d: GPU time %.1f us over %zu dispatches (timestamps per dispatch; each in its own pass,\n"
          "  so the sum is above the one-pass run); slowest layers:\n",
          b, total, t.size());
      std::sort(layers.rbegin(), layers.rend());
      for (size_t k = 0; k < layers.size() && k < 15; ++k)
        std::printf("  %10.1f us %5.1f%%  %s\n", layers[k].first, 100 * layers[k].first / total,
                    layers[k].second.c_str());
      std::printf("\n");
    }
    results.push_back(r);
    cats.push_back("batch " + std::to_string(b));
    bars.values.push_back(b * 1e3 / med);
  }
  std::printf("\nms/run: median wall-clock of one inference (input upload, one submit, output readback).\n");
  if (png)
    chart::write_bar_chart(*png, fs::path(*model_path).filename().string() + " on " + device, "images/s", cats, {bars});
  if (json_path) {
    json::Value doc = json::Value::object();
    doc.set("model", *model_path);
    doc.set("device", device);
    doc.set("repeats", repeats);
    doc.set("results", results);
    std::ofstream f(*json_path);
    f << doc.dump(1) << "\n";
    if (!f) throw Error("wgc bench-cnn: cannot write " + *json_path);
  }
  return 0;
}

Register reg_infer{{"infer",
                    "--model M.onnx --input X.npy [--input NAME=Y.npy ...] --out Y.npy [--output NAME] [--force] "
                    "[--device auto|gpu|cpu] [--backend B]",
                    "runs an ONNX model on float32 .npy tensors and writes the first output (or --output NAME)",
                    infer_cmd}};
Register reg_classify{{"classify", "--model M.onnx IMAGE... [--top 5] [--device auto|gpu|cpu] [--backend B]",
                       "ImageNet classification of PNG/JPEG images (torchvision preprocessing, top-k with names)",
                       classify_cmd}};
Register reg_bench{{"bench-cnn",
                    "--model M.onnx [--batch 1,64] [-r 20] [--profile] [--json F] [--png F] [--device gpu|cpu] "
                    "[--backend B]",
                    "images/s of an ONNX model per batch size; --profile: GPU time per layer", bench_cnn_cmd}};

}  // namespace
}  // namespace wgc::cli
