// wgc chat: an interactive conversation (llm::ChatSession) with line editing and history
// (libedit) on a terminal, plain lines from a pipe. Ctrl-C stops the reply (twice: quits), Ctrl-D
// or /exit ends the session, /reset starts over.
#include "cli/command.h"
#include "cli/llm_flags.h"
#include "gpu/context.h"
#include "llm/generate/chat_session.h"
#include "util/error.h"
#include "util/signals.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include <editline/readline.h>
#include <unistd.h>

namespace wgc::cli {
namespace {

using namespace wgc::llm;
namespace fs = std::filesystem;

struct Flags {
  ModelFlags m;
  std::optional<std::string> system;
  bool timings = false;
};

// Ctrl-C (util/signals.h): the first stops the reply (or the line being typed); a second one
// before that is handled ends the process as Ctrl-C does elsewhere.
std::atomic<bool> g_interrupted{false};

constexpr const char* kChatHelp =
    "  /help     this list\n"
    "  /reset    start over: forget the conversation (the system prompt stays)\n"
    "  /exit     leave (also /quit, Ctrl-D)\n"
    "  Ctrl-C    stop the reply being written (twice: leave)\n"
    "Anything else is sent to the model. Line editing and history (arrow keys) work on a terminal.\n";

// One line of input: libedit on a terminal (editing, history), std::getline otherwise.
class LineReader {
 public:
  LineReader() : tty_(isatty(STDIN_FILENO) && isatty(STDERR_FILENO)) {
    if (tty_) {
      rl_outstream = stderr;  // the prompt and the editing go to stderr, replies to stdout
      using_history();
    }
  }
  bool tty() const { return tty_; }

  // The next line; nullopt at the end of the input (Ctrl-D, EOF). A line cut by Ctrl-C is "".
  std::optional<std::string> read() {
    if (!tty_) {
      std::string line;
      if (!std::getline(std::cin, line)) return std::nullopt;
      return line;
    }
    char* l = readline("> ");
    if (!l) {
      if (g_interrupted.exchange(false)) {  // Ctrl-C while typing: a fresh line
        std::fputs("\n", stderr);
        return std::string();
      }
      std::fputs("\n", stderr);  // Ctrl-D: end on a new line
      return std::nullopt;
    }
    std::string line(l);
    std::free(l);
    if (!line.empty()) add_history(line.c_str());
    return line;
  }

 private:
  bool tty_;
};

int chat(const Flags& f) {
  fs::path path = model_path(f.m.model);
  GenerateOptions o = generate_options(f.m, path);
  LoadedModel m = open_model_files(path, f.m.tokenizer);
  if (!m.tok) throw Error("wgc chat: " + path.string() + " has no tokenizer: give --tokenizer PATH");
  const LlmBackend backend = llm_backend(f.m.gpu, -1, &f.m.split);
  Generator gen(start_engine(m, backend, f.m.ctx, !f.m.no_q8, f.m.threads), m.tok);
  const std::unique_ptr<LoadedModel> draft = start_draft(f.m, m, backend, gen);
  ChatSession session(gen, f.system);
  info("sampling: " + o.sampling.describe());

  LineReader in;
  const bool quiet = verbosity() == Verbosity::Quiet;
  if (session.plain() && !quiet)
    std::fprintf(stderr,
                 "note: this model has no chat template: what you type is continued as plain text "
                 "(the conversation so far stays in the context)\n");
  if (in.tty() && !quiet) std::fprintf(stderr, "/help lists the commands; Ctrl-C stops a reply, Ctrl-D leaves\n");

  InterruptFlag interrupt(g_interrupted);
  o.cancel = &g_interrupted;
  o.on_prefill = prefill_progress();

  bool first_reply = true;
  while (auto line = in.read()) {
    if (*line == "/exit" || *line == "/quit") break;
    if (*line == "/reset") {
      session.reset();
      if (!quiet) std::fprintf(stderr, "(conversation cleared)\n");
      continue;
    }
    if (*line == "/help" || *line == "/?") {
      std::fputs(kChatHelp, stderr);
      continue;
    }
    if (line->starts_with('/') && line->find(' ') == std::string::npos && line->size() > 1 && line->size() < 16 &&
        line->find('/', 1) == std::string::npos) {  // "/exti": a mistyped command, not a message
      std::fprintf(stderr,
                   "unknown command %s: /help lists them (a message that begins with / : type it after a space)\n",
                   line->c_str());
      continue;
    }
    if (line->empty()) continue;
    g_interrupted = false;
    ChatReply r;
    std::unique_ptr<Waiting> wait = first_reply ? first_steps_wait(m) : nullptr;  // SwiftShader compiling
    first_reply = false;
    try {
      r = session.send(*line, o, [&wait](std::string_view s) {
        wait.reset();
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
      });
      wait.reset();
    } catch (const Error& e) {
      wait.reset();
      std::fprintf(stderr, "%s\n", in_flag_terms(e.what()).c_str());
      continue;
    }
    std::printf("\n");
    std::fflush(stdout);
    const int64_t trained = m.file.config().max_position_embeddings;
    const std::string ctx_hint = " (--ctx N gives a larger context" +
                                 (trained > 0 ? ", up to the model's " + std::to_string(trained) : std::string()) + ")";
    if (r.dropped_turns > 0)
      warn("the context was full: the oldest " + std::to_string(r.dropped_turns) + " turn" +
           (r.dropped_turns == 1 ? " was" : "s were") + " dropped" + (f.system ? " (the system prompt is kept)" : "") +
           ctx_hint);
    if (r.result.stop == StopReason::Cancelled && !quiet) std::fprintf(stderr, "(stopped)\n");
    if (r.result.stop == StopReason::ContextFull)
      warn(in_flag_terms(r.result.message) + "; the next turn drops the oldest turns");
    if (f.timings) {
      r.result.timings.load_ms = m.load_ms;
      std::fprintf(stderr, "%s", r.result.timings.summary().c_str());
    }
    g_interrupted = false;
  }
  return 0;
}

Register reg{
    {"chat", "interactive chat with a language model (line editing on a terminal; /exit, /reset)", [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_text(app, "--system", f->system, "the system prompt (kept when old turns make room)");
       add_model_flags(app, f->m, 256);
       app.add_flag("--timings", f->timings, "print the timings after each reply");
       return [f] { return chat(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
