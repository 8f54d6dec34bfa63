#include "cli/llm_flags.h"

#include "gpu/context.h"
#include "llm/generate/default_model.h"
#include "llm/hub/hub.h"
#include "util/format.h"
#include "util/json.h"
#include "util/progress.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>

namespace wgc::cli {

namespace fs = std::filesystem;

std::vector<int32_t> token_ids(const std::vector<int64_t>& values, std::string_view flag) {
  std::vector<int32_t> ids;
  for (int64_t v : values) {
    if (v < 0 || v > INT32_MAX)
      throw UsageError(std::string(flag) + " expects token ids from 0 to 2147483647, got " + std::to_string(v));
    ids.push_back(int32_t(v));
  }
  return ids;
}

std::string read_prompt_file(const std::string& path) {
  std::string text;
  auto read_all = [&](std::istream& in, const std::string& name) {
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      text.append(buf, size_t(in.gcount()));
      if (text.size() > kMaxPromptFileBytes)
        throw Error("wgc: the prompt in " + name + " is longer than " + std::to_string(kMaxPromptFileBytes >> 20) +
                    " MiB");
    }
  };
  if (path == "-") {
    read_all(std::cin, "stdin");
  } else {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw Error("wgc: " + path + " is a folder, not a prompt file");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("wgc: cannot read the prompt file " + path);
    read_all(f, path);
  }
  // The line end that editors and `echo` put after the last line is not part of the prompt.
  if (text.ends_with("\r\n"))
    text.resize(text.size() - 2);
  else if (text.ends_with('\n'))
    text.pop_back();
  return text;
}

