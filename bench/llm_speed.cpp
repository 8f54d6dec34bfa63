#include "bench/llm_speed.h"

#include "bench/bench.h"
#include "cpu/llm/cpu_features.h"
#include "llm/formats/gguf.h"
#include "llm/generate/generator.h"
#include "llm/model/layer_split.h"
#include "util/error.h"
#include "util/format.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

namespace wgc::bench {

namespace {

using Clock = std::chrono::steady_clock;

// A warm-up repeats its test until this much time has passed: one short run (16 tokens of a 1B
// model take ~15 ms) leaves the GPU's clocks low, and the first timed run then reads slow.
constexpr double kWarmupSeconds = 1.0;

// Runs `once`, then again until kWarmupSeconds have passed since that first run ended. The first
// run of a test pays for what its path does once (pipelines compiled, buffers made and touched)
// while the GPU idles, and could take the whole second: the 1B Q4_0 pp512's first timed run read
// 5,913 t/s and its second 22,962 when the clock counted it (session 8's final run).
template <class F>
void warm_up(F&& once) {
  once();
  auto t0 = Clock::now();
  do once();
  while (std::chrono::duration<double>(Clock::now() - t0).count() < kWarmupSeconds);
}

// "8B" / "494M" style size label.
std::string size_label(int64_t params) {
  double p = double(params);
  if (p >= 1e9) return format_number("%.0fB", std::round(p / 1e9));
  if (p >= 1e7) return format_number("%.0fM", std::round(p / 1e6));
  return format_number("%.1fM", p / 1e6);
}

// The type most of the weight bytes are in ("F16", "Q8_0", ...).
std::string main_type(const llm::ModelFile& f) {
  std::map<std::string, uint64_t> bytes;
  for (const auto& t : f.tensors()) bytes[std::string(llm::to_string(t.type))] += t.data.size();
  std::string best;
  uint64_t most = 0;
  for (auto& [name, n] : bytes)
    if (n > most) {
      most = n;
      best = name;
    }
  return best;
}

// Back to the cache holding `context` alone: a rewind, or where a sliding-window ring no longer
// holds what that needs (LlamaModel::can_rewind: a run longer than a prompt step), the context
// run again. Untimed: callers do it before the clock starts.
void back_to(llm::LlamaModel& model, const std::vector<int32_t>& context) {
  if (model.can_rewind(int(context.size()))) {
    model.rewind(int(context.size()));
    return;
  }
  model.rewind(0);
  model.prefill(context);
}

// The tg test of n tokens from `first` after `context` (the cache's depth) with speculative
// decoding: rounds of the draft's proposals verified in one target pass each (the draft's cache
// primed with the context before the clock starts, as the target's is).
LlmSpeedTest speculative_test(llm::LlamaModel& model, llm::SpeculativeDecoder& spec,
                              const std::vector<int32_t>& context, int32_t first, int n, const std::string& at,
                              const std::string& set, const LlmSpeedPlan& plan,
                              const std::function<void(const std::string&)>& status) {
  LlmSpeedTest t;
  const int k = spec.options().draft_tokens;
  t.name = "tg" + std::to_string(n) + " draft" + std::to_string(k) +
           (spec.options().forced_acceptance >= 0 ? format_number(" a%.2f", spec.options().forced_acceptance) : "") +
           at;
  t.n_gen = n;
  t.depth = int(context.size());
  t.tuning = set;
  t.draft_tokens = k;
  t.forced_acceptance = spec.options().forced_acceptance;
  std::vector<int32_t> cached;
  auto decode = [&] {
    back_to(model, context);
    spec.prime(context);
    cached = context;
    int32_t next = first;
    for (int made = 0; made < n;) {
      const std::vector<int32_t> got = spec.step(model, cached, next, std::min(k, n - made - 1));
      for (int32_t id : got) {
        cached.push_back(next);
        next = id;
        if (++made == n) break;
      }
    }
    return next;
  };
  if (plan.warmup) {
    status(t.name + " warm-up");
    warm_up(decode);
  }
  spec.reset_stats();
  double seconds = 0;
  for (int i = 0; i < plan.repeats; ++i) {
    status(t.name + " run " + std::to_string(i + 1) + "/" + std::to_string(plan.repeats));
    auto t0 = Clock::now();
    const int32_t last = decode();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (last < 0 || last >= model.config().vocab_size)
      throw Error("wgc bench-llm: " + t.name + ": token id " + std::to_string(last));
    seconds += s;
    t.seconds.push_back(s);
    t.tps.push_back(double(n) / s);
  }
  const llm::SpeculativeStats& st = spec.stats();
  t.acceptance = st.acceptance();
  t.tokens_per_pass = st.steps ? double(n) * plan.repeats / st.steps : 0;
  t.draft_share = seconds > 0 ? st.draft_ms / (seconds * 1e3) : 0;
  return t;
}

}  // namespace

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  for (double x : v) s.mean += x;
  s.mean /= double(n);
  if (n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / double(n - 1));
  }
  return s;
}

