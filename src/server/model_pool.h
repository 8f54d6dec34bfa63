// The models a server answers for: one (`wgc serve --model`), or several (`--models-dir`), each
// loaded on the first request that names it, within a memory budget (`--max-gpu-memory`), the
// least recently used idle one unloaded to make room. A request holds a Lease while it runs: its
// model is not unloaded under it. Requests for a model that is loading wait for it (up to the
// load timeout); errors name the model.
//
//   ModelPool pool({{"a", "a.gguf", size_a}, {"b", "b.gguf", size_b}}, loader, 8ull << 30, 120s);
//   auto lease = pool.acquire("b");          // loads b (unloading a if idle and both do not fit)
//   lease->scheduler().submit(...);
#pragma once

#include "gpu/context.h"
#include "llm/serve/scheduler.h"
#include "server/request.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wgc::server {

// A model to serve: its name in the API, its file, and the bytes it takes before it is loaded
// (the weights' file size; the loader's own figure replaces it once loaded).
struct ModelSpec {
  std::string name;
  std::filesystem::path path;
  uint64_t estimate_bytes = 0;
};

// A loaded model: what the loader makes. `owner` keeps everything the info and the scheduler refer
// to alive (file, tokenizer, template, engine); destroying it unloads the model.
struct LoadedModel {
  ModelInfo info;
  llm::Scheduler* scheduler = nullptr;
  std::function<std::optional<Context>()> context;  // its GPU context (none: the CPU engine)
  uint64_t bytes = 0;                               // weights + KV pool
  std::shared_ptr<void> owner;
};

class ModelPool {
 public:
  using Loader = std::function<LoadedModel(const ModelSpec&)>;
  // specs[0] is the default model (requests to a pool of one may name it anything). budget_bytes:
  // 0 for no limit. Throws wgc::Error on no specs or a name given twice.
  ModelPool(std::vector<ModelSpec> specs, Loader loader, uint64_t budget_bytes, std::chrono::milliseconds load_timeout);
  // A pool of one model loaded already (never unloaded).
  explicit ModelPool(LoadedModel m);
  ~ModelPool();
  ModelPool(const ModelPool&) = delete;
  ModelPool& operator=(const ModelPool&) = delete;

  struct Impl;
  // A lease may outlive the pool (a finished request's callbacks, dropped by a scheduler's worker
  // after the server is gone): it keeps the pool's counts alive, not the model (the pool's
  // destructor unloads the models, joining their workers, on its own thread).
  class Lease {
   public:
    ~Lease();
    const ModelInfo& info() const { return m_->info; }
    llm::Scheduler& scheduler() const { return *m_->scheduler; }

   private:
    friend class ModelPool;
    Lease(std::shared_ptr<Impl> pool, size_t index, const LoadedModel* m)
        : pool_(std::move(pool)), index_(index), m_(m) {}
    std::shared_ptr<Impl> pool_;
    size_t index_;
    const LoadedModel* m_;  // loaded while a lease holds it
  };

  // The model `name` ("" or any name in a pool of one: the default), loaded. Throws ApiError: 404
  // for an unknown name (model_not_found), 503 when it cannot be loaded in time (the others are
  // busy and it does not fit beside them, or another request's load of it timed out:
  // model_loading), 500 when loading fails (the loader's message, naming the model).
  std::shared_ptr<Lease> acquire(const std::string& name);

  struct Entry {
    std::string name;
    bool loaded = false;
    uint64_t bytes = 0;             // loaded: the model's; else the estimate
    std::optional<ModelInfo> info;  // when loaded
  };
  std::vector<Entry> list() const;
  bool knows(const std::string& name) const;
  size_t size() const;
  // Calls fn for every loaded model's scheduler (under the pool's lock: fn must not call the pool).
  void for_each_loaded(const std::function<void(const std::string&, llm::Scheduler&)>& fn) const;
  // The default model's GPU context, when it is loaded (the metrics' buffer gauges).
  std::optional<Context> context() const;
  // Later acquire() calls throw 503 (shutting down); loaded schedulers stop accepting.
  void stop_accepting();
  uint64_t loaded_bytes() const;

 private:
  std::shared_ptr<Impl> impl_;
};

// A byte count with an optional K, M, G or T suffix (powers of 1024; "8G", "512M", "1048576").
// Throws wgc::Error naming `what` on anything else.
uint64_t parse_bytes(const std::string& text, const std::string& what);

}  // namespace wgc::server
