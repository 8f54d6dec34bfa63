// Layer split (pipeline) of one model over several GPUs of a host: each device holds a contiguous
// range of layers (their weights and their share of the KV cache); the first also the embedding,
// the last the final norm and the output projection (and the embedding again where the output is
// tied to it). A forward step runs the ranges in order, and the hidden state x crosses from one
// device to the next once per range through host memory (a readback's mapped staging buffer, then
// the next device's queue write): WebGPU devices share no memory.
//
// The engines execute the same layer plan on each device (layer_plan.h, gpu_layer.h) over the
// layers it holds; which layers a device runs and where x crosses is all this file decides.
#pragma once

#include "gpu/batch.h"
#include "gpu/context.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace wgc::llm {

class LlmOps;
struct LlamaWeights;
struct RopeTable;

// Layers [first, first + count) of the model.
struct LayerRange {
  int first = 0, count = 0;
  int end() const { return first + count; }
  bool operator==(const LayerRange&) const = default;
};

// n_layers split into weights.size() contiguous ranges, in order, each holding a share of the
// layers proportional to its weight (rounded on the running sum, as llama.cpp's --tensor-split),
// and at least one layer. wgc::Error when a weight is not a finite number >= 0, all are 0, or
// there are more devices than layers.
std::vector<LayerRange> split_layers(int n_layers, std::span<const double> weights);

// The weights a split uses: `proportions` when given (one per device: a wgc::Error otherwise),
// else each device's free memory where every device reports it, else 1 each (by layer count).
// Dawn reports no free memory through WebGPU, so today the default is by layer count.
std::vector<double> split_weights(std::span<const Context> devices, std::span<const double> proportions);
// A device's free memory in bytes, where the runtime tells (none today: see above).
std::optional<uint64_t> free_memory(const Context& ctx);

// "0-13 on <adapter>, 14-27 on <adapter>" (for status lines).
std::string describe_split(std::span<const Context> devices, std::span<const LayerRange> ranges);

// One device's share of a GPU model, for the engines that run the model's layers (the serving
// engine): its context, kernels, weights (w.layers are the device's layers, layer `layers.first`
// of the model at w.layers[0]), RoPE table, and whether it holds the embedding (first) and the
// output (last). A model on one GPU is one stage holding everything.
struct ModelStage {
  Context ctx;
  const LlmOps* ops = nullptr;
  const LlamaWeights* w = nullptr;
  const RopeTable* rope = nullptr;
  LayerRange layers;
  bool first = true, last = true;
  const RopeTable* sliding_rope = nullptr;  // the sliding layers' own (Gemma 3), else null
};

// The hidden state's way from one device to the next: rows of x read back from the source
// device's batch (read(), before its submit), then written into the next device's x (write(),
// after the source batch's submit; waits for the readback). The next device's queue orders the
// write after the work submitted to it before, so x can be reused at once.
class HiddenCrossing {
 public:
  // Records the readback of `bytes` of x from offset 0 into b (the source device's batch).
  void read(Batch& b, const Tensor& x, uint64_t bytes);
  // Waits for the readback and writes it into x of the next device at offset 0.
  void write(const Context& next, const Tensor& x);
  explicit operator bool() const { return bool(back_); }

 private:
  Readback back_;
};

}  // namespace wgc::llm
