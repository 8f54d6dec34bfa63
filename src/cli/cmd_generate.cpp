// wgc generate: text continuation, streamed token by token; wgc chat: an interactive loop with the
// model's chat template, keeping the KV cache across turns.
#include "cli/command.h"
#include "cli/llm_backend.h"
#include "gpu/context.h"
#include "llm/chat/chat_template.h"
#include "llm/generate/default_model.h"
#include "llm/generate/generator.h"
#include "util/error.h"
#include "util/json.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <string>

#include <unistd.h>

namespace wgc::cli {
namespace {

using namespace wgc::llm;
namespace fs = std::filesystem;

constexpr const char* kSamplingUsage =
    "[--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--repeat-last-n N] "
    "[--presence-penalty P] [--frequency-penalty F] [--seed S]";

int int_option(Args& a, std::string_view name, int fallback) {
  double v = a.number_or(name, fallback);
  if (v != double(int64_t(v)) || v < -2147483647.0 || v > 2147483647.0)
    throw Error("wgc: " + std::string(name) + " expects an integer");
  return int(v);
}

// The model's defaults (default_sampling), with what the user set on top.
SamplingParams sampling_flags(Args& a, const fs::path& model, uint64_t* seed_out) {
  SamplingParams p = default_sampling(model);
  p.temperature = float(a.number_or("--temp", p.temperature));
  p.top_k = int_option(a, "--top-k", p.top_k);
  p.top_p = float(a.number_or("--top-p", p.top_p));
  p.min_p = float(a.number_or("--min-p", p.min_p));
  p.repeat_penalty = float(a.number_or("--repeat-penalty", p.repeat_penalty));
  p.penalty_last_n = int_option(a, "--repeat-last-n", p.penalty_last_n);
  p.presence_penalty = float(a.number_or("--presence-penalty", p.presence_penalty));
  p.frequency_penalty = float(a.number_or("--frequency-penalty", p.frequency_penalty));
  if (p.repeat_penalty <= 0) throw Error("wgc: --repeat-penalty must be > 0");
  if (p.top_p <= 0 || p.top_p > 1) throw Error("wgc: --top-p must be in (0, 1]");
  if (p.min_p < 0 || p.min_p > 1) throw Error("wgc: --min-p must be in [0, 1]");
  if (auto s = a.option("--seed")) {
    char* end = nullptr;
    p.seed = std::strtoull(s->c_str(), &end, 10);
    if (s->empty() || *end || (*s)[0] == '-') throw Error("wgc: --seed expects a non-negative integer");
  } else {
    std::random_device rd;
    p.seed = (uint64_t(rd()) << 32) ^ rd();
  }
  if (seed_out) *seed_out = p.seed;
  return p;
}

std::vector<int32_t> parse_ids(const std::vector<std::string>& items, const char* flag) {
  std::vector<int32_t> ids;
  for (const auto& s : items) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || v < 0 || v > 0x7fffffff)
      throw Error(std::string("wgc: ") + flag + " expects comma-separated token ids, got '" + s + "'");
    ids.push_back(int32_t(v));
  }
  return ids;
}

// The model file and its tokenizer (CPU only: bad input fails before the GPU starts), then the engine.
struct Loaded {
  fs::path path;
  ModelFile file;
  std::optional<Tokenizer> tok;
  std::optional<LlamaModel> model;
  double load_ms = 0;
};

Loaded open_files(const fs::path& path, const fs::path& tokenizer) {
  auto t0 = std::chrono::steady_clock::now();
  ModelFile f = open_model(path);
  auto tok = find_tokenizer(f, tokenizer);
  for (const auto& note : f.config().notes) std::fprintf(stderr, "wgc: note: %s\n", note.c_str());
  Loaded l{path, std::move(f), std::move(tok), std::nullopt, 0};
  l.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return l;
}

LlamaModel& start_engine(Loaded& l, const LlmBackend& be, int max_ctx) {
  auto t0 = std::chrono::steady_clock::now();
  EngineOptions eo;
  eo.max_ctx = max_ctx;
  eo.device = be.device;
  l.model.emplace(be.ctx, l.file, eo);
  say_engine_choice(*l.model);
  l.load_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return *l.model;
}

fs::path model_path(Args& a) {
  auto m = a.option("--model");
  if (m) return *m;
  return default_model_path();
}

