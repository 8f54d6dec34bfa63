// wgc bench-batched: llama-batched-bench for the serving engine (BatchedLlama): for each count B of
// parallel sequences, prefill B prompts of p random tokens (PP, in steps of at most --batch
// tokens, sequences packed), then n decode steps that advance all B sequences by one greedy token
// each (TG; each step's tokens read back and fed to the next). Aggregate tokens/s of both, as a
// table and JSON, and a PNG chart of decode t/s per count. With --draft-model: the scheduler's
// speculative decoding against its plain decode (bench_speculative).
#include "cli/command.h"
#include "cli/llm_backend.h"
#include "cli/llm_flags.h"
#include "io/chart.h"
#include "llm/generate/generator.h"
#include "llm/generate/speculative.h"
#include "llm/model/llama_batched.h"
#include "llm/serve/scheduler.h"
#include "ops/llm/llm_ops.h"
#include "util/error.h"
#include "util/json.h"
#include "util/output_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>

#include <unistd.h>

namespace wgc::cli {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One run: B sequences of p prompt tokens prefilled, then n decode steps.
struct Run {
  double pp_s = 0, tg_s = 0;
  double record_s = 0;  // of tg_s, the host's time in submit() (recording and submitting the steps)
};

struct Bench {
  llm::BatchedLlama& engine;
  int vocab, block;
  bool sync;        // wait for each decode step before recording the next
  bool no_prefill;  // TG over p positions whose K/V were never computed (kernel sweeps: no PP)
  std::mt19937 rng;

  Run run(int B, int p, int n, int batch) {
    std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
    const int per_seq = (p + n + block - 1) / block;
    std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(B)), tables(static_cast<size_t>(B));
    for (int s = 0; s < B; ++s) {
      for (int i = 0; i < p; ++i) prompts[size_t(s)].push_back(tok(rng));
      for (int b = 0; b < per_seq; ++b) tables[size_t(s)].push_back(s * per_seq + b);
    }
    std::vector<int32_t> next(static_cast<size_t>(B));
    Run r;
    // PP: sequences packed into steps of at most `batch` tokens; each one's last chunk asks for
    // its first token.
    auto t0 = Clock::now();
    int s = 0, done = 0;
    if (no_prefill) {
      s = B;
      for (auto& t : next) t = tok(rng);
    }
    while (s < B) {
      std::vector<llm::StepSequence> step;
      std::vector<int> who;
      int room = batch;
      while (s < B && room > 0) {
        const int k = std::min(room, p - done);
        llm::StepSequence q;
        q.tokens = std::span<const int32_t>(prompts[size_t(s)]).subspan(size_t(done), size_t(k));
        q.pos0 = done;
        q.blocks = tables[size_t(s)];
        room -= k;
        done += k;
        if (done == p) {
          q.top_k = 1;
          who.push_back(s);
          ++s;
          done = 0;
        }
        step.push_back(q);
      }
      auto rows = engine.step(step);
      for (size_t i = 0; i < who.size(); ++i) next[size_t(who[i])] = rows[i].top_ids[0];
    }
    r.pp_s = no_prefill ? 0 : std::chrono::duration<double>(Clock::now() - t0).count();
    // TG: n steps of one token per sequence. Pipelined: step t + 1 (its tokens the argmax of step
    // t, copied on the GPU) is recorded and submitted before step t's tokens are read back.
    t0 = Clock::now();
    auto decode_step = [&](int t, bool fed) {
      std::vector<llm::StepSequence> step(static_cast<size_t>(B));
      for (int i = 0; i < B; ++i) {
        auto& q = step[size_t(i)];
        q.tokens = std::span<const int32_t>(&next[size_t(i)], 1);
        q.pos0 = p + t;
        q.blocks = tables[size_t(i)];
        q.top_k = 1;
        if (fed) q.feed_row = i;
      }
      const auto r0 = Clock::now();
      auto h = engine.submit(step);
      r.record_s += std::chrono::duration<double>(Clock::now() - r0).count();
      return h;
    };
    auto take = [&](llm::BatchedLlama::Pending& h) {
      auto rows = engine.collect(h);
      for (int i = 0; i < B; ++i) next[size_t(i)] = rows[size_t(i)].top_ids[0];
    };
    llm::BatchedLlama::Pending inflight = decode_step(0, false);
    for (int t = 1; t < n; ++t) {
      if (sync) take(inflight);
      llm::BatchedLlama::Pending h = decode_step(t, !sync);
      if (!sync) take(inflight);
      inflight = std::move(h);
    }
    take(inflight);
    r.tg_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
  }
};

