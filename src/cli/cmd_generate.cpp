// wgc generate: text continuation, streamed token by token.
#include "cli/command.h"
#include "cli/llm_flags.h"
#include "gpu/context.h"
#include "util/error.h"
#include "util/json.h"
#include "util/signals.h"

#include <atomic>
#include <cstdio>
#include <optional>
#include <string>

namespace wgc::cli {
namespace {

using namespace wgc::llm;
namespace fs = std::filesystem;

struct Flags {
  ModelFlags m;
  std::optional<std::string> prompt, file;
  std::vector<int64_t> tokens;
  bool no_special = false, json = false, echo = false;
};

// Ctrl-C stops the generation (util/signals.h); the text so far and the timings are still printed.
std::atomic<bool> g_interrupted{false};

json::Value ids_json(const std::vector<int32_t>& ids) {
  auto a = json::Value::array();
  for (int32_t id : ids) a.push_back(int(id));
  return a;
}

int generate(const Flags& f) {
  int given = int(f.prompt.has_value()) + int(f.file.has_value()) + int(!f.tokens.empty());
  if (given > 1) {
    std::string both = f.prompt ? "--prompt" : "-f";
    both += !f.tokens.empty() ? " and --tokens" : " and -f";
    throw UsageError(both + " were both given: give one");
  }
  if (given == 0) throw UsageError("give --prompt TEXT, -f FILE (- for stdin) or --tokens ID,ID,...");
  fs::path path = model_path(f.m.model);
  GenerateOptions o = generate_options(f.m, path);
  o.add_special = !f.no_special;
  std::optional<std::string> prompt = f.prompt;
  if (f.file) prompt = read_prompt_file(*f.file);

  LoadedModel m = open_model_files(path, f.m.tokenizer);
  if (!m.tok && prompt)
    throw Error("wgc generate: " + path.string() +
                " has no tokenizer (no tokenizer.json beside it): give --tokenizer PATH, or --tokens");
  std::vector<int32_t> ids = prompt ? m.tok->encode(*prompt, o.add_special) : token_ids(f.tokens, "--tokens");
  if (f.m.ctx > 0 && int64_t(ids.size()) > f.m.ctx)  // the Generator says the same, after the GPU start
    throw Error("wgc: the prompt has " + std::to_string(ids.size()) + " tokens but the context holds " +
                std::to_string(f.m.ctx) + " (shorten the prompt or raise --ctx, up to the model's own context)");

  const LlmBackend backend = llm_backend(f.m.gpu, -1, &f.m.split);
  Generator gen(start_engine(m, backend, f.m.ctx, !f.m.no_q8, f.m.threads), m.tok);
  const std::unique_ptr<LoadedModel> draft = start_draft(f.m, m, backend, gen);
  info("sampling: " + o.sampling.describe());
  std::unique_ptr<Waiting> wait = first_steps_wait(m);  // ends at the first text
  bool echoed = !f.echo || f.json;
  auto echo = [&] {  // the prompt as given (llama-cli prints it too); after the waiting line, if any
    if (echoed) return;
    echoed = true;
    std::string shown = prompt ? *prompt : (m.tok ? m.tok->decode(ids, true) : std::string());
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    std::fflush(stdout);
  };
  if (!wait) echo();
  TextCallback stream;
  if (!f.json)
    stream = [&](std::string_view s) {
      wait.reset();
      echo();
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    };
  if (!wait) o.on_prefill = prefill_progress();
  InterruptFlag interrupt(g_interrupted);
  o.cancel = &g_interrupted;
  GenerateResult r = gen.generate(std::span<const int32_t>(ids), o, stream);
  wait.reset();
  echo();
  r.timings.load_ms = m.load_ms;
  const bool interrupted = r.stop == StopReason::Cancelled;

  const bool quiet = verbosity() == Verbosity::Quiet;
  if (f.json) {
    auto out = json::Value::object();
    out.set("model", path.string());
    out.set("prompt_ids", ids_json(r.prompt_ids));
    out.set("ids", ids_json(r.ids));
    out.set("text", r.text);
    out.set("stop", std::string(to_string(r.stop)));
    if (!r.message.empty()) out.set("message", r.message);
    out.set("seed", o.sampling.seed);
    out.set("sampling", o.sampling.describe());
    out.set("timings", timings_json(r.timings));
    std::printf("%s\n", out.dump().c_str());
  } else {
    if (r.text.empty() || r.text.back() != '\n') std::printf("\n");  // the shell's prompt on a line of its own
    std::fflush(stdout);
    if (!quiet) {
      std::fprintf(stderr, "\n%s", r.timings.summary().c_str());
      std::fprintf(stderr, "stopped: %s\n", std::string(to_string(r.stop)).c_str());
    }
  }
  if (r.stop == StopReason::ContextFull) warn(in_flag_terms(r.message));
  return interrupted ? 130 : 0;  // as a shell reports Ctrl-C
}

Register reg{
    {"generate", "continue a prompt with a language model (default: the built-in wgc-tiny-dict)", [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_text(app, "--prompt,-p", f->prompt, "the text to continue");
       add_text(app, "-f,--file", f->file, "the text to continue, from a file ('-': stdin)")->type_name("FILE");
       add_numbers(app, "--tokens", f->tokens, "the prompt as token ids instead (comma-separated)");
       add_model_flags(app, f->m, 128);
       app.add_flag("--no-special", f->no_special, "text prompts: no BOS or other special tokens added");
       app.add_flag("--echo", f->echo, "print the prompt before the generated text (as llama-cli does)");
       app.add_flag("--json", f->json, "print the result as JSON (ids, text, stop reason, seed, timings)");
       return [f] { return generate(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