json::Value timings_json(const Timings& t) {
  auto o = json::Value::object();
  o.set("load_ms", t.load_ms);
  o.set("prompt_tokens", t.prompt_tokens);
  o.set("prompt_eval_tokens", t.prompt_eval_tokens);
  o.set("prompt_ms", t.prompt_ms);
  o.set("prompt_tokens_per_s", t.prompt_tps());
  o.set("generated_tokens", t.generated_tokens);
  o.set("decode_steps", t.decode_steps);
  o.set("decode_ms", t.decode_ms);
  o.set("decode_tokens_per_s", t.decode_tps());
  return o;
}

json::Value ids_json(const std::vector<int32_t>& ids) {
  auto a = json::Value::array();
  for (int32_t id : ids) a.push_back(int(id));
  return a;
}

int generate(Args& a) {
  auto g = gpu_flags(a);
  fs::path path = model_path(a);
  auto prompt = a.option("--prompt");
  auto tokens = a.list("--tokens");
  auto tokenizer = a.option_or("--tokenizer", "");
  GenerateOptions o;
  uint64_t seed = 0;
  o.sampling = sampling_flags(a, path, &seed);
  o.max_tokens = int_option(a, "-n", 128);
  o.ignore_eos = a.flag("--ignore-eos");
  o.add_special = !a.flag("--no-special");
  int max_ctx = int_option(a, "--ctx", 0);
  bool json = a.flag("--json");
  while (auto s = a.option("--stop")) o.stop.push_back(*s);
  a.done();
  if (prompt.has_value() == !tokens.empty()) throw Error("wgc generate: give --prompt TEXT or --tokens ID,ID,...");
  if (max_ctx < 0) throw Error("wgc generate: --ctx must be >= 0");

  Loaded m = open_files(path, tokenizer);
  if (!m.tok && prompt)
    throw Error("wgc generate: " + path.string() +
                " has no tokenizer (no tokenizer.json beside it): give --tokenizer PATH, or --tokens");
  std::vector<int32_t> ids = prompt ? m.tok->encode(*prompt, o.add_special) : parse_ids(tokens, "--tokens");
  if (max_ctx > 0 && int64_t(ids.size()) > max_ctx)  // the Generator says the same, after the GPU start
    throw Error("wgc: the prompt has " + std::to_string(ids.size()) + " tokens but the context holds " +
                std::to_string(max_ctx) + " (shorten the prompt or raise --ctx, up to the model's own context)");

  LlmBackend be = llm_backend(g);
  Generator gen(start_engine(m, be, max_ctx), m.tok);

  if (!json)
    std::fprintf(stderr, "wgc: %s (%s), context %d, sampling: %s\n", path.filename().string().c_str(),
                 std::string(to_string(m.file.config().architecture)).c_str(), gen.model().max_ctx(),
                 o.sampling.describe().c_str());
  TextCallback stream;
  if (!json)
    stream = [](std::string_view s) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    };
  GenerateResult r = gen.generate(std::span<const int32_t>(ids), o, stream);
  r.timings.load_ms = m.load_ms;

  if (json) {
    auto out = json::Value::object();
    out.set("model", path.string());
    out.set("prompt_ids", ids_json(r.prompt_ids));
    out.set("ids", ids_json(r.ids));
    out.set("text", r.text);
    out.set("stop", std::string(to_string(r.stop)));
    if (!r.message.empty()) out.set("message", r.message);
    out.set("seed", uint64_t(seed));
    out.set("sampling", o.sampling.describe());
    out.set("timings", timings_json(r.timings));
    std::printf("%s\n", out.dump().c_str());
  } else {
    if (isatty(STDOUT_FILENO) && (r.text.empty() || r.text.back() != '\n')) std::printf("\n");
    std::fflush(stdout);
    std::fprintf(stderr, "\n%s", r.timings.summary().c_str());
    std::fprintf(stderr, "stopped: %s\n", std::string(to_string(r.stop)).c_str());
  }
  if (r.stop == StopReason::ContextFull) std::fprintf(stderr, "wgc: %s\n", r.message.c_str());
  return 0;
}

