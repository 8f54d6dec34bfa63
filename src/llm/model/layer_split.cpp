#include "llm/model/layer_split.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>

namespace wgc::llm {

std::vector<LayerRange> split_layers(int n_layers, std::span<const double> weights) {
  const std::string what = "wgc: layer split: ";
  if (weights.empty()) throw Error(what + "no devices");
  double total = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!std::isfinite(weights[i]) || weights[i] < 0)
      throw Error(what + "proportion " + std::to_string(i) + " is " + std::to_string(weights[i]) +
                  ", expected a finite number >= 0");
    total += weights[i];
  }
  if (!(total > 0)) throw Error(what + "every proportion is 0");
  if (int64_t(weights.size()) > n_layers)
    throw Error(what + std::to_string(weights.size()) + " devices for " + std::to_string(n_layers) +
                " layers: each device needs at least one layer");
  // Boundaries at the rounded running sums, then moved so that every range keeps >= 1 layer
  // (a device with proportion 0 still gets one: WebGPU cannot skip a device in the chain).
  const int n = int(weights.size());
  std::vector<int> end(static_cast<size_t>(n));
  double run = 0;
  for (int i = 0; i < n; ++i) {
    run += weights[size_t(i)];
    end[size_t(i)] = i == n - 1 ? n_layers : int(std::lround(double(n_layers) * run / total));
  }
  for (int i = 0; i < n; ++i) {  // at least i + 1 layers up to range i, and room for the rest
    const int lo = i + 1, hi = n_layers - (n - 1 - i);
    end[size_t(i)] = std::clamp(end[size_t(i)], lo, hi);
    if (i > 0) end[size_t(i)] = std::max(end[size_t(i)], end[size_t(i - 1)] + 1);
  }
  std::vector<LayerRange> r;
  int first = 0;
  for (int i = 0; i < n; ++i) {
    r.push_back({first, end[size_t(i)] - first});
    first = end[size_t(i)];
  }
  return r;
}

std::optional<uint64_t> free_memory(const Context&) { return std::nullopt; }

std::vector<double> split_weights(std::span<const Context> devices, std::span<const double> proportions) {
  if (!proportions.empty()) {
    if (proportions.size() != devices.size())
      throw Error("wgc: layer split: " + std::to_string(proportions.size()) + " proportions for " +
                  std::to_string(devices.size()) + " devices (give one per device)");
    return {proportions.begin(), proportions.end()};
  }
  std::vector<double> w;
  for (const Context& c : devices) {
    const auto m = free_memory(c);
    if (!m) return std::vector<double>(devices.size(), 1.0);
    w.push_back(double(*m));
  }
  return w;
}

std::string describe_split(std::span<const Context> devices, std::span<const LayerRange> ranges) {
  std::string s;
  for (size_t i = 0; i < devices.size() && i < ranges.size(); ++i) {
    if (i) s += ", ";
    s += "layers " + std::to_string(ranges[i].first) + "-" + std::to_string(ranges[i].end() - 1) + " on " +
         devices[i].adapter().device;
  }
  return s;
}

void HiddenCrossing::read(Batch& b, const Tensor& x, uint64_t bytes) { back_ = b.read(x, 0, bytes); }

void HiddenCrossing::write(const Context& next, const Tensor& x) {
  if (!back_) throw Error("wgc: layer split: a hidden state crossing without its readback");
  upload(next, x, back_.wait());
  back_ = {};
}

}  // namespace wgc::llm
