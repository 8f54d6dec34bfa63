// LlamaModel's CPU engine: one sequence on CpuForward, its KV cache one block of max_ctx slots (a
// sliding-window layer's a ring: CpuKvCache);
// prompts longer than max_batch run in chunks; selections (argmax, top-k) on the host.
#include "cpu/llm/cpu_features.h"
#include "llm/model/llama_cpu.h"
#include "llm/model/llama_engine.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <unistd.h>

namespace wgc::llm {
namespace {

// The KV cache of max_ctx positions (each layer's rows: the sliding-window layers' rings) must fit
// the host's memory (as the GPU engine checks the device's limits) before anything of that size is
// allocated.
void check_cpu_context(const CpuWeights& w, int64_t max_ctx, std::span<const int> rows, const std::string& file) {
  uint64_t bytes = 0;
  for (int r : rows) bytes += 2 * uint64_t(r) * uint64_t(w.nkv * w.hd) * 4;
  const uint64_t host = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  if (bytes > host)
    throw Error("wgc: a context of " + std::to_string(max_ctx) + " positions (max_ctx) for " + file +
                ": the KV cache needs " + std::to_string(bytes) + " bytes, more than the host's " +
                std::to_string(host) + " bytes of memory; lower max_ctx");
}

class CpuEngine final : public LlamaEngine {
 public:
  CpuEngine(const ModelFile& f, const EngineOptions& o)
      : w(load_cpu_weights(f, o.rope_theta, o.rope_scaling)),
        pool(std::make_shared<cpu::ThreadPool>(o.threads > 0 ? o.threads : cpu::cpu_features().threads)) {
    check_cpu_cache_type(o.cache_type);
    max_ctx_ = resolve_max_ctx(w->cfg, o);
    max_batch_ = std::max(1, std::min(o.max_batch, max_ctx_));
    layer_rows_ = kv_layer_rows(w->cfg, max_ctx_, max_batch_, o.swa_full);
    check_cpu_context(*w, max_ctx_, layer_rows_, f.path().string());
    fwd.emplace(w, pool, max_batch_, max_ctx_, o.cpu_isa);
    kv.emplace(*w, max_ctx_, layer_rows_);
  }

  Device device() const override { return Device::Cpu; }
  const ModelConfig& config() const override { return w->cfg; }
  uint64_t weight_bytes() const override { return w->bytes; }
  uint64_t kv_bytes() const override { return kv->bytes(); }

  void prefill(std::span<const int32_t> tokens, const std::function<void(int, int)>& progress) override {
    check_tokens(tokens);
    const int total = int(tokens.size());
    for (int done = 0; done < total;) {
      CpuSequence s;
      s.tokens = tokens.subspan(size_t(done), size_t(std::min(max_batch_, total - done)));
      s.pos0 = n_past_;
      s.blocks = std::span(&block0, 1);
      fwd->step(std::span(&s, 1), *kv, max_ctx_, false, out);
      n_past_ += int(s.tokens.size());
      done += int(s.tokens.size());
      if (progress) progress(done, total);
    }
  }

  std::vector<float> logits(std::span<const int32_t> tokens) override {
    run(tokens, nullptr);
    return out;
  }

  std::vector<float> all_logits(std::span<const int32_t> tokens) override {
    std::vector<float> all;
    run(tokens, &all);
    return all;
  }

  std::vector<float> last_hidden(std::span<const int32_t> tokens) override {
    struct Restore {
      CpuForward& f;
      ~Restore() { f.set_output_hidden(false); }
    } restore{*fwd};
    fwd->set_output_hidden(true);
    run(tokens, nullptr);
    return out;
  }

  int32_t greedy(std::span<const int32_t> tokens) override {
    run(tokens, nullptr);
    return argmax();
  }

  TopK top_k(std::span<const int32_t> tokens, int k) override {
    check_top_k(k);
    run(tokens, nullptr);
    std::vector<int32_t> ids(out.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    // Best first; ties: the lower id (as the GPU's top-k).
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return out[size_t(a)] > out[size_t(b)] || (out[size_t(a)] == out[size_t(b)] && a < b);
    });
    TopK r;
    for (int i = 0; i < k; ++i) {
      r.ids.push_back(ids[size_t(i)]);
      r.logits.push_back(out[size_t(ids[size_t(i)])]);
    }
    return r;
  }

  DecodeStats decode_greedy(int32_t first, int max_steps, const std::function<bool(int32_t)>& on_token) override {
    using clock = std::chrono::steady_clock;
    DecodeStats st;
    check_tokens(std::span(&first, 1));
    const int steps = std::min(max_steps, max_ctx_ - n_past_);
    int32_t token = first;
    bool go = true;
    while (go && st.tokens < steps) {
      const auto t0 = clock::now();
      run(std::span(&token, 1), nullptr);
      token = argmax();
      st.record_ms += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      ++st.recorded;
      ++st.tokens;
      go = on_token(token);
    }
    return st;
  }

  std::shared_ptr<const CpuWeights> w;
  std::shared_ptr<cpu::ThreadPool> pool;

 private:
  // Runs tokens at n_past() .. in chunks of max_batch; `out` gets the last token's logits (all:
  // every token's are appended there too).
  void run(std::span<const int32_t> tokens, std::vector<float>* all) {
    check_tokens(tokens);
    while (!tokens.empty()) {
      const auto chunk = tokens.first(std::min(tokens.size(), size_t(max_batch_)));
      CpuSequence s;
      s.tokens = chunk;
      s.pos0 = n_past_;
      s.blocks = std::span(&block0, 1);
      s.logits = chunk.size() == tokens.size();
      fwd->step(std::span(&s, 1), *kv, max_ctx_, all != nullptr, out);
      if (all) all->insert(all->end(), out.begin(), out.end());
      n_past_ += int(chunk.size());
      tokens = tokens.subspan(chunk.size());
    }
    if (all) out.erase(out.begin(), out.end() - std::ptrdiff_t(w->vocab));  // the last row
  }

  // The first index of the largest logit.
  int32_t argmax() const { return int32_t(std::max_element(out.begin(), out.end()) - out.begin()); }

  std::optional<CpuForward> fwd;
  std::optional<CpuKvCache> kv;
  std::vector<float> out;
  const int32_t block0 = 0;
};

CpuEngine* cpu_engine(LlamaEngine& e) { return dynamic_cast<CpuEngine*>(&e); }

}  // namespace

std::unique_ptr<LlamaEngine> make_cpu_engine(const ModelFile& file, const EngineOptions& options) {
  return std::make_unique<CpuEngine>(file, options);
}

int LlamaModel::threads() const {
  const CpuEngine* c = cpu_engine(*impl_);
  return c ? c->pool->size() : 0;
}

std::shared_ptr<const CpuWeights> LlamaModel::cpu_weights() const {
  if (CpuEngine* c = cpu_engine(*impl_)) return c->w;
  throw not_on_this_engine("the CPU weights", impl_->device());
}

std::shared_ptr<cpu::ThreadPool> LlamaModel::cpu_threads() const {
  if (CpuEngine* c = cpu_engine(*impl_)) return c->pool;
  throw not_on_this_engine("the CPU threads", impl_->device());
}

}  // namespace wgc::llm
