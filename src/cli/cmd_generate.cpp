// wgc generate: text continuation, streamed token by token; wgc chat: an interactive loop with the
// model's chat template, keeping the KV cache across turns.
#include "cli/command.h"
#include "cli/llm_flags.h"
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

LlamaModel& start_engine(Loaded& l, const Context& ctx, int max_ctx) {
  auto t0 = std::chrono::steady_clock::now();
  EngineOptions eo;
  eo.max_ctx = max_ctx;
  l.model.emplace(ctx, l.file, eo);
  l.load_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return *l.model;
}

fs::path model_path(const std::optional<std::string>& m) { return m ? fs::path(*m) : default_model_path(); }

// Flags of both commands.
struct ModelFlags {
  GpuFlags gpu;
  std::optional<std::string> model;
  std::string tokenizer;
  SamplingFlags sampling;
  int n = 128;
  int ctx = 0;
  std::vector<std::string> stop;
};

void add_model_flags(CLI::App& app, ModelFlags& f, int default_n) {
  f.n = default_n;
  add_text(app, "--model,-m", f.model, "a GGUF file or Hugging Face folder (default: the built-in wgc-tiny-dict)")
      ->type_name("PATH");
  app.add_option("--tokenizer", f.tokenizer, "a tokenizer.json, folder or .gguf (default: the model's own)")
      ->type_name("PATH");
  add_number(app, "-n,--n-predict", f.n, "tokens to generate at most; -1: until a stop or the end of the context");
  add_number(app, "--ctx", f.ctx, "context size in tokens; 0: the model's, up to 4096");
  app.add_option("--stop", f.stop, "stop before this text (repeatable)")
      ->type_name("TEXT")
      ->allow_extra_args(false)
      ->default_str("");
  add_sampling_flags(app, f.sampling);
  add_gpu_flags(app, f.gpu);
}

GenerateOptions generate_options(const ModelFlags& f, const fs::path& model) {
  GenerateOptions o;
  o.sampling = sampling_params(f.sampling, model);
  o.max_tokens = f.n;
  o.stop = f.stop;
  check_generate_options(o);
  if (f.ctx < 0) throw UsageError("--ctx must be >= 0");
  return o;
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

struct GenerateFlags {
  ModelFlags m;
  std::optional<std::string> prompt;
  std::vector<int64_t> tokens;
  bool ignore_eos = false, no_special = false, json = false;
};

int generate(const GenerateFlags& f) {
  if (f.prompt && !f.tokens.empty()) throw UsageError("--prompt and --tokens were both given: give one");
  if (!f.prompt && f.tokens.empty()) throw UsageError("give --prompt TEXT or --tokens ID,ID,...");
  fs::path path = model_path(f.m.model);
  GenerateOptions o = generate_options(f.m, path);
  o.ignore_eos = f.ignore_eos;
  o.add_special = !f.no_special;
  const uint64_t seed = o.sampling.seed;
  const int max_ctx = f.m.ctx;
  const bool json = f.json;
  const auto& prompt = f.prompt;
  const std::string& tokenizer = f.m.tokenizer;

  Loaded m = open_files(path, tokenizer);
  if (!m.tok && prompt)
    throw Error("wgc generate: " + path.string() +
                " has no tokenizer (no tokenizer.json beside it): give --tokenizer PATH, or --tokens");
  std::vector<int32_t> ids = prompt ? m.tok->encode(*prompt, o.add_special) : token_ids(f.tokens, "--tokens");
  if (max_ctx > 0 && int64_t(ids.size()) > max_ctx)  // the Generator says the same, after the GPU start
    throw Error("wgc: the prompt has " + std::to_string(ids.size()) + " tokens but the context holds " +
                std::to_string(max_ctx) + " (shorten the prompt or raise --ctx, up to the model's own context)");

  Context ctx(f.m.gpu.context_options());
  Generator gen(start_engine(m, ctx, max_ctx), m.tok);

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

struct ChatFlags {
  ModelFlags m;
  std::optional<std::string> system;
  bool timings = false;
};

int chat(const ChatFlags& f) {
  fs::path path = model_path(f.m.model);
  GenerateOptions o = generate_options(f.m, path);
  const uint64_t seed = o.sampling.seed;
  const int max_ctx = f.m.ctx;
  const auto& system = f.system;
  const std::string& tokenizer = f.m.tokenizer;
  const bool timings = f.timings;

  Loaded m = open_files(path, tokenizer);
  if (!m.tok) throw Error("wgc chat: " + path.string() + " has no tokenizer: give --tokenizer PATH");
  const Tokenizer& tok = *m.tok;
  Context ctx(f.m.gpu.context_options());
  Generator gen(start_engine(m, ctx, max_ctx), tok);
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

Register reg_generate{
    {"generate", "continue a prompt with a language model (default: the built-in wgc-tiny-dict)", [](CLI::App& app) {
       auto f = std::make_shared<GenerateFlags>();
       add_text(app, "--prompt,-p", f->prompt, "the text to continue");
       add_numbers(app, "--tokens", f->tokens, "the prompt as token ids instead (comma-separated)");
       add_model_flags(app, f->m, 128);
       app.add_flag("--ignore-eos", f->ignore_eos, "keep going past end-of-turn tokens");
       app.add_flag("--no-special", f->no_special, "--prompt: no BOS or other special tokens added");
       app.add_flag("--json", f->json, "print the result as JSON (ids, text, stop reason, seed, timings)");
       return [f] { return generate(*f); };
     }}};
Register reg_chat{{"chat", "interactive chat with a language model (reads lines from stdin; /exit)", [](CLI::App& app) {
                     auto f = std::make_shared<ChatFlags>();
                     add_text(app, "--system", f->system, "the system prompt");
                     add_model_flags(app, f->m, 256);
                     app.add_flag("--timings", f->timings, "print the timings after each reply");
                     return [f] { return chat(*f); };
                   }}};

}  // namespace
}  // namespace wgc::cli