struct Flags {
  GpuFlags gpu;
  EngineFlags gpus;  // --gpus, --tensor-split
  OutputFlags out;
  std::optional<std::string> model, kernel, tuning, draft_model;
  std::vector<int> parallel{1, 8, 16, 32, 64};
  std::vector<int> draft_tokens;         // --draft-tokens (default: SchedulerOptions' 5)
  std::vector<double> draft_acceptance;  // --draft-acceptance (none: proposals kept by the target's argmax)
  int p = 256, n = 128, repeats = 1, batch = 512, block = 16, split = llm::BatchedOptions{}.split_len;
  uint32_t seed = 1;
  int micro_batches = 0;  // BatchedOptions::micro_batches
  bool no_warmup = false, sync = false, no_prefill = false;
};

// --draft-model: the Scheduler (continuous batching) serving B requests of p random prompt tokens
// and n greedy tokens each (ignore_eos), submitted at once, without the draft and then with it
// for each --draft-tokens K and --draft-acceptance P (random weights agree on nothing: a rate keeps
// each proposal with probability P, SchedulerOptions::draft_acceptance). Decode t/s: the tokens
// after each request's first over the time from the last first token to the end.
int bench_speculative(const Flags& f, const std::string& target_path, int p, int n, int batch, bool warmup,
                      llm::LinearVersion lin) {
  const std::string draft_path = cli::model_path(f.draft_model).string();
  std::vector<int> ks =
      f.draft_tokens.empty() ? std::vector<int>{llm::SchedulerOptions{}.draft_tokens} : f.draft_tokens;
  check_draft_sweep(ks, f.draft_acceptance);
  std::vector<double> rates = f.draft_acceptance.empty() ? std::vector<double>{-1} : f.draft_acceptance;
  if (f.tuning || f.no_prefill || f.sync || f.micro_batches || f.out.png)
    throw UsageError(
        "--draft-model measures the scheduler: not with --tuning, --no-prefill, --sync, --micro-batches, --png");
  f.out.check();
  std::FILE* table = f.out.table();
  LlmBackend be = llm_backend(f.gpu, -1, &f.gpus);
  llm::ModelFile file = llm::open_model(target_path), dfile = llm::open_model(draft_path);
  auto tok = llm::find_tokenizer(file);
  if (!tok) throw Error("wgc bench-batched: " + target_path + " has no tokenizer (the scheduler needs one)");
  auto dtok = llm::find_tokenizer(dfile);
  llm::check_draft(file.config(), &*tok, dfile.config(), dtok ? &*dtok : nullptr, draft_path);
  llm::EngineOptions eo;
  eo.max_ctx = p + n + llm::kMaxDraftTokens + 1;
  eo.max_batch = std::min(batch, eo.max_ctx);
  be.apply(eo);
  llm::LlamaModel model(be.ctx, file, eo), draft(be.ctx, dfile, eo);
  say_engine_choice(model);
  std::mt19937 rng(f.seed);
  std::uniform_int_distribution<int32_t> id(0, int32_t(tok->vocab_size()) - 1);

  struct Measured {
    double tg_tps = 0, acceptance = 0, per_pass = 0;
  };
  // One run of B requests at once on a scheduler with (k > 0) or without the draft.
  auto run = [&](int B, int pp, int nn, int k, double rate) {
    llm::SchedulerOptions so;
    so.parallel = B;
    so.max_queue = B;
    so.prefill_chunk = batch;
    so.kv_block_tokens = f.block;
    so.linear = lin;
    if (k > 0) {
      so.draft = &draft;
      so.draft_tokens = k;
      so.draft_acceptance = rate;
    }
    llm::Scheduler sched(model, *tok, so);
    std::vector<llm::RequestResult> done(static_cast<size_t>(B));
    const auto t0 = Clock::now();
    for (int i = 0; i < B; ++i) {
      llm::Request r;
      for (int t = 0; t < pp; ++t) r.prompt.push_back(id(rng));
      r.max_tokens = nn;
      r.ignore_eos = true;
      r.sampling.temperature = 0;
      sched.submit(
          std::move(r), [](const llm::TokenEvent&) { return true; },
          [&done, i](const llm::RequestResult& res) { done[size_t(i)] = res; });
    }
    sched.drain();
    const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    double first_ms = 0;  // the last request's first token
    int tokens = 0;
    for (const auto& res : done) {
      if (!res.error.empty()) throw Error("wgc bench-batched: a request failed: " + res.error);
      first_ms = std::max(first_ms, res.ttft_ms);
      tokens += res.completion_tokens - 1;
    }
    const llm::SchedulerStats st = sched.stats();
    Measured m;
    m.tg_tps = total_ms > first_ms ? tokens * 1e3 / (total_ms - first_ms) : 0;
    m.acceptance = st.draft_proposed ? double(st.draft_accepted) / double(st.draft_proposed) : 0;
    m.per_pass = st.draft_verifies ? double(st.draft_accepted + st.draft_verifies) / double(st.draft_verifies) : 1;
    return m;
  };
  const auto status = [](const std::string& line) { std::fprintf(stderr, "[bench-batched] %s\n", line.c_str()); };

  std::fprintf(table, "device: %s   model: %s   draft: %s\n", engine_name(model, be).c_str(), target_path.c_str(),
               draft_path.c_str());
  std::fprintf(table, "\n|    B | draft K | accept P |  S_TG t/s | vs plain | kept %% | tokens/pass |\n");
  std::fprintf(table, "|------|---------|----------|-----------|----------|--------|-------------|\n");
  json::Value results = json::Value::array();
  for (int B : f.parallel) {
    if (warmup) {
      status("B " + std::to_string(B) + " warm-up");
      run(B, std::min(p, 8), std::min(n, 4), 0, -1);
      run(B, std::min(p, 8), std::min(n, 4), ks.front(), rates.front());
    }
    double plain = 0;
    std::vector<std::pair<int, double>> configs{{0, -1.0}};
    for (int k : ks)
      for (double a : rates) configs.push_back({k, a});
    for (auto [k, a] : configs) {
      std::vector<double> tps, acc, per;
      for (int r = 0; r < f.repeats; ++r) {
        status("B " + std::to_string(B) + (k ? " draft " + std::to_string(k) : std::string(" plain")) + " run " +
               std::to_string(r + 1));
        Measured m = run(B, p, n, k, a);
        tps.push_back(m.tg_tps);
        acc.push_back(m.acceptance);
        per.push_back(m.per_pass);
      }
      const double t = median(tps);
      if (k == 0) plain = t;
      std::fprintf(table, "| %4d | %7s | %8s | %9.2f | %7.2fx | %6.1f | %11.2f |\n", B,
                   k ? std::to_string(k).c_str() : "-",
                   a < 0 ? (k ? "argmax" : "-") : std::to_string(a).substr(0, 4).c_str(), t, plain > 0 ? t / plain : 0,
                   100 * median(acc), median(per));
      json::Value x = json::Value::object();
      x.set("b", B);
      x.set("draft_tokens", k);
      x.set("draft_acceptance", a);
      x.set("tg_tps", t);
      x.set("speedup", plain > 0 ? t / plain : 0);
      x.set("acceptance", median(acc));
      x.set("tokens_per_pass", median(per));
      results.push_back(x);
    }
  }
  std::fprintf(table,
               "\nB requests of p = %d random prompt tokens and n = %d greedy tokens (ignore_eos) submitted at once "
               "to the scheduler (--parallel B); S_TG: the tokens after each one's first over the time from the last "
               "first token to the end; medians of %d run(s). accept P: each proposal kept with probability P "
               "(random weights agree on nothing), argmax: kept where it is the target's token; tokens/pass: per "
               "verify pass of a sequence (1 + kept).\n",
               p, n, f.repeats);
  if (f.out.json) {
    json::Value doc = json::Value::object();
    doc.set("model", target_path);
    doc.set("draft_model", draft_path);
    doc.set("p", p);
    doc.set("n", n);
    doc.set("results", results);
    f.out.write_json(doc.dump(1));
  }
  return 0;
}

