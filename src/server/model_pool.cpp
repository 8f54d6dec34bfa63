#include "server/model_pool.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <set>

namespace wgc::server {

namespace {

std::string mib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / (1 << 20));
  return b;
}

}  // namespace

struct ModelPool::Impl {
  struct Slot {
    ModelSpec spec;
    std::shared_ptr<LoadedModel> model;  // null: not loaded
    bool loading = false, pinned = false;
    int leases = 0;
    uint64_t last_used = 0;
  };
  std::vector<Slot> slots;
  Loader loader;
  uint64_t budget = 0;
  std::chrono::milliseconds timeout{0};
  mutable std::mutex mu;
  std::condition_variable cv;  // a load ended, a lease was released
  uint64_t tick = 0, loaded = 0;
  bool stopping = false;

  // The slot a request's `model` names (a pool of one answers to any name).
  std::optional<size_t> find(const std::string& name) const {
    if (name.empty() || slots.size() == 1) return 0;
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i].spec.name == name) return i;
    return std::nullopt;
  }

  void release(size_t index) {
    std::lock_guard lk(mu);
    --slots[index].leases;
    cv.notify_all();
  }

  // The least recently used loaded model that nothing uses (none: nullopt).
  std::optional<size_t> victim(size_t keep) const {
    std::optional<size_t> best;
    for (size_t i = 0; i < slots.size(); ++i) {
      const Slot& s = slots[i];
      if (i == keep || !s.model || s.leases > 0 || s.loading || s.pinned) continue;
      if (!best || s.last_used < slots[*best].last_used) best = i;
    }
    return best;
  }
};

ModelPool::ModelPool(std::vector<ModelSpec> specs, Loader loader, uint64_t budget_bytes,
                     std::chrono::milliseconds load_timeout)
    : impl_(std::make_shared<Impl>()) {
  if (specs.empty()) throw Error("wgc serve: no model to serve");
  std::set<std::string> names;
  for (auto& s : specs) {
    if (!names.insert(s.name).second) throw Error("wgc serve: two models are named '" + s.name + "'");
    impl_->slots.push_back({std::move(s), nullptr});
  }
  impl_->loader = std::move(loader);
  impl_->budget = budget_bytes;
  impl_->timeout = load_timeout;
}

ModelPool::ModelPool(LoadedModel m) : impl_(std::make_shared<Impl>()) {
  Impl::Slot s;
  s.spec.name = m.info.id;
  s.pinned = true;
  impl_->loaded = m.bytes;
  s.model = std::make_shared<LoadedModel>(std::move(m));
  impl_->slots.push_back(std::move(s));
}

ModelPool::~ModelPool() {
  std::vector<std::shared_ptr<LoadedModel>> models;
  {
    std::lock_guard lk(impl_->mu);
    for (auto& s : impl_->slots) models.push_back(std::move(s.model));
  }
  models.clear();  // here, not on a worker thread that drops the last lease
}

ModelPool::Lease::~Lease() { pool_->release(index_); }

