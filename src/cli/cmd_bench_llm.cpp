// wgc bench-llm: llama-bench's pp/tg tests for LlamaModel: prefill of p random tokens and n greedy
// decode steps, t/s as the median (± standard deviation) of repeats; decode also as weight bytes
// read per second and as a fraction of the memory bandwidth. A table, and JSON with every number.
#include "bench/bench.h"
#include "cli/command.h"
#include "cli/llm_backend.h"
#include "cpu/llm/cpu_features.h"
#include "io/chart.h"
#include "llm/formats/gguf.h"
#include "llm/model/llama.h"
#include "util/error.h"
#include "util/json.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include <unistd.h>

namespace wgc::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

struct Stats {
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
};

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
    s.stddev = std::sqrt(ss / double(n - 1));  // sample standard deviation, as llama-bench
  }
  return s;
}

struct Test {
  std::string name;  // "pp512", "tg128"
  int n_prompt = 0, n_gen = 0;
  std::vector<double> seconds;  // per repeat
  std::vector<double> tps;
  Stats t;
  double gbs = -1;              // tg: weight bytes read per second / 1e9
  double bw_frac = -1;          // tg: gbs / bandwidth
  std::vector<double> host_ms;  // tg: host time recording a step, per token, per repeat
};

// "8B" / "494M" style size label, "1.24 B" / "494.03 M" parameter counts, "2.30 GiB" sizes.
std::string size_label(int64_t params) {
  double p = double(params);
  if (p >= 1e9) return fmt("%.0fB", std::round(p / 1e9));
  if (p >= 1e7) return fmt("%.0fM", std::round(p / 1e6));
  return fmt("%.1fM", p / 1e6);
}
std::string params_str(int64_t params) {
  double p = double(params);
  return p >= 1e9 ? fmt("%.2f B", p / 1e9) : fmt("%.2f M", p / 1e6);
}
std::string gib_str(uint64_t bytes) {
  double b = double(bytes);
  return b >= double(1ull << 30) ? fmt("%.2f GiB", b / double(1ull << 30)) : fmt("%.2f MiB", b / double(1ull << 20));
}
std::string gb_str(uint64_t bytes) {
  double b = double(bytes);
  return b >= 1e9 ? fmt("%.2f GB", b / 1e9) : b >= 1e6 ? fmt("%.2f MB", b / 1e6) : fmt("%.1f KB", b / 1e3);
}

// A Markdown table (as llama-bench prints): columns sized to their widest cell, `right` aligned.
void print_table(const std::vector<std::string>& head, const std::vector<bool>& right,
                 const std::vector<std::vector<std::string>>& rows) {
  // Display width: count UTF-8 lead bytes only (the table has "±").
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    w[c] = width(head[c]);
    for (const auto& r : rows) w[c] = std::max(w[c], width(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string pad(w[c] - width(cells[c]), ' ');
      out += ' ';
      if (right[c]) out += pad;
      out += cells[c];
      if (!right[c]) out += pad;
      out += " |";
    }
    std::printf("%s\n", out.c_str());
  };
  line(head);
  std::string sep = "|";
  for (size_t c = 0; c < head.size(); ++c) {
    sep += ' ';
    sep.append(w[c] - (right[c] ? 1 : 0), '-');
    if (right[c]) sep += ':';
    sep += " |";
  }
  std::printf("%s\n", sep.c_str());
  for (const auto& r : rows) line(r);
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

json::Value number_array(const std::vector<double>& v) {
  json::Value a = json::Value::array();
  for (double x : v) a.push_back(x);
  return a;
}

std::vector<int> int_list(Args& a, const char* name, int def) {
  auto items = a.list(name);
  std::vector<int> out;
  if (items.empty()) out.push_back(def);
  for (auto& s : items) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || v < 0 || v > 1 << 20)
      throw Error("wgc bench-llm: " + std::string(name) + " expects non-negative integers, got '" + s + "'");
    out.push_back(int(v));
  }
  return out;
}

// --matmul's names of the prefill kernels (LlmTuning::matmul); "auto" is the default, not an option.
constexpr std::pair<const char*, llm::LinearVersion> kPrefillKernels[] = {{"auto", llm::LinearVersion::Auto},
                                                                          {"naive", llm::LinearVersion::Naive},
                                                                          {"tiled", llm::LinearVersion::Shared},
                                                                          {"regtile", llm::LinearVersion::RegTile}};