int bench_batched_cmd(const Flags& f) {
  if (!f.model) throw UsageError("--model FILE.gguf (or a Hugging Face folder) is required");
  const auto model_path = std::optional<std::string>(cli::model_path(f.model).string());
  const std::vector<int>& par = f.parallel;
  for (int b : par)
    if (b < 1 || b > 4096) throw UsageError("--parallel expects integers 1..4096, got " + std::to_string(b));
  auto at_least = [](int v, const char* flag, int lo) {
    if (v < lo || v > 1 << 20)
      throw UsageError(std::string(flag) + " expects an integer from " + std::to_string(lo) + " to 1048576, got " +
                       std::to_string(v));
    return v;
  };
  const int p = at_least(f.p, "-p", 1), n = at_least(f.n, "-n", 1);
  const int repeats = at_least(f.repeats, "-r", 1);
  const int batch = at_least(f.batch, "--batch", 1);
  const int block = at_least(f.block, "--block", 1);
  const int at_split = at_least(f.split, "--split", 16);
  if (at_split % 16) throw UsageError("--split must be a multiple of 16");
  const uint32_t seed = f.seed;
  const bool warmup = !f.no_warmup, sync = f.sync, no_prefill = f.no_prefill;
  llm::LinearVersion lin = llm::LinearVersion::Auto;
  if (const auto& k = f.kernel) {
    if (*k == "batched")
      lin = llm::LinearVersion::Batched;
    else if (*k == "batched-q8")
      lin = llm::LinearVersion::BatchedQ8;
    else if (*k == "naive")
      lin = llm::LinearVersion::Naive;
    else if (*k != "auto")
      throw UsageError("--kernel expects auto, batched, batched-q8 or naive, got '" + *k + "'");
  }
  if (f.draft_model) return bench_speculative(f, *model_path, p, n, batch, warmup, lin);
  if (!f.draft_tokens.empty() || !f.draft_acceptance.empty())
    throw UsageError("--draft-tokens and --draft-acceptance need --draft-model");
  // --tuning: kernel knob sets separated by ';' (as llm::split_tuning_sets), each "knob=v,knob=v"
  // and split=N for the attention split: the first for the main run, the others measured after it
  // on the same model, one line each.
  struct TuningSet {
    std::string spec;
    llm::LlmTuning tuning;
    int split = 0;
  };
  std::vector<TuningSet> sets;
  try {
    std::vector<std::string> specs;
    for (std::string rest = f.tuning.value_or("") + ";"; !rest.empty(); rest = rest.substr(rest.find(';') + 1))
      specs.push_back(rest.substr(0, rest.find(';')));
    for (const std::string& spec : specs) {
      if (sets.size() >= 32) throw UsageError("--tuning: at most 32 sets");
      TuningSet set{spec, {}, at_split};
      std::string knobs;
      for (size_t i = 0; i <= spec.size();) {
        const size_t end = std::min(spec.find_first_of(",/", i), spec.size());
        const std::string item = spec.substr(i, end - i);
        if (item.rfind("split=", 0) == 0) {
          char* e = nullptr;
          const long v = std::strtol(item.c_str() + 6, &e, 10);
          if (*e || v < 16 || v % 16 || v > 1 << 20)
            throw UsageError("--tuning: split expects a positive multiple of 16, got '" + item + "'");
          set.split = int(v);
        } else if (!item.empty()) {
          knobs += item + ",";
        }
        i = end + 1;
      }
      llm::apply_tuning(set.tuning, knobs);
      sets.push_back(std::move(set));
    }
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(std::string("--tuning: ") + e.what());
  }
  const llm::LlmTuning tuning = sets[0].tuning;
  const int split = sets[0].split;
  f.out.check();
  std::FILE* table = f.out.table();
  const bool tty = isatty(2);
  auto status = [&](const std::string& s) {
    std::fprintf(stderr, "%s[bench-batched] %s%s", tty ? "\r" : "", s.c_str(), tty ? "          " : "\n");
    std::fflush(stderr);
  };

  LlmBackend be = llm_backend(f.gpu, -1, &f.gpus);
  status("loading " + *model_path);
  llm::ModelFile file = llm::open_model(*model_path);
  llm::EngineOptions eo;
  eo.max_ctx = p + n;
  eo.max_batch = std::min(batch, p + n);
  eo.tuning = std::make_shared<const llm::LlmTuning>(tuning);
  be.apply(eo);
  if (f.tuning && llm::choose_device(be.ctx, file, eo).device != llm::Device::Gpu)
    throw UsageError(
        "--tuning tunes the GPU engine's kernels; this model runs on the CPU engine (--backend gpu or cpu-vulkan "
        "keeps the GPU engine)");
  llm::LlamaModel model(be.ctx, file, eo);
  say_engine_choice(model);
  const bool on_gpu = model.device() == llm::Device::Gpu;
  const std::string device = engine_name(model, be);
  const int max_b = *std::max_element(par.begin(), par.end());
  llm::BatchedOptions bo;
  bo.max_rows = max_b;
  bo.max_tokens = std::max(batch, max_b);
  bo.block_tokens = block;
  bo.blocks = max_b * ((p + n + block - 1) / block);
  bo.linear = lin;
  bo.split_len = split;
  if (f.micro_batches < 0 || f.micro_batches > 1024) throw UsageError("--micro-batches must be 0 to 1024");
  bo.micro_batches = f.micro_batches;
  llm::BatchedLlama engine(model, bo);
  Bench bench{engine, int(model.config().vocab_size), block, sync, no_prefill, std::mt19937(seed)};

  struct Row {
    int b = 0;
    std::vector<double> pp, tg, rec;
  };
  std::vector<Row> rows;
  for (int B : par) {
    Row row;
    row.b = B;
    if (warmup) {
      status("B " + std::to_string(B) + " warm-up");
      bench.run(B, std::min(p, 8), std::min(n, 2), batch);
    }
    for (int r = 0; r < repeats; ++r) {
      status("B " + std::to_string(B) + " run " + std::to_string(r + 1) + "/" + std::to_string(repeats));
      Run run = bench.run(B, p, n, batch);
      row.pp.push_back(run.pp_s);
      row.tg.push_back(run.tg_s);
      row.rec.push_back(run.record_s);
    }
    rows.push_back(row);
  }
  // The other tuning sets: one line per set and B (speeds only).
  std::vector<std::string> sweep;
  const auto sweep_lines = [&](Bench& on, const std::string& label) {
    for (int B : par) {
      status(label + " B " + std::to_string(B));
      if (warmup) on.run(B, std::min(p, 8), std::min(n, 2), batch);
      std::vector<double> pp, tg, rec;
      for (int r = 0; r < repeats; ++r) {
        Run run = on.run(B, p, n, batch);
        pp.push_back(run.pp_s);
        tg.push_back(run.tg_s);
        rec.push_back(run.record_s);
      }
      char line[384];
      std::snprintf(line, sizeof line,
                    "%-34s B %4d: S_PP %9.2f t/s, S_TG %9.2f t/s (%.2f ms per step, %.2f ms of it recording)",
                    label.c_str(), B, no_prefill ? 0.0 : B * p / median(pp), B * n / median(tg), median(tg) * 1e3 / n,
                    median(rec) * 1e3 / n);
      sweep.push_back(line);
    }
  };
  for (const auto& set : std::span(sets).subspan(1)) {
    model.set_tuning(set.tuning);
    llm::BatchedOptions so = bo;
    so.split_len = set.split;
    llm::BatchedLlama other(model, so);
    Bench on{other, int(model.config().vocab_size), block, sync, no_prefill, std::mt19937(seed)};
    sweep_lines(on, set.spec);
  }
  if (tty) std::fprintf(stderr, "\r%60s\r", "");

  std::fprintf(table, "device: %s   model: %s\n", device.c_str(), model_path->c_str());
  std::fprintf(table,
               "KV pool: %d blocks of %d tokens (%.2f GiB, %s, %.1f KiB per token); prefill steps of at most %d "
               "tokens; attention split %d\n",
               bo.blocks, block, double(engine.kv_bytes()) / double(1ull << 30),
               std::string(to_string(eo.cache_type)).c_str(),
               double(engine.kv_bytes()) / (double(bo.blocks) * block) / 1024, batch, split);
  if (on_gpu)
    std::fprintf(
        table,
        "linear kernel: %s; batched kernels: %u lanes per row, at most %u tokens per workgroup (%u in steps of "
        "more than 256 tokens)\n",
        lin == llm::LinearVersion::Naive       ? "naive"
        : lin == llm::LinearVersion::Batched   ? "batched"
        : lin == llm::LinearVersion::BatchedQ8 ? "batched-q8 (8-bit activations for Q4_0/Q8_0)"
                                               : (be.ctx->adapter().is_cpu() ? "auto (naive)" : "auto (batched-q8)"),
        tuning.batched_kl, tuning.batched_tt, tuning.batched_tt_large);
  if (!sets[0].spec.empty()) std::fprintf(table, "tuning: %s\n", sets[0].spec.c_str());
  std::fprintf(
      table,
      "\n|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n");
  std::fprintf(
      table, "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n");
  json::Value results = json::Value::array();
  chart::BarSeries bars{"decode t/s (S_TG)", {}};
  std::vector<std::string> cats;
  for (const auto& r : rows) {
    const double pp_s = median(r.pp), tg_s = median(r.tg), t_s = pp_s + tg_s;
    // --no-prefill: no PP measured (its figures 0)
    const double pp_tps = pp_s > 0 ? r.b * p / pp_s : 0, tg_tps = r.b * n / tg_s,
                 tps = pp_s > 0 ? r.b * (p + n) / t_s : 0;
    std::fprintf(table, "| %5d | %6d | %4d | %6d | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |\n", p, n, r.b,
                 r.b * (p + n), pp_s, pp_tps, tg_s, tg_tps, t_s, tps);
    json::Value o = json::Value::object();
    o.set("parallel", r.b);
    o.set("n_prompt", p);
    o.set("n_gen", n);
    o.set("n_kv", r.b * (p + n));
    o.set("pp_s", pp_s);
    o.set("pp_tps", pp_tps);
    o.set("tg_s", tg_s);
    o.set("tg_tps", tg_tps);
    o.set("tg_ms_per_step", tg_s * 1e3 / n);
    o.set("record_ms_per_step", median(r.rec) * 1e3 / n);
    o.set("total_s", t_s);
    o.set("total_tps", tps);
    json::Value pr = json::Value::array(), tr = json::Value::array();
    for (double v : r.pp) pr.push_back(v);
    for (double v : r.tg) tr.push_back(v);
    o.set("pp_runs_s", pr);
    o.set("tg_runs_s", tr);
    results.push_back(o);
    cats.push_back(std::to_string(r.b));
    bars.values.push_back(tg_tps);
  }
  std::fprintf(table, "\nhost time recording and submitting a decode step (hidden while below the GPU's):");
  for (const auto& r : rows) std::fprintf(table, " B %d %.2f ms;", r.b, median(r.rec) * 1e3 / n);
  std::fprintf(table, "\n");
  if (no_prefill)
    std::fprintf(table,
                 "\n--no-prefill: no PP; TG over p positions whose K/V were never computed (whatever the pool holds).");
  std::fprintf(table,
               "\nPP: prefill of B prompts of p random tokens (each prompt's last chunk picks its first token);\n"
               "TG: n steps each advancing all B sequences by one greedy token (read back; %s);\n"
               "S_PP = B*p/T_PP, S_TG = B*n/T_TG, S = B*(p+n)/(T_PP+T_TG); medians of %d run(s)%s.\n",
               sync ? "the next step recorded after it (--sync)" : "the next step recorded while the GPU runs this one",
               repeats, warmup ? " after a warm-up" : "");
  if (!sweep.empty()) std::fprintf(table, "\nThe other --tuning sets, on the same model:\n");
  for (const auto& l : sweep) std::fprintf(table, "%s\n", l.c_str());
  if (f.out.png)
    chart::write_bar_chart(*f.out.png, "batched decode on " + device, "tokens/s", cats, {bars}, {}, f.out.overwrite());
  if (f.out.json) {
    json::Value doc = json::Value::object();
    doc.set("model", *model_path);
    doc.set("engine", to_string(model.device()));
    doc.set("device", on_gpu ? be.ctx->adapter().device : device);
    doc.set("adapter_type", on_gpu ? be.ctx->adapter().adapter_type : "cpu");
    doc.set("kv_blocks", bo.blocks);
    doc.set("block_tokens", block);
    doc.set("kv_bytes", engine.kv_bytes());
    doc.set("cache_type", std::string(to_string(eo.cache_type)));
    doc.set("batch", batch);
    doc.set("repeats", repeats);
    doc.set("split_len", split);
    doc.set("tuning", f.tuning.value_or(""));
    doc.set("pipelined", !sync);
    doc.set("no_prefill", no_prefill);
    doc.set("batched_kl", tuning.batched_kl);
    doc.set("batched_tt", tuning.batched_tt);
    doc.set("batched_tt_large", tuning.batched_tt_large);
    doc.set("results", results);
    f.out.write_json(doc.dump(1));
  }
  return 0;
}