std::shared_ptr<ModelPool::Lease> ModelPool::acquire(const std::string& name) {
  Impl& p = *impl_;
  std::unique_lock lk(p.mu);
  const std::optional<size_t> found = p.find(name);
  if (!found) {
    std::string known;
    for (const auto& s : p.slots) known += (known.empty() ? "'" : ", '") + s.spec.name + "'";
    throw ApiError(404, "the model '" + name + "' does not exist (this server has " + known + ")",
                   "invalid_request_error", "model", "model_not_found");
  }
  const size_t i = *found;
  Impl::Slot& slot = p.slots[i];
  const std::string& id = slot.spec.name;
  const auto deadline = std::chrono::steady_clock::now() + p.timeout;
  auto busy = [&](const std::string& why) {
    return ApiError(503, "the model '" + id + "' " + why, "unavailable_error", "model", "model_loading");
  };
  for (;;) {
    if (p.stopping) throw ApiError(503, "the server is shutting down", "unavailable_error", "", "shutting_down");
    if (slot.model) {
      ++slot.leases;
      slot.last_used = ++p.tick;
      return std::shared_ptr<Lease>(new Lease(impl_, i, slot.model.get()));
    }
    if (slot.loading) {  // another request loads it: wait for that
      if (p.cv.wait_until(lk, deadline) == std::cv_status::timeout)
        throw busy("is still loading after " + std::to_string(p.timeout.count() / 1000) + " s; retry later");
      continue;
    }
    const uint64_t need = slot.spec.estimate_bytes;
    if (p.budget && need > p.budget)
      throw ApiError(503,
                     "the model '" + id + "' needs about " + mib(need) + ", more than the memory budget (" +
                         mib(p.budget) + ", --max-gpu-memory)",
                     "unavailable_error", "model", "model_too_large");
    // Room: the least recently used idle models go.
    while (p.budget && p.loaded + need > p.budget) {
      std::optional<size_t> v = p.victim(i);
      if (!v) break;
      Impl::Slot& old = p.slots[*v];
      std::shared_ptr<LoadedModel> gone = std::move(old.model);
      p.loaded -= std::min(p.loaded, gone->bytes);
      old.loading = true;  // nobody takes it while it unloads
      lk.unlock();
      gone.reset();  // the scheduler (idle: no lease) joins its worker; the engine frees its buffers
      std::fprintf(stderr, "wgc serve: unloaded model %s (least recently used) to load %s\n", old.spec.name.c_str(),
                   id.c_str());
      lk.lock();
      old.loading = false;
      p.cv.notify_all();
    }
    if (p.budget && p.loaded + need > p.budget) {  // the others are busy: wait for one to be idle
      if (p.cv.wait_until(lk, deadline) == std::cv_status::timeout)
        throw busy("(about " + mib(need) + ") does not fit beside the models in use (" + mib(p.loaded) + " of " +
                   mib(p.budget) + ") within " + std::to_string(p.timeout.count() / 1000) + " s; retry later");
      continue;
    }
    slot.loading = true;
    lk.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<LoadedModel> m;
    std::string error;
    try {
      m = std::make_shared<LoadedModel>(p.loader(slot.spec));
    } catch (const std::exception& e) {
      error = plain_message(e);
    }
    lk.lock();
    slot.loading = false;
    p.cv.notify_all();
    if (!m) throw ApiError(500, "loading the model '" + id + "' failed: " + error, "server_error", "model");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "wgc serve: loaded model %s (%s) in %.2f s\n", id.c_str(), mib(m->bytes).c_str(), s);
    p.loaded += m->bytes;
    slot.model = std::move(m);
    if (p.stopping) slot.model->scheduler->stop_accepting();
  }
}

std::vector<ModelPool::Entry> ModelPool::list() const {
  std::lock_guard lk(impl_->mu);
  std::vector<Entry> out;
  for (const auto& s : impl_->slots) {
    Entry e;
    e.name = s.spec.name;
    e.loaded = bool(s.model);
    e.bytes = s.model ? s.model->bytes : s.spec.estimate_bytes;
    if (s.model) e.info = s.model->info;
    out.push_back(std::move(e));
  }
  return out;
}

bool ModelPool::knows(const std::string& name) const {
  std::lock_guard lk(impl_->mu);
  for (const auto& s : impl_->slots)
    if (s.spec.name == name) return true;
  return false;
}

size_t ModelPool::size() const { return impl_->slots.size(); }

void ModelPool::for_each_loaded(const std::function<void(const std::string&, llm::Scheduler&)>& fn) const {
  std::lock_guard lk(impl_->mu);
  for (const auto& s : impl_->slots)
    if (s.model) fn(s.spec.name, *s.model->scheduler);
}

std::optional<Context> ModelPool::context() const {
  std::lock_guard lk(impl_->mu);
  const auto& s = impl_->slots[0];
  return s.model && s.model->context ? s.model->context() : std::nullopt;
}

void ModelPool::stop_accepting() {
  std::lock_guard lk(impl_->mu);
  impl_->stopping = true;
  for (const auto& s : impl_->slots)
    if (s.model) s.model->scheduler->stop_accepting();
  impl_->cv.notify_all();
}

uint64_t ModelPool::loaded_bytes() const {
  std::lock_guard lk(impl_->mu);
  return impl_->loaded;
}

uint64_t parse_bytes(const std::string& text, const std::string& what) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i > 15) throw Error(what + " expects a byte count like 8G, 512M or 1048576, got '" + text + "'");
  uint64_t v = std::stoull(text.substr(0, i));
  std::string unit = text.substr(i);
  if (unit.size() == 2 && (unit[1] == 'B' || unit[1] == 'b') && unit[1] != unit[0]) unit.pop_back();  // "8GB"
  int shift = 0;
  if (unit.empty())
    shift = 0;
  else if (unit == "K" || unit == "k")
    shift = 10;
  else if (unit == "M" || unit == "m")
    shift = 20;
  else if (unit == "G" || unit == "g")
    shift = 30;
  else if (unit == "T" || unit == "t")
    shift = 40;
  else
    throw Error(what + " expects a byte count like 8G, 512M or 1048576, got '" + text + "'");
  if (shift && v > (UINT64_MAX >> shift)) throw Error(what + ": '" + text + "' is too large");
  return v << shift;
}

}  // namespace wgc::server
