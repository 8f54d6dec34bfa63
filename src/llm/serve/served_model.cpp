#include "llm/serve/served_model.h"

namespace wgc::llm {

ServedModel::ServedModel(const ModelFile& file, std::optional<Context> ctx, EngineOptions options)
    : file_(file), options_(options), ctx_(ctx), model_(std::make_unique<LlamaModel>(std::move(ctx), file, options)) {
  options_.progress = false;  // a rebuild draws no progress bar into the server's log
  if (ctx_) ctx_options_ = ctx_->options();
}

ServedModel::~ServedModel() = default;

std::optional<Context> ServedModel::context() const {
  std::lock_guard lock(mu_);
  return ctx_;
}

LlamaModel& ServedModel::rebuild() {
  if (!ctx_options_) throw Error("wgc: the CPU engine has no device to rebuild");
  // The old model's buffers go first (on a lost device their memory is gone anyway), then the
  // context, so that the new one does not wait beside them.
  model_.reset();
  {
    std::lock_guard lock(mu_);
    ctx_.reset();
  }
  // A layer split's other devices too (one lost device loses the model's chain).
  for (Context& c : options_.split_gpus) c = Context(ContextOptions(c.options()));
  Context fresh(*ctx_options_);
  model_ = std::make_unique<LlamaModel>(fresh, file_, options_);
  std::lock_guard lock(mu_);
  ctx_ = fresh;
  return *model_;
}

DeviceRecovery ServedModel::recovery(std::function<void(const std::string&)> log) {
  if (model_->device() != Device::Gpu) return {};
  DeviceRecovery r;
  r.lost = [this] {
    auto c = context();
    if (c && c->lost()) return true;
    for (const Context& g : options_.split_gpus)  // read by the worker only, as rebuild() writes them
      if (g.lost()) return true;
    return false;
  };
  r.rebuild = [this]() -> LlamaModel& { return rebuild(); };
  r.log = std::move(log);
  return r;
}

}  // namespace wgc::llm