int chat(Args& a) {
  auto g = gpu_flags(a);
  fs::path path = model_path(a);
  auto system = a.option("--system");
  auto tokenizer = a.option_or("--tokenizer", "");
  GenerateOptions o;
  uint64_t seed = 0;
  o.sampling = sampling_flags(a, path, &seed);
  o.max_tokens = int_option(a, "-n", 256);
  int max_ctx = int_option(a, "--ctx", 0);
  bool timings = a.flag("--timings");
  while (auto s = a.option("--stop")) o.stop.push_back(*s);
  a.done();

  Loaded m = open_files(path, tokenizer);
  if (!m.tok) throw Error("wgc chat: " + path.string() + " has no tokenizer: give --tokenizer PATH");
  const Tokenizer& tok = *m.tok;
  LlmBackend be = llm_backend(g);
  Generator gen(start_engine(m, be, max_ctx), tok);
  bool plain = tok.chat_template().empty();
  std::optional<ChatTemplate> tmpl;
  if (!plain) tmpl.emplace(ChatTemplate::for_tokenizer(tok));
  bool tty = isatty(STDIN_FILENO);

  std::fprintf(stderr, "wgc chat: %s, context %d, sampling: %s\n", path.filename().string().c_str(),
               gen.model().max_ctx(), o.sampling.describe().c_str());
  if (plain)
    std::fprintf(stderr,
                 "note: this model has no chat template: what you type is continued as plain text "
                 "(the conversation so far stays in the context)\n");
  std::fprintf(stderr, "type /exit (or end the input) to leave, /reset to start over\n");

  std::vector<ChatMessage> messages;
  // Plain mode: the conversation as tokens (what was typed, what came back, the end-of-text token
  // where a reply ended with one: the next line then starts a new document after it).
  std::vector<int32_t> history;
  bool after_eos = false;
  std::string last_text;
  auto start_over = [&] {
    messages.clear();
    if (system) messages.push_back({"system", *system});
    history.clear();
    after_eos = false;
    last_text.clear();
  };
  start_over();

  std::string line;
  int turn = 0;
  for (;;) {
    if (tty) std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      start_over();
      gen.reset();
      continue;
    }
    if (line.empty()) continue;

    std::vector<int32_t> ids;
    if (plain) {
      std::vector<int32_t> add;
      if (history.empty())
        add = tok.encode(system ? *system + "\n" + line : line, true);
      else if (after_eos)
        add = tok.encode(line, true);
      else
        add = tok.encode(last_text.ends_with('\n') ? line : "\n" + line, false);
      ids = history;
      ids.insert(ids.end(), add.begin(), add.end());
    } else {
      messages.push_back({"user", line});
      ids = tok.encode(tmpl->render(messages), false);  // the template writes BOS itself
    }
    GenerateResult r;
    ++turn;
    o.sampling.seed = seed + uint64_t(turn - 1);  // a fresh stream each turn, reproducible from --seed
    try {
      r = gen.generate(std::span<const int32_t>(ids), o, [](std::string_view s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
      });
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n(/reset starts a new conversation)\n", e.what());
      if (!plain) messages.pop_back();
      continue;
    }
    std::printf("\n");
    std::fflush(stdout);
    if (plain) {
      history = std::move(ids);
      history.insert(history.end(), r.ids.begin(), r.ids.end());
      after_eos = r.stop_id >= 0;
      if (after_eos) history.push_back(r.stop_id);
      last_text = r.text;
    } else {
      messages.push_back({"assistant", r.text});
    }
    if (r.stop == StopReason::ContextFull) std::fprintf(stderr, "wgc: %s; /reset starts over\n", r.message.c_str());
    if (timings) {
      r.timings.load_ms = m.load_ms;
      std::fprintf(stderr, "%s", r.timings.summary().c_str());
    }
  }
  return 0;
}

Register reg_generate{{"generate",
                       std::string("[--model MODEL] (--prompt TEXT | --tokens ID,...) [-n N] ") + kSamplingUsage +
                           " [--stop STR]... [--ctx N] [--ignore-eos] [--no-special] [--tokenizer PATH] [--json] "
                           "[--backend B]",
                       "continue a prompt with a language model (default: the built-in wgc-tiny-dict)", generate}};
Register reg_chat{{"chat",
                   std::string("[--model MODEL] [--system S] [-n N] ") + kSamplingUsage +
                       " [--stop STR]... [--ctx N] [--timings] [--tokenizer PATH] [--backend B]",
                   "interactive chat with a language model (reads lines from stdin; /exit)", chat}};

}  // namespace
}  // namespace wgc::cli
