// wgc chat: an interactive conversation (llm::ChatSession) with line editing and history
// (libedit) on a terminal, plain lines from a pipe. Ctrl-C stops the reply (twice: quits), Ctrl-D
// or /exit ends the session, /reset starts over.
#include "cli/command.h"
#include "cli/llm_flags.h"
#include "gpu/context.h"
#include "llm/generate/chat_session.h"
#include "util/error.h"

#include <atomic>
#include <csignal>
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

// Ctrl-C: the first stops the reply (or the line being typed); a second one before that is
// handled ends the process as Ctrl-C does elsewhere.
std::atomic<bool> g_interrupted{false};

void on_sigint(int) {
  if (g_interrupted.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

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
  Generator gen(start_engine(m, llm_backend(f.m.gpu), f.m.ctx, !f.m.no_q8), m.tok);
  ChatSession session(gen, f.system);
  info("sampling: " + o.sampling.describe());

  LineReader in;
  const bool quiet = verbosity() == Verbosity::Quiet;
  if (session.plain() && !quiet)
    std::fprintf(stderr,
                 "note: this model has no chat template: what you type is continued as plain text "
                 "(the conversation so far stays in the context)\n");
  if (in.tty() && !quiet) std::fprintf(stderr, "/exit or Ctrl-D leaves, /reset starts over, Ctrl-C stops a reply\n");

  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old);
  o.cancel = &g_interrupted;
  o.on_prefill = prefill_progress();

  while (auto line = in.read()) {
    if (*line == "/exit" || *line == "/quit") break;
    if (*line == "/reset") {
      session.reset();
      if (!quiet) std::fprintf(stderr, "(conversation cleared)\n");
      continue;
    }
    if (line->empty()) continue;
    g_interrupted = false;
    ChatReply r;
    try {
      r = session.send(*line, o, [](std::string_view s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
      });
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      continue;
    }
    std::printf("\n");
    std::fflush(stdout);
    if (r.dropped_turns > 0)
      warn("the context was full: the oldest " + std::to_string(r.dropped_turns) + " turn" +
           (r.dropped_turns == 1 ? " was" : "s were") + " dropped" + (f.system ? " (the system prompt is kept)" : ""));
    if (r.result.stop == StopReason::Cancelled && !quiet) std::fprintf(stderr, "(stopped)\n");
    if (r.result.stop == StopReason::ContextFull) warn(r.result.message + "; the next turn drops the oldest turns");
    if (f.timings) {
      r.result.timings.load_ms = m.load_ms;
      std::fprintf(stderr, "%s", r.result.timings.summary().c_str());
    }
    g_interrupted = false;
  }
  ::sigaction(SIGINT, &old, nullptr);
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
