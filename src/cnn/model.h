// An ONNX image model (or any graph of the supported ops) ready to run:
//
//   wgc::Context ctx;
//   wgc::cnn::Model m(ctx, "mobilenet_v2.onnx");
//   wgc::cnn::HostTensor x({1, 3, 224, 224}, pixels);  // float32 NCHW
//   wgc::cnn::HostTensor y = m.run(x);                  // [1, 1000] logits
//
// At load: the file is read (cnn/onnx.h) and rewritten (cnn/fuse.h: BatchNorm folded, residual
// Add and Relu / Clip fused into the convolutions). Per input shape, once: a plan (cnn/plan.h),
// its activation buffers and each convolution's prepared weights. Each run: the inputs uploaded,
// the whole network recorded into one Batch and submitted once, the outputs read back. Any batch
// size; a new shape makes (and keeps) a new plan.
#pragma once

#include "cnn/fuse.h"
#include "cnn/graph.h"
#include "cnn/plan.h"
#include "gpu/batch.h"
#include "gpu/context.h"
#include "util/device.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::cnn {

// Where the model runs (util/device.h). Auto: the GPU, except on a CPU adapter (SwiftShader: the
// same cores run the CPU references faster, docs/cnn.md) and for plans under kCpuBelowFlops.
using wgc::Device;
using wgc::parse_device;

// Below this many FLOPs per run, Auto runs on the CPU even with a GPU: a submit and readback
// (~0.1 ms on the H200, docs/cnn.md) cost more than the arithmetic.
inline constexpr double kCpuBelowFlops = 2.0e6;

struct ModelOptions {
  Device device = Device::Auto;
  // Attention chains (MatMul, scale, mask, Softmax, MatMul) as one kernel (cnn/fuse.h); false
  // keeps the exporters' nodes (the test that both agree).
  bool fuse_attention = true;
};

// Per step of a recorded run: its label ("node name (Op)") and how many commands it recorded: its
// dispatches, in the order of a timed Batch's timings() (the convolution versions Auto picks record
// no buffer copies; an explicit im2col-gemm with groups does, and would shift the attribution).
struct StepDispatches {
  std::string label;
  size_t dispatches = 0;
  double flops = 0;
};

class Model {
 public:
  Model(const Context& ctx, const std::filesystem::path& onnx, ModelOptions options = {});
  // CPU only: no device is created.
  explicit Model(const std::filesystem::path& onnx);
  // From a graph already loaded (fuse() is applied here). ctx empty: CPU only.
  Model(std::optional<Context> ctx, Graph graph, ModelOptions options = {});
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  const Graph& graph() const;
  const FuseStats& fused() const;
  // Whether runs with these inputs go to the GPU.
  bool on_gpu(const std::vector<HostTensor>& inputs);

  // The first input to the first output.
  HostTensor run(const HostTensor& x);
  // One input per graph().inputs, in order (integer ones carry their values: shape inputs);
  // every output, in order.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);

  // GPU only: records a run into `batch` (the inputs' copies from a staging buffer, then the
  // network, recorded once per input shape and replayed) and returns the outputs' readbacks (valid
  // after the batch is submitted) and each step's dispatches. A second record with the same input
  // shapes reuses the same buffers: submit and wait for one before recording the next.
  // upload_inputs false: the input buffers keep what the last run put there (a benchmark's
  // GPU-only time).
  struct Recorded {
    std::vector<Readback> outputs;
    std::vector<Shape> shapes;
    std::vector<HostTensorPtr> constants;  // outputs that are constants (their readback is empty)
    std::vector<bool> integer;             // outputs that are integer tensors (i32 read back)
    std::vector<StepDispatches> steps;
  };
  Recorded record(Batch& batch, const std::vector<HostTensor>& inputs, bool upload_inputs = true);

  // Where a run's host time went (ms, GPU path): input_ms copying the inputs into the staging
  // buffers, submit_ms recording (when not encoded ahead) and submitting, encode_ahead_ms encoding
  // the next run after the submit (overlaps this run's GPU work), wait_ms in wait() (the GPU's
  // work, the wake-up and the outputs' copy to the host).
  struct HostTimes {
    double input_ms = 0, submit_ms = 0, encode_ahead_ms = 0, wait_ms = 0;
  };

  // A run started and not waited for yet (run() is start(inputs).wait()).
  class Pending {
   public:
    std::vector<HostTensor> wait();  // blocks until this run's outputs are here; once
    const HostTimes& host_times() const { return times; }

   private:
    friend class Model;
    Recorded rec;
    std::optional<std::vector<HostTensor>> ready;  // the CPU path's outputs, or after wait()
    bool waited = false;
    HostTimes times;
  };
  // Starts a run and returns once it is submitted (GPU path; the CPU path runs now). Runs go to the
  // GPU in the order started, so the host can fill the next run's inputs (two staging buffers per
  // input, used in turn) while this one computes. After the submit it encodes the next run of the
  // same shapes (Batch::encode), so that the next start() only copies the inputs and submits.
  // Wait for each Pending, in any order, before starting more than one other run.
  Pending start(const std::vector<HostTensor>& inputs);

  // Inputs written in place, as into pinned host memory (GPU path, float inputs): the mapped
  // staging buffer that the next run of these input shapes copies graph input k from, numel(shape)
  // floats (waits until the GPU is done with it; it holds what was written there two runs ago).
  // Write the values there, then start_in_place(shapes): no copy of the input on the host. The
  // span is valid until that call.
  std::span<float> input_in_place(const std::vector<Shape>& shapes, size_t k = 0);
  Pending start_in_place(const std::vector<Shape>& shapes);

  // The plan for these inputs (made once per shape): steps, FLOPs, buffer sizes. A model run in
  // stages (below): its first stage's.
  const Plan& plan(const std::vector<HostTensor>& inputs);
  // Whether runs with these inputs go in stages: the graph needs values it computes (NonZero,
  // NonMaxSuppression, an If on a computed condition), so it is cut before that node, the part
  // before it run and the values live across the cut read back, and the rest planned with them
  // (the needed ones by value) and run, cutting again where needed. record() and inputs written
  // in place are not available then.
  bool staged(const std::vector<HostTensor>& inputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // start() and start_in_place() on the GPU path: the inputs' values copied in, or already
  // written in place (then `inputs` only name the plan).
  Pending start_gpu(const std::vector<HostTensor>& inputs, bool in_place);
};

}  // namespace wgc::cnn
