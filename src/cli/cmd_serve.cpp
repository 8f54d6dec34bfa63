// wgc serve: an OpenAI-compatible HTTP server for one model (src/server, docs/serving.md).
#include "cli/command.h"
#include "cli/llm_backend.h"
#include "gpu/context.h"
#include "llm/chat/chat_template.h"
#include "llm/generate/default_model.h"
#include "llm/generate/generator.h"
#include "llm/serve/scheduler.h"
#include "server/server.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include <unistd.h>

namespace wgc::cli {
namespace {

namespace fs = std::filesystem;

int signal_pipe[2] = {-1, -1};

int int_arg(Args& a, std::string_view name, int fallback, int lo, int hi) {
  double v = a.number_or(name, fallback);
  if (v != double(int64_t(v)) || v < lo || v > hi)
    throw Error("wgc serve: " + std::string(name) + " expects an integer in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  return int(v);
}

int serve(Args& a) {
  auto g = gpu_flags(a);
  auto model_opt = a.option("--model");
  fs::path path = model_opt ? fs::path(*model_opt) : llm::default_model_path();
  std::string tokenizer = a.option_or("--tokenizer", "");
  std::string name = a.option_or("--name", path.stem().string());
  server::ServerOptions so;
  so.host = a.option_or("--host", "127.0.0.1");
  so.port = int_arg(a, "--port", 8080, 0, 65535);
  so.api_key = a.option_or("--api-key", "");
  if (so.api_key.empty())
    if (const char* env = std::getenv("WGC_API_KEY")) so.api_key = env;
  so.max_body_bytes = size_t(int_arg(a, "--max-body", 8 << 20, 1024, 1 << 30));
  so.shutdown_grace = std::chrono::seconds(int_arg(a, "--shutdown-grace", 30, 0, 3600));
  llm::SchedulerOptions sched;
  sched.parallel = int_arg(a, "--parallel", 8, 1, 1024);
  sched.max_queue = int_arg(a, "--max-queue", 64, 0, 100000);
  sched.max_ctx = int_arg(a, "--ctx", 0, 0, 1 << 24);
  sched.kv_blocks = int_arg(a, "--kv-blocks", 0, 0, 1 << 24);
  sched.kv_block_tokens = int_arg(a, "--kv-block", sched.kv_block_tokens, 1, 4096);
  sched.prefill_chunk = int_arg(a, "--prefill-chunk", sched.prefill_chunk, 1, 1 << 16);
  if (auto k = a.option("--kernel")) {  // the serving engine's linear kernels (docs/serving.md)
    if (*k == "batched")
      sched.linear = llm::LinearVersion::Batched;
    else if (*k == "batched-q8")
      sched.linear = llm::LinearVersion::BatchedQ8;
    else if (*k == "naive")
      sched.linear = llm::LinearVersion::Naive;
    else if (*k != "auto")
      throw Error("wgc serve: --kernel expects auto, batched, batched-q8 or naive, got '" + *k + "'");
  }
  int gpu = int_arg(a, "--gpu", -1, -1, 1024);
  a.done();

  llm::ModelFile file = llm::open_model(path);
  for (const auto& note : file.config().notes) std::fprintf(stderr, "wgc: note: %s\n", note.c_str());
  auto tok = llm::find_tokenizer(file, tokenizer);
  if (!tok)
    throw Error("wgc serve: " + path.string() +
                " has no tokenizer (no tokenizer.json beside it): give --tokenizer PATH");
  llm::ChatTemplate chat = llm::ChatTemplate::for_tokenizer(*tok);

  LlmBackend be = llm_backend(g, gpu);
  llm::EngineOptions eo;
  eo.max_ctx = sched.max_ctx;
  eo.device = be.device;
  llm::LlamaModel model(be.ctx, file, eo);
  say_engine_choice(model);
  llm::Scheduler scheduler(model, *tok, sched);

  server::ModelInfo info{name, &*tok, &chat, scheduler.options().max_ctx, llm::default_sampling(path)};
  server::Server srv(scheduler, info, be.ctx, so);
  std::fprintf(stderr, "wgc serve: %s on %s, context %d, parallel %d, KV pool %d blocks of %d tokens%s%s\n",
               name.c_str(), engine_name(model, be).c_str(), info.max_ctx, sched.parallel,
               scheduler.options().kv_blocks, scheduler.options().kv_block_tokens,
               chat.is_fallback() ? ", no chat template (plain-text chat rendering)" : "",
               so.api_key.empty() ? "" : ", API key required");
  std::fprintf(stderr, "wgc serve: listening on http://%s:%d\n", so.host.c_str(), srv.port());

  // SIGINT/SIGTERM: the handler only writes the signal's number into a pipe (async-signal-safe,
  // whichever thread it lands on, including threads libraries started before us); a watcher
  // thread reads it and shuts the server down gracefully. A zero byte tells the watcher to leave.
  if (pipe(signal_pipe) != 0) throw Error("wgc serve: pipe() failed");
  struct sigaction sa {};
  sa.sa_handler = [](int sig) {
    unsigned char b = static_cast<unsigned char>(sig);
    [[maybe_unused]] ssize_t n = write(signal_pipe[1], &b, 1);
  };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::thread watcher([&] {
    unsigned char sig = 0;
    while (read(signal_pipe[0], &sig, 1) < 0 && errno == EINTR) {
    }
    if (sig == 0) return;
    std::fprintf(stderr, "wgc serve: %s: finishing running requests, then stopping\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv.shutdown();
  });
  srv.run();
  unsigned char zero = 0;
  [[maybe_unused]] ssize_t n = write(signal_pipe[1], &zero, 1);
  watcher.join();
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  std::fprintf(stderr, "wgc serve: stopped\n");
  return 0;
}

Register reg{{"serve",
              "[--model MODEL] [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N] [--max-queue N] "
              "[--kv-blocks N] [--kv-block 16] [--prefill-chunk 256] [--kernel auto|batched|batched-q8|naive] "
              "[--api-key KEY] [--gpu INDEX] [--name ID] [--max-body BYTES] [--shutdown-grace S] [--tokenizer PATH] "
              "[--backend B]",
              "OpenAI-compatible HTTP server for a language model (default: the built-in wgc-tiny-dict)", serve}};

}  // namespace
}  // namespace wgc::cli
