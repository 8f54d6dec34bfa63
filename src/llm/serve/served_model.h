// The model `wgc serve` serves, with what it takes to build it again when its GPU device is lost
// (a driver reset, the GPU reclaimed): a new Context on the same adapter (the old one's options)
// and the weights uploaded again from the file, which stays mapped. recovery() hands that to the
// Scheduler (DeviceRecovery), which drops its engine first.
//
//   ServedModel served(file, ctx, engine_options);
//   Scheduler s(served.model(), tok, opts, served.recovery(log));
//   served.context();   // the current context (a new one after a rebuild), e.g. for metrics
#pragma once

#include "gpu/context.h"
#include "llm/formats/model_file.h"
#include "llm/model/llama.h"
#include "llm/serve/scheduler.h"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace wgc::llm {

class ServedModel {
 public:
  // ctx: the context the model runs on (none: the CPU engine, which needs no recovery). `file`
  // outlives this.
  ServedModel(const ModelFile& file, std::optional<Context> ctx, EngineOptions options);
  ~ServedModel();

  LlamaModel& model() { return *model_; }
  std::optional<Context> context() const;  // thread-safe
  // Drops the model and its context, then makes a new context with the same options and the model
  // on it (throws when the device or the upload fails; the caller retries).
  LlamaModel& rebuild();
  // For the Scheduler: rebuild() when the device is lost; `log` gets one line per event. Empty
  // for the CPU engine.
  DeviceRecovery recovery(std::function<void(const std::string&)> log = {});

 private:
  const ModelFile& file_;
  EngineOptions options_;
  std::optional<ContextOptions> ctx_options_;  // what a new context is made with
  mutable std::mutex mu_;                      // guards ctx_ (model_ is the scheduler worker's once serving)
  std::optional<Context> ctx_;
  std::unique_ptr<LlamaModel> model_;
};

}  // namespace wgc::llm