int bench_llm_cmd(Args& a) {
  auto g = gpu_flags(a);
  auto model_path = a.option("--model");
  if (!model_path) model_path = a.option("-m");
  std::vector<int> pp = int_list(a, "-p", 512), tg = int_list(a, "-n", 128);
  int repeats = static_cast<int>(a.number_or("-r", a.number_or("--repetitions", 5)));
  auto json = a.option("--json");
  auto png = a.option("--png");
  auto bw_opt = a.option("--bandwidth");
  int batch = static_cast<int>(a.number_or("--batch", 512));
  auto seed = static_cast<uint32_t>(a.number_or("--seed", 1));
  bool warmup = !a.flag("--no-warmup");
  int ahead = static_cast<int>(a.number_or("--decode-ahead", llm::EngineOptions{}.decode_ahead));
  bool profile = a.flag("--profile");
  int threads = static_cast<int>(a.number_or("--threads", 0));
  llm::LlmTuning tuning;
  if (auto mv = a.option("--matvec")) {  // WG,TPR,UNROLL,ROWS (or WGxTPRxUNROLLxROWS)
    unsigned v[4];
    char tail;
    std::string m = *mv;
    std::replace(m.begin(), m.end(), 'x', ',');
    if (std::sscanf(m.c_str(), "%u,%u,%u,%u%c", &v[0], &v[1], &v[2], &v[3], &tail) != 4)
      throw Error("wgc bench-llm: --matvec expects WG,TPR,UNROLL,ROWS (e.g. 256,32,2,1), got '" + *mv + "'");
    tuning.matvec_wg = v[0];
    tuning.matvec_tpr = v[1];
    tuning.matvec_unroll = v[2];
    tuning.matvec_rows = v[3];
  }
  if (auto mt = a.option("--matmul-tile")) {  // BMxBNxBK of the register-tiled prefill matmul
    unsigned bm = 0, bn = 0, bk = 0;
    char tail;
    if (std::sscanf(mt->c_str(), "%ux%ux%u%c", &bm, &bn, &bk, &tail) != 3)
      throw Error("wgc bench-llm: --matmul-tile expects BMxBNxBK (e.g. 64x128x16), got '" + *mt + "'");
    tuning.matmul_bm = bm;
    tuning.matmul_bn = bn;
    tuning.matmul_bk = bk;
  }
  if (auto mm = a.option("--matmul")) {  // the prefill kernel
    auto k = std::find_if(std::begin(kPrefillKernels) + 1, std::end(kPrefillKernels),
                          [&](const auto& e) { return *mm == e.first; });
    if (k == std::end(kPrefillKernels))
      throw Error("wgc bench-llm: --matmul expects naive, tiled or regtile, got '" + *mm + "'");
    tuning.matmul = k->second;
  }
  a.done();
  if (ahead < 1) throw Error("wgc bench-llm: --decode-ahead must be at least 1");
  if (!model_path) throw Error("wgc bench-llm: --model FILE.gguf (or a Hugging Face folder) is required");
  if (repeats < 1) throw Error("wgc bench-llm: -r must be at least 1");
  if (batch < 1) throw Error("wgc bench-llm: --batch must be at least 1");
  if (threads < 0 || threads > 4096) throw Error("wgc bench-llm: --threads must be 0 (every processor) to 4096");
  pp.erase(std::remove(pp.begin(), pp.end(), 0), pp.end());
  tg.erase(std::remove(tg.begin(), tg.end(), 0), tg.end());
  if (pp.empty() && tg.empty()) throw Error("wgc bench-llm: nothing to run (-p 0 and -n 0)");

  const bool tty = isatty(2);
  auto status = [&](const std::string& s) {
    std::fprintf(stderr, "%s[bench-llm] %s%s", tty ? "\r" : "", s.c_str(), tty ? "          " : "\n");
    std::fflush(stderr);
  };

  LlmBackend be = llm_backend(g);
  status("loading " + *model_path);
  llm::ModelFile file = llm::open_model(*model_path);
  const llm::ModelConfig& cfg = file.config();
  int max_p = pp.empty() ? 0 : *std::max_element(pp.begin(), pp.end());
  int max_n = tg.empty() ? 0 : *std::max_element(tg.begin(), tg.end());
  llm::EngineOptions eo;
  eo.max_ctx = std::max({max_p, max_n, 1});
  eo.max_batch = batch;
  eo.decode_ahead = ahead;
  eo.tuning = tuning;
  eo.threads = threads;
  eo.device = be.device;
  const llm::DeviceChoice engine = llm::choose_device(be.ctx, file, eo);
  eo.device = engine.device;
  const bool on_gpu = engine.device == llm::Device::Gpu;

  // The bandwidth to compare decode with: given, else on the GPU measured (a large copy kernel),
  // before the model takes the memory.
  double bw = -1;  // bytes/s; <= 0: none
  std::string bw_source = "none";
  if (bw_opt) {
    char* end = nullptr;
    double v = std::strtod(bw_opt->c_str(), &end);
    if (bw_opt->empty() || *end || v < 0) throw Error("wgc bench-llm: --bandwidth expects GB/s, got '" + *bw_opt + "'");
    if (v > 0) {
      bw = v * 1e9;
      bw_source = "given";
    }
  } else if (on_gpu) {
    status("measuring the copy bandwidth");
    bw = bench::measured_bandwidth(*be.ctx, bench::Options{});
    bw_source = "measured";
  }

  status("starting the " + std::string(on_gpu ? "GPU" : "CPU") + " engine");
  llm::LlamaModel model(be.ctx, file, eo);
  if (!engine.reason.empty()) std::fprintf(stderr, "%swgc: %s\n", tty ? "\n" : "", engine.reason.c_str());

  int64_t params = 0;
  for (const auto& t : file.tensors()) params += t.numel();
  const uint64_t weight_bytes = model.weight_bytes();
  // Decode reads every weight once per token, except the rows of an untied embedding table it does
  // not look up (only the output projection reads a whole vocab x hidden matrix).
  uint64_t bytes_per_token = weight_bytes;
  if (!cfg.tie_word_embeddings)
    if (const auto* e = file.find("model.embed_tokens.weight"); e && e->data.size() < weight_bytes)
      bytes_per_token -= e->data.size();

  std::string label;
  if (const auto* gg = file.gguf()) label = gg->get_string("general.size_label");
  if (label.empty() || label == "tiny") label = size_label(params);  // wgc's test shape: its size
  const std::string type = main_type(file);
  const std::string name = std::string(llm::to_string(cfg.architecture)) + " " + label + " " + type;
  const std::string backend =
      on_gpu ? "WebGPU " + be.ctx->adapter().device : "CPU " + std::to_string(model.threads()) + " threads";

  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, int32_t(cfg.vocab_size - 1));
  auto random_tokens = [&](int n) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& t : v) t = tok(rng);
    return v;
  };

  std::vector<Test> tests;
  for (int p : pp) {
    Test t;
    t.name = "pp" + std::to_string(p);
    t.n_prompt = p;
    auto tokens = random_tokens(p);
    if (warmup) {
      status(t.name + " warm-up");
      model.rewind(0);
      (void)model.logits(tokens);
    }
    for (int r = 0; r < repeats; ++r) {
      status(t.name + " run " + std::to_string(r + 1) + "/" + std::to_string(repeats));
      model.rewind(0);
      auto t0 = Clock::now();
      auto logits = model.logits(tokens);
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (logits.empty() || !std::isfinite(logits[0])) throw Error("wgc bench-llm: " + t.name + ": non-finite logits");
      t.seconds.push_back(s);
      t.tps.push_back(double(p) / s);
    }
    tests.push_back(std::move(t));
  }
  for (int n : tg) {
    Test t;
    t.name = "tg" + std::to_string(n);
    t.n_gen = n;
    int32_t first = random_tokens(1)[0];
    llm::DecodeStats ds;
    auto decode = [&](int steps) {
      model.rewind(0);
      int32_t id = first;
      ds = model.decode_greedy(first, steps, [&](int32_t next) {
        id = next;
        return true;
      });
      return id;
    };
    if (warmup) {
      status(t.name + " warm-up");
      decode(std::min(n, 16));
    }
    for (int r = 0; r < repeats; ++r) {
      status(t.name + " run " + std::to_string(r + 1) + "/" + std::to_string(repeats));
      auto t0 = Clock::now();
      int32_t last = decode(n);
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (last < 0 || last >= cfg.vocab_size)
        throw Error("wgc bench-llm: " + t.name + ": token id " + std::to_string(last));
      t.seconds.push_back(s);
      t.tps.push_back(double(n) / s);
      if (on_gpu) t.host_ms.push_back(ds.record_ms / std::max(1, ds.recorded));
    }
    tests.push_back(std::move(t));
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> prof;  // label -> (count, ms)
  double prof_total = 0;
  if (profile) {
    status("profiling one decode step");
    model.rewind(0);
    std::map<std::string, std::pair<int, double>> by;
    for (auto& d : model.profile_decode_step(random_tokens(1)[0])) {
      by[d.label].first++;
      by[d.label].second += d.ms;
      prof_total += d.ms;
    }
    prof.assign(by.begin(), by.end());
    std::sort(prof.begin(), prof.end(), [](auto& x, auto& y) { return x.second.second > y.second.second; });
  }
  if (tty) std::fprintf(stderr, "\r%70s\r", "");
  for (auto& t : tests) {
    t.t = stats(t.tps);
    if (t.n_gen > 0) {
      t.gbs = double(bytes_per_token) * t.t.median / 1e9;
      if (bw > 0) t.bw_frac = t.gbs * 1e9 / bw;
    }
  }

  std::printf("device: %s   bandwidth: %s\n", engine_name(model, be).c_str(),
              bw > 0 ? (fmt("%.1f GB/s", bw * 1e-9) + " (" + bw_source + ")").c_str() : "none");
  std::printf("model: %s   weights %s: %s, read per decoded token: %s\n", model_path->c_str(),
              on_gpu ? "on the GPU" : "mapped", gb_str(weight_bytes).c_str(), gb_str(bytes_per_token).c_str());
  if (on_gpu)
    std::printf("matvec tuning: wg %u, tpr %u, unroll %u, rows %u; prefill matmul: %s, tile %ux%ux%u\n\n",
                tuning.matvec_wg, tuning.matvec_tpr, tuning.matvec_unroll, tuning.matvec_rows,
                tuning.matmul == llm::LinearVersion::Naive     ? "naive"
                : tuning.matmul == llm::LinearVersion::Shared  ? "tiled"
                : tuning.matmul == llm::LinearVersion::RegTile ? "regtile"
                                                               : "auto",
                tuning.matmul_bm, tuning.matmul_bn, tuning.matmul_bk);
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : tests)
    rows.push_back({name, gib_str(file.total_bytes()), params_str(params), backend, t.name,
                    fmt("%.2f", t.t.median) + " ± " + fmt("%.2f", t.t.stddev),
                    t.gbs >= 0 ? fmt(t.gbs >= 10 ? "%.1f" : "%.3f", t.gbs) : "",
                    t.bw_frac >= 0 ? fmt("%.1f%%", 100 * t.bw_frac) : ""});
  print_table({"model", "size", "params", "backend", "test", "t/s", "GB/s", "% bw"},
              {false, true, true, false, true, true, true, true}, rows);
  for (const auto& t : tests)
    if (!t.host_ms.empty())
      std::printf("\n%s: host time recording a step: %.3f ms per token (median); %d step(s) in flight", t.name.c_str(),
                  stats(t.host_ms).median, ahead);
  if (!prof.empty()) {
    std::printf("\n\nGPU time of one decode step by kernel (timestamps around each dispatch): %.3f ms\n\n", prof_total);
    std::vector<std::vector<std::string>> prow;
    for (auto& [kernel, cm] : prof)
      prow.push_back({kernel, std::to_string(cm.first), fmt("%.1f", cm.second * 1e3),
                      fmt("%.1f", cm.second * 1e3 / cm.first), fmt("%.1f%%", 100 * cm.second / prof_total)});
    print_table({"kernel", "dispatches", "total us", "us each", "share"}, {false, true, true, true, true}, prow);
  }
  std::printf(
      "\nt/s: median ± standard deviation of %d runs (after a warm-up run); pp: prefill of p random tokens\n"
      "from an empty cache to the last position's logits; tg: n greedy single-token steps from an empty\n"
      "cache (on the GPU each step's token id read back; with --decode-ahead %d the host records step t+1\n"
      "while the GPU runs step t). GB/s: weight bytes read per token x t/s; %% bw: of the %s.\n",
      repeats, ahead,
      bw_source == "given"      ? "given bandwidth"
      : bw_source == "measured" ? "measured copy bandwidth"
                                : "bandwidth (none with --bandwidth 0)");

  if (png) {  // t/s of each test, one bar per test
    std::vector<std::string> cats;
    chart::BarSeries bars{"median t/s", {}};
    for (const auto& t : tests) {
      cats.push_back(t.name);
      bars.values.push_back(t.t.median);
    }
    chart::write_bar_chart(*png, name + " on " + (on_gpu ? be.ctx->adapter().device : backend), "tokens/s", cats,
                           {bars});
  }
  if (json) {
    auto or_null = [](double v, bool have) { return have ? json::Value(v) : json::Value(); };
    json::Value o = json::Value::object();
    o.set("model", *model_path);
    o.set("name", name);
    o.set("architecture", llm::to_string(cfg.architecture));
    o.set("type", type);
    o.set("size_bytes", uint64_t(file.total_bytes()));
    o.set("params", int64_t(params));
    o.set("weight_bytes", weight_bytes);
    o.set("bytes_per_token", bytes_per_token);
    o.set("engine", to_string(model.device()));
    o.set("device", on_gpu ? be.ctx->adapter().device : llm::cpu::describe_cpu(model.threads()));
    o.set("adapter_type", on_gpu ? be.ctx->adapter().adapter_type : "cpu");
    o.set("backend", on_gpu ? be.ctx->adapter().backend : "cpu");
    o.set("threads", model.threads());
    o.set("bandwidth_gbs", or_null(bw * 1e-9, bw > 0));
    o.set("bandwidth_source", bw_source);
    o.set("repeats", repeats);
    o.set("warmup", warmup);
    o.set("decode_ahead", ahead);
    o.set("max_ctx", model.max_ctx());
    o.set("batch", batch);
    json::Value results = json::Value::array();
    for (const auto& t : tests) {
      json::Value r = json::Value::object();
      r.set("test", t.name);
      r.set("n_prompt", t.n_prompt);
      r.set("n_gen", t.n_gen);
      r.set("seconds", number_array(t.seconds));
      r.set("tps", number_array(t.tps));
      r.set("tps_median", t.t.median);
      r.set("tps_mean", t.t.mean);
      r.set("tps_stddev", t.t.stddev);
      r.set("tps_min", t.t.min);
      r.set("tps_max", t.t.max);
      r.set("gbs", or_null(t.gbs, t.gbs >= 0));
      r.set("bandwidth_fraction", or_null(t.bw_frac, t.bw_frac >= 0));
      r.set("host_ms_per_token", or_null(t.host_ms.empty() ? 0 : stats(t.host_ms).median, !t.host_ms.empty()));
      results.push_back(std::move(r));
    }
    o.set("results", std::move(results));
    std::ofstream f(*json);
    if (!f) throw Error("wgc bench-llm: cannot write " + *json);
    f << o.dump(1) << "\n";
    if (!f) throw Error("wgc bench-llm: writing " + *json + " failed");
  }
  return 0;
}

Register reg{
    {"bench-llm",
     "--model F.gguf [-p 512[,n..]] [-n 128[,n..]] [-r 5] [--json F] [--png F] [--bandwidth GB/s] [--batch 512] "
     "[--seed S] [--no-warmup] [--decode-ahead N] [--threads N] [--profile] [--matvec WG,TPR,UNROLL,ROWS] [--matmul "
     "naive|tiled|regtile] [--matmul-tile BMxBNxBK] [--backend B]",
     "llama-bench for LlamaModel: prefill (pp) and decode (tg) tokens/s, decode vs bandwidth", bench_llm_cmd}};

}  // namespace
}  // namespace wgc::cli