namespace {

// The library's option names (what llm::validate says) and the flags that set them.
constexpr std::pair<const char*, const char*> kFlagOfOption[] = {
    {"temperature", "--temp"},
    {"top_k", "--top-k"},
    {"top_p", "--top-p"},
    {"min_p", "--min-p"},
    {"repeat_penalty", "--repeat-penalty"},
    {"penalty_last_n", "--repeat-last-n"},
    {"presence_penalty", "--presence-penalty"},
    {"frequency_penalty", "--frequency-penalty"},
    {"seed", "--seed"},
    {"max_tokens", "-n"},
    {"stop", "--stop"},
};

// Runs `check`, saying an OptionError in the flags' names.
template <class F>
void in_flag_names(F&& check) {
  try {
    check();
  } catch (const OptionError& e) {
    for (auto [field, flag] : kFlagOfOption)
      if (e.option == field) throw UsageError(std::string(flag) + " " + e.problem);
    throw;
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// SwiftShader's decode speed is about its memory bandwidth over the bytes each token reads; a few
// GB/s on common machines (0.4-3 GB/s measured): the estimate assumes the upper end.
constexpr double kCpuAdapterBytesPerSecond = 3e9;
constexpr uint64_t kLargeOnCpuBytes = 1ull << 30;

}  // namespace

void add_sampling_flags(CLI::App& app, SamplingFlags& s) {
  const char* g = "Sampling (defaults: the model's; wgc-tiny-dict: temp 0.8, top-p 0.95; others: llama.cpp's)";
  add_number(app, "--temp", s.temperature, "temperature; 0: greedy (default 0.8)")->group(g);
  add_number(app, "--top-k", s.top_k, "keep the k most likely tokens; 0: off (default 40)")->group(g);
  add_number(app, "--top-p", s.top_p, "keep the smallest set with this probability mass, in (0, 1] (default 0.95)")
      ->group(g);
  add_number(app, "--min-p", s.min_p,
             "keep tokens at least this times the best one's probability, in [0, 1] (default 0.05)")
      ->group(g);
  add_number(app, "--repeat-penalty", s.repeat_penalty,
             "divide the logits of recent tokens by this; 1: off (default 1)")
      ->group(g);
  add_number(app, "--repeat-last-n", s.repeat_last_n,
             "tokens the penalties look back over; -1: all, 0: off (default 64)")
      ->group(g);
  add_number(app, "--presence-penalty", s.presence_penalty, "subtracted from the logit of any recent token (default 0)")
      ->group(g);
  add_number(app, "--frequency-penalty", s.frequency_penalty,
             "subtracted per occurrence among recent tokens (default 0)")
      ->group(g);
  add_number(app, "--seed", s.seed, "random seed, 0 to 2^64-1 (default: a random one, printed with --json)")->group(g);
}

llm::SamplingParams sampling_params(const SamplingFlags& s, const fs::path& model) {
  llm::SamplingParams p = llm::default_sampling(model);
  if (s.temperature) p.temperature = *s.temperature;
  if (s.top_k) p.top_k = *s.top_k;
  if (s.top_p) p.top_p = *s.top_p;
  if (s.min_p) p.min_p = *s.min_p;
  if (s.repeat_penalty) p.repeat_penalty = *s.repeat_penalty;
  if (s.repeat_last_n) p.penalty_last_n = *s.repeat_last_n;
  if (s.presence_penalty) p.presence_penalty = *s.presence_penalty;
  if (s.frequency_penalty) p.frequency_penalty = *s.frequency_penalty;
  if (s.seed) {
    p.seed = *s.seed;
  } else {
    std::random_device rd;
    p.seed = (uint64_t(rd()) << 32) ^ rd();
  }
  in_flag_names([&] { llm::validate(p); });
  return p;
}

void check_generate_options(const llm::GenerateOptions& o) {
  in_flag_names([&] { llm::validate(o); });
}

bool is_builtin_name(std::string_view name) {
  const fs::path file(llm::kDefaultModelFile);
  return name == file.string() || name == file.stem().string() || name == kBuiltinModelName;
}

fs::path model_path(const std::optional<std::string>& model) {
  if (!model) return llm::default_model_path();
  fs::path p(*model);
  std::error_code ec;
  if (fs::exists(p, ec)) return p;
  if (auto ref = llm::parse_hub_ref(*model)) {  // owner/name[/FILE]: a pulled model
    if (auto cached = llm::hub_cached(*ref)) return *cached;
    throw Error("wgc: " + *model + " is no file or folder here, and no model pulled into " +
                llm::hub_cache_dir().string() + ": `wgc pull " + *model + "` downloads it from " + llm::hub_endpoint());
  }
  if (is_builtin_name(*model)) return llm::default_model_path();
  // A short name (what `wgc list` and the server's /v1/models show): a pulled file or model folder.
  if (model->find('/') == std::string::npos && !model->empty() && model->front() != '.') {
    std::vector<llm::CachedModel> found;
    try {
      found = llm::hub_find_name(*model);
    } catch (const Error&) {  // no cache folder at all (no HOME): nothing pulled
    }
    if (found.size() == 1) return found[0].path;
    if (found.size() > 1) {
      std::string names;
      for (const auto& m : found) names += "\n  " + m.ref.str();
      throw Error("wgc: the name " + *model + " fits several pulled models; give one of them:" + names);
    }
    throw Error("wgc: " + *model + " is no file or folder here, no pulled model of that name (`wgc list` shows " +
                "them) and not the built-in " + std::string(kBuiltinModelName));
  }
  return p;  // open_model says that it does not exist
}

void add_model_flags(CLI::App& app, ModelFlags& f, int default_n) {
  f.n = default_n;
  add_text(app, "--model,-m", f.model, kModelHelp)->type_name("MODEL");
  app.add_option("--tokenizer", f.tokenizer, "a tokenizer.json, folder or .gguf (default: the model's own)")
      ->type_name("PATH");
  add_number(app, "-n,--n-predict", f.n, "tokens to generate at most; -1: until a stop or the end of the context");
  add_ctx_flag(app, f.ctx, "context size in tokens; 0: the model's, up to 4096");
  add_threads_flag(app, f.threads);
  app.add_option("--stop", f.stop, "stop before this text (repeatable)")
      ->type_name("TEXT")
      ->allow_extra_args(false)
      ->default_str("");
  app.add_flag("--ignore-eos", f.ignore_eos, "keep going past end-of-turn tokens");
  app.add_flag("--no-q8", f.no_q8,
               "f32 activations for quantized weights (default: 8-bit, as llama.cpp; wgc serve's tokens need this)");
  add_text(app, "--draft-model,--model-draft", f.draft_model,
           "speculative decoding: a small model of the same tokenizer proposes tokens that the model checks in "
           "one pass (greedy: its tokens; sampling: its distribution)")
      ->type_name("MODEL");
  add_number(app, "--draft-tokens,--draft-max", f.draft_tokens,
             "speculative decoding: draft tokens proposed per round (1.." + std::to_string(llm::kMaxDraftTokens) + ")");
  add_sampling_flags(app, f.sampling);
  add_gpu_flags(app, f.gpu);
  add_engine_flags(app, f.split);
}

std::unique_ptr<LoadedModel> start_draft(const ModelFlags& f, const LoadedModel& target, const LlmBackend& be,
                                         llm::Generator& gen) {
  if (!f.draft_model) return nullptr;
  auto d = std::make_unique<LoadedModel>(open_model_files(model_path(f.draft_model), ""));
  // Checked before the engine starts: a wrong draft fails without loading it.
  llm::check_draft(target.file.config(), target.tok ? &*target.tok : nullptr, d->file.config(),
                   d->tok ? &*d->tok : nullptr, d->path.string());
  start_engine(*d, be, target.model->max_ctx(), !f.no_q8, f.threads);
  llm::SpeculativeOptions so;
  so.draft_tokens = f.draft_tokens;
  gen.set_draft(&*d->model, so, d->tok ? &*d->tok : nullptr, d->path.string());
  return d;
}

void check_draft_sweep(const std::vector<int>& tokens, const std::vector<double>& acceptance) {
  for (int k : tokens)
    if (k < 1 || k > llm::kMaxDraftTokens)
      throw UsageError("--draft-tokens expects counts from 1 to " + std::to_string(llm::kMaxDraftTokens) + ", got " +
                       std::to_string(k));
  for (double a : acceptance)
    if (!(a >= 0 && a <= 1)) throw UsageError("--draft-acceptance expects fractions from 0 to 1");
}

llm::GenerateOptions generate_options(const ModelFlags& f, const fs::path& model) {
  if (f.ctx < 0) throw UsageError("--ctx must be >= 0");
  llm::GenerateOptions o;
  o.sampling = sampling_params(f.sampling, model);
  o.max_tokens = f.n;
  o.stop = f.stop;
  o.ignore_eos = f.ignore_eos;
  check_generate_options(o);
  if (f.draft_model) {
    if (f.draft_tokens < 1 || f.draft_tokens > llm::kMaxDraftTokens)
      throw UsageError("--draft-tokens must be 1 to " + std::to_string(llm::kMaxDraftTokens) + ", got " +
                       std::to_string(f.draft_tokens));
    if (o.sampling.has_penalties())
      throw UsageError(
          "--draft-model takes no penalties (--repeat-penalty 1, --presence-penalty 0, "
          "--frequency-penalty 0); sampling now: " +
          o.sampling.describe());
  }
  return o;
}

CLI::Option* add_ctx_flag(CLI::App& app, int& ctx, const std::string& help) {
  return add_number(app, "--ctx,-c,--ctx-size", ctx, help + " (-c, --ctx-size: llama.cpp's spellings)");
}

CLI::Option* add_threads_flag(CLI::App& app, int& threads) {
  return add_number(app, "--threads,-t", threads, "the CPU engine's threads; 0: every processor");
}

int checked_threads(int threads) {
  if (threads < 0 || threads > 4096) throw UsageError("--threads must be 0 (every processor) to 4096");
  return threads;
}

LoadedModel open_model_files(const fs::path& path, const std::string& tokenizer) {
  auto t0 = std::chrono::steady_clock::now();
  llm::ModelFile f = llm::open_model(path);
  auto tok = llm::find_tokenizer(f, tokenizer);
  for (const auto& note : f.config().notes) info("note: " + note);
  LoadedModel m{path, std::move(f), std::move(tok), std::nullopt, 0};
  m.load_ms = ms_since(t0);
  return m;
}

llm::LlamaModel& start_engine(LoadedModel& m, const LlmBackend& be, int max_ctx, bool q8_activations, int threads) {
  const llm::ModelConfig& c = m.file.config();
  if (max_ctx > 0 && c.max_position_embeddings > 0 && max_ctx > c.max_position_embeddings)
    warn("--ctx " + std::to_string(max_ctx) + " is above the " + std::to_string(c.max_position_embeddings) +
         "-token context " + m.path.filename().string() + " was trained for: text past it is likely to degrade");
  llm::EngineOptions eo;
  eo.max_ctx = max_ctx;
  eo.q8_activations = q8_activations;
  eo.threads = checked_threads(threads);
  be.apply(eo);
  const llm::DeviceChoice choice = llm::choose_device(be.ctx, m.file, eo);
  eo.device = choice.device;
  const uint64_t bytes = m.file.total_bytes();
  if (choice.device == llm::Device::Gpu && be.ctx->adapter().is_cpu() && bytes >= kLargeOnCpuBytes) {
    const Context& ctx = *be.ctx;
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "%s has %.1f GB of weights and runs on a CPU adapter (%s): expect about %.1f s per token or more "
                  "(--backend cpu runs the CPU engine)",
                  m.path.filename().string().c_str(), double(bytes) / 1e9, ctx.adapter().device.c_str(),
                  double(bytes) / kCpuAdapterBytesPerSecond);
    warn(buf);
  }
  if (!choice.reason.empty()) say_engine_choice(choice.reason);
  m.emulated = choice.device == llm::Device::Gpu && be.ctx->adapter().is_cpu();
  std::unique_ptr<Waiting> wait;
  if (m.emulated && verbosity() != Verbosity::Quiet) {  // the upload bar would sit at 99% (issue 38)
    eo.progress = false;
    wait = std::make_unique<Waiting>(
        "loading " + m.path.filename().string() + " (" + human_bytes(bytes) + ") onto SwiftShader",
        "--backend cpu starts at once");
  }
  auto t0 = std::chrono::steady_clock::now();
  m.model.emplace(be.ctx, m.file, eo);
  m.load_ms += ms_since(t0);
  wait.reset();
  info(m.path.filename().string() + " (" + std::string(llm::to_string(c.architecture)) + "), context " +
       std::to_string(m.model->max_ctx()) + " tokens, on " + engine_name(*m.model, be));
  return *m.model;
}

std::unique_ptr<Waiting> first_steps_wait(const LoadedModel& m) {
  if (!m.emulated || verbosity() == Verbosity::Quiet) return nullptr;
  return std::make_unique<Waiting>("SwiftShader compiles each kernel on first use",
                                   "tens of seconds; minutes for 1B models");
}

std::function<void(int, int)> prefill_progress() {
  if (verbosity() == Verbosity::Quiet || !Progress::enabled()) return {};
  return [](int done, int total) {
    std::fprintf(stderr, "\r[prompt %d/%d tokens]%s", done, total, done == total ? "\r\033[K" : "");
    std::fflush(stderr);
  };
}

std::string in_flag_terms(std::string message) {
  const std::string engine = "the engine's max_ctx";
  if (size_t at = message.find(engine); at != std::string::npos) message.replace(at, engine.size(), "--ctx (-c)");
  return message;
}

json::Value timings_json(const llm::Timings& t) {
  auto o = json::Value::object();
  o.set("load_ms", t.load_ms);
  o.set("prompt_tokens", t.prompt_tokens);
  o.set("prompt_eval_tokens", t.prompt_eval_tokens);
  o.set("prompt_ms", t.prompt_ms);
  o.set("prompt_tokens_per_s", t.prompt_tps());
  o.set("generated_tokens", t.generated_tokens);
  o.set("decode_steps", t.decode_steps);
  o.set("decode_ms", t.decode_ms);
  o.set("decode_tokens", t.decode_tokens);
  o.set("decode_tokens_per_s", t.decode_tps());
  if (t.speculative) {
    o.set("draft_proposed", t.draft_proposed);
    o.set("draft_accepted", t.draft_accepted);
    o.set("acceptance", t.acceptance());
    o.set("draft_ms", t.draft_ms);
  }
  return o;
}

}  // namespace wgc::cli