LlmSpeedResult run_llm_speed(const std::optional<Context>& ctx, const LlmSpeedPlan& plan,
                             const std::function<void(const std::string&)>& status_fn) {
  auto status = [&](const std::string& s) {
    if (status_fn) status_fn(s);
  };
  std::vector<int> pp = plan.prompt_sizes, tg = plan.generate_sizes;
  pp.erase(std::remove(pp.begin(), pp.end(), 0), pp.end());
  tg.erase(std::remove(tg.begin(), tg.end(), 0), tg.end());
  if (pp.empty() && tg.empty()) throw Error("wgc bench-llm: nothing to run (no prompt or generation sizes)");
  std::vector<int> depths = plan.depths.empty() ? std::vector<int>{0} : plan.depths;
  for (int d : depths)
    if (d < 0) throw Error("wgc bench-llm: depth " + std::to_string(d) + " is negative");
  const int max_d = *std::max_element(depths.begin(), depths.end());
  std::vector<std::string> sets = plan.tuning_sets.empty() ? std::vector<std::string>{""} : plan.tuning_sets;
  for (const auto& set : sets) {
    llm::LlmTuning check = plan.tuning;
    llm::apply_tuning(check, set);  // errors before the model loads
  }

  LlmSpeedResult r;
  status("loading " + plan.model);
  llm::ModelFile file = llm::open_model(plan.model);
  const llm::ModelConfig& cfg = file.config();
  int max_p = pp.empty() ? 0 : *std::max_element(pp.begin(), pp.end());
  int max_n = tg.empty() ? 0 : *std::max_element(tg.begin(), tg.end());
  llm::EngineOptions eo;
  eo.max_ctx = max_d + std::max({max_p, max_n, 1});
  eo.q8_activations = plan.q8_activations;
  eo.max_batch = plan.batch;
  eo.decode_ahead = plan.decode_ahead;
  eo.tuning = std::make_shared<const llm::LlmTuning>(plan.tuning);
  eo.device = plan.device;
  eo.threads = plan.threads;
  eo.split_gpus = plan.split_gpus;
  eo.tensor_split = plan.tensor_split;
  eo.cache_type = plan.cache_type;
  eo.swa_full = plan.swa_full;
  const llm::DeviceChoice choice = llm::choose_device(ctx, file, eo);
  eo.device = r.engine = choice.device;
  r.engine_reason = choice.reason;
  const bool gpu = choice.device == llm::Device::Gpu;
  if (gpu) r.adapter = ctx->adapter();
  // The bandwidth to compare decode with: given, else on the GPU measured (a large copy kernel)
  // before the model takes the memory.
  if (plan.bandwidth_gbs > 0) {
    r.bandwidth = plan.bandwidth_gbs * 1e9;
    r.bandwidth_source = "given";
  } else if (plan.bandwidth_gbs < 0 && gpu) {
    status("measuring the copy bandwidth");
    r.bandwidth = measured_bandwidth(*ctx, Options{});
    r.bandwidth_source = "measured";
  } else {
    r.bandwidth_source = "none";
  }

  status(std::string("starting the ") + (gpu ? "GPU" : "CPU") + " engine");
  llm::LlamaModel model(ctx, file, eo);
  // The draft: checked against the target (vocabulary, tokenizer) before it loads, on the same
  // engine with the same options.
  std::optional<llm::ModelFile> draft_file;
  std::optional<llm::LlamaModel> draft;
  if (!plan.draft_model.empty()) {
    if (tg.empty()) throw Error("wgc bench-llm: a draft model needs decode tests (-n)");
    status("loading the draft " + plan.draft_model);
    draft_file.emplace(llm::open_model(plan.draft_model));
    const auto tt = llm::find_tokenizer(file), dt = llm::find_tokenizer(*draft_file);
    llm::check_draft(cfg, tt ? &*tt : nullptr, draft_file->config(), dt ? &*dt : nullptr, plan.draft_model);
    llm::EngineOptions deo = eo;
    deo.max_ctx = model.max_ctx();
    draft.emplace(ctx, *draft_file, deo);
    int64_t draft_params = 0;
    for (const auto& t : draft_file->tensors()) draft_params += t.numel();
    r.draft_name = std::string(llm::to_string(draft_file->config().architecture)) + " " + size_label(draft_params) +
                   " " + main_type(*draft_file);
  }
  r.threads = model.threads();
  r.device = gpu ? r.adapter.device : llm::cpu::describe_cpu(r.threads);
  if (!plan.split_gpus.empty()) {
    std::string counts;
    for (const llm::ModelStage& s : model.stages())
      counts += (counts.empty() ? "" : "+") + std::to_string(s.layers.count);
    r.device += " x " + std::to_string(plan.split_gpus.size() + 1) + " (layers " + counts + ")";
  }

  for (const auto& t : file.tensors()) r.params += t.numel();
  r.weight_bytes = model.weight_bytes();
  r.kv_bytes = model.kv_bytes();
  r.kv_fixed = model.kv_footprint().fixed;
  r.kv_per_token = model.kv_footprint().per_token;
  // Decode reads every weight once per token, except the rows of an untied embedding table it does
  // not look up (only the output projection reads a whole vocab x hidden matrix).
  r.bytes_per_token = r.weight_bytes;
  if (!cfg.tie_word_embeddings)
    if (const auto* e = file.find("model.embed_tokens.weight"); e && e->data.size() < r.weight_bytes)
      r.bytes_per_token -= e->data.size();
  std::string label;
  if (const auto* gg = file.gguf()) label = gg->get_string("general.size_label");
  if (label.empty() || label == "tiny") label = size_label(r.params);  // wgc's test shape: its size
  r.architecture = std::string(llm::to_string(cfg.architecture));
  r.type = main_type(file);
  r.name = r.architecture + " " + label + " " + r.type;
  r.file_bytes = file.total_bytes();
  r.max_ctx = model.max_ctx();

  std::mt19937 rng(plan.seed);
  std::uniform_int_distribution<int32_t> tok(0, int32_t(cfg.vocab_size - 1));
  auto random_tokens = [&](int n) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& t : v) t = tok(rng);
    return v;
  };
  auto run_label = [&](const std::string& test, int i) {
    return test + " run " + std::to_string(i + 1) + "/" + std::to_string(plan.repeats);
  };

  for (const auto& set : sets)
    for (int depth : depths) {
      llm::LlmTuning tuning = plan.tuning;
      llm::apply_tuning(tuning, set);
      model.set_tuning(tuning);
      // llama-bench's -d: `depth` tokens in the cache before each test; prefilled once (untimed),
      // each run rewinds to it.
      const std::string at = (depth ? " @ d" + std::to_string(depth) : "") + (sets.size() > 1 ? " [" + set + "]" : "");
      model.rewind(0);
      std::vector<int32_t> context;  // what fills the cache to `depth` (the draft's too)
      if (depth) {
        status("filling the cache to depth " + std::to_string(depth));
        context = random_tokens(depth);
        (void)model.logits(context);
      }
      for (int p : pp) {
        LlmSpeedTest t;
        t.name = "pp" + std::to_string(p) + at;
        t.n_prompt = p;
        t.depth = depth;
        t.tuning = set;
        auto tokens = random_tokens(p);
        if (plan.warmup) {
          status(t.name + " warm-up");
          warm_up([&] {
            back_to(model, context);
            (void)model.logits(tokens);
          });
        }
        for (int i = 0; i < plan.repeats; ++i) {
          status(run_label(t.name, i));
          back_to(model, context);
          auto t0 = Clock::now();
          auto logits = model.logits(tokens);
          double s = std::chrono::duration<double>(Clock::now() - t0).count();
          if (logits.empty() || !std::isfinite(logits[0]))
            throw Error("wgc bench-llm: " + t.name + ": non-finite logits");
          t.seconds.push_back(s);
          t.tps.push_back(double(p) / s);
        }
        r.tests.push_back(std::move(t));
      }
      for (int n : tg) {
        LlmSpeedTest t;
        t.name = "tg" + std::to_string(n) + at;
        t.n_gen = n;
        t.depth = depth;
        t.tuning = set;
        int32_t first = random_tokens(1)[0];
        llm::DecodeStats ds;
        auto decode = [&](int steps) {  // after back_to(model, context)
          int32_t id = first;
          ds = model.decode_greedy(first, steps, [&](int32_t next) {
            id = next;
            return true;
          });
          return id;
        };
        if (plan.warmup) {
          status(t.name + " warm-up");
          warm_up([&] {
            back_to(model, context);
            decode(n);
          });
        }
        for (int i = 0; i < plan.repeats; ++i) {
          status(run_label(t.name, i));
          back_to(model, context);
          auto t0 = Clock::now();
          int32_t last = decode(n);
          double s = std::chrono::duration<double>(Clock::now() - t0).count();
          if (last < 0 || last >= cfg.vocab_size)
            throw Error("wgc bench-llm: " + t.name + ": token id " + std::to_string(last));
          t.seconds.push_back(s);
          t.tps.push_back(double(n) / s);
          if (gpu) {  // the CPU engine records and waits for nothing
            t.host_ms.push_back(ds.record_ms / std::max(1, ds.recorded));
            t.wait_ms.push_back(ds.wait_ms / std::max(1, ds.tokens));
          }
        }
        r.tests.push_back(std::move(t));
        if (draft) {
          const std::vector<double> rates =
              plan.draft_acceptance.empty() ? std::vector<double>{-1} : plan.draft_acceptance;
          for (int k : plan.draft_tokens)
            for (double rate : rates) {
              llm::SpeculativeOptions so;
              so.draft_tokens = k;
              so.forced_acceptance = rate;
              so.seed = plan.seed;
              llm::SpeculativeDecoder spec(*draft, so);
              r.tests.push_back(speculative_test(model, spec, context, first, n, at, set, plan, status));
            }
        }
      }
    }
  if (plan.profile) {
    status("profiling one decode step");
    llm::LlmTuning tuning = plan.tuning;  // under the last tuning set (the one measured last)
    if (!plan.tuning_sets.empty()) llm::apply_tuning(tuning, plan.tuning_sets.back());
    model.set_tuning(tuning);
    model.rewind(0);
    if (max_d > 0) {  // at the largest depth asked for
      status("filling the cache to depth " + std::to_string(max_d) + " for the profile");
      (void)model.logits(random_tokens(max_d));
    }
    std::map<std::string, KernelTime> by;
    for (auto& d : model.profile_decode_step(random_tokens(1)[0])) {
      auto& k = by[d.label];
      k.kernel = d.label;
      k.dispatches++;
      k.ms += d.ms;
      r.profile_ms += d.ms;
    }
    for (auto& entry : by) r.profile.push_back(entry.second);
    std::sort(r.profile.begin(), r.profile.end(), [](auto& x, auto& y) { return x.ms > y.ms; });
  }
  for (auto& t : r.tests) {
    t.t = stats(t.tps);
    if (t.n_gen > 0 && t.draft_tokens == 0) {
      t.gbs = double(r.bytes_per_token) * t.t.median / 1e9;
      if (r.bandwidth > 0) t.bw_frac = t.gbs * 1e9 / r.bandwidth;
    }
  }
  return r;
}

}  // namespace wgc::bench