Register reg{
    {"bench-batched",
     "llama-batched-bench for the serving engine: aggregate prefill and decode tokens/s per count of "
     "parallel sequences",
     [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_text(app, "--model,-m", f->model, "a GGUF file, Hugging Face folder or pulled owner/name[/FILE] (required)")
           ->type_name("MODEL");
       add_numbers(app, "--parallel", f->parallel, "counts of parallel sequences, one test each");
       add_number(app, "-p,--n-prompt", f->p, "prompt tokens per sequence");
       add_number(app, "-n,--n-gen", f->n, "decode steps");
       add_number(app, "-r,--repetitions", f->repeats, "timed runs of each count");
       add_number(app, "--batch", f->batch, "tokens per prefill step");
       add_number(app, "--block", f->block, "tokens per KV-cache block");
       add_number(app, "--split", f->split, "attention split length (a multiple of 16)");
       add_number(app, "--micro-batches", f->micro_batches,
                  "with --gpus: the micro-batches a step's sequences are cut into, pipelined over the GPUs (0: one "
                  "per GPU)");
       app.add_flag("--sync", f->sync, "wait for each decode step before recording the next");
       app.add_flag("--no-prefill", f->no_prefill,
                    "skip PP: decode over p cached positions that were never computed (the same kernels and "
                    "sizes; for kernel sweeps)");
       add_text(app, "--kernel", f->kernel, "linear kernels: auto, batched, batched-q8 or naive");
       add_text(app, "--tuning", f->tuning,
                "kernel knobs knob=v,knob=v (src/ops/llm/tuning.h, e.g. batched_tt=16, and split=N for the attention "
                "split); sets separated by ';': the first for the main run, the others measured after it");
       add_number(app, "--seed", f->seed, "seed of the random prompt tokens");
       add_text(app, "--draft-model,--model-draft", f->draft_model,
                "speculative decoding: the scheduler serving --parallel B requests at once without and with this "
                "draft model (same tokenizer) proposing tokens")
           ->type_name("MODEL");
       add_numbers(app, "--draft-tokens,--draft-max", f->draft_tokens,
                   "with --draft-model: tokens proposed per step and sequence, one test each (default 5)");
       add_numbers(app, "--draft-acceptance", f->draft_acceptance,
                   "with --draft-model: keep each proposal with this probability instead of by the target's argmax "
                   "(random-weight models), one test each");
       app.add_flag("--no-warmup", f->no_warmup, "no untimed warm-up run before each count");
       add_output_flags(app, f->out, "every number as JSON", "a bar chart of decode t/s");
       add_gpu_flags(app, f->gpu);
       add_engine_flags(app, f->gpus);
       return [f] { return bench_batched_cmd(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
