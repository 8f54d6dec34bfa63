// wgc serve: an OpenAI-compatible HTTP server for one model, or several with --models-dir or
// repeated --model NAME=PATH (src/server, docs/serving.md).
#include "cli/command.h"
#include "cli/embedding_model.h"
#include "cli/llm_backend.h"
#include "cli/llm_flags.h"
#include "gpu/context.h"
#include "llm/chat/chat_template.h"
#include "llm/generate/default_model.h"
#include "llm/generate/generator.h"
#include "llm/generate/speculative.h"
#include "llm/serve/scheduler.h"
#include "llm/serve/served_model.h"
#include "server/server.h"
#include "util/signals.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

#include <unistd.h>

namespace wgc::cli {
namespace {

namespace fs = std::filesystem;

int signal_pipe[2] = {-1, -1};

struct Flags {
  GpuFlags gpu;
  EngineFlags split;
  std::vector<std::string> models;  // --model: PATH, or NAME=PATH (repeatable)
  std::optional<std::string> name, kernel, embedding_model, draft_model;
  std::string tokenizer;
  server::ServerOptions so;
  llm::SchedulerOptions sched;  // (draft: set by serve() from draft_model)
  std::optional<std::string> api_key_file, models_dir, max_gpu_memory;
  int load_timeout_s = 120;
  int max_body = 8 << 20, grace_s = 30, gpu_index = -1, threads = 0;
  int max_conn = 0, max_conn_client = 0;
  double request_timeout_s = 30;
};

// The API key from --api-key-file: its first line (a key in the process list is every user's).
std::string read_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("wgc serve: cannot read --api-key-file " + path + " (" + std::strerror(errno) + ")");
  std::string key;
  std::getline(in, key);
  while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) key.pop_back();
  if (key.empty()) throw Error("wgc serve: --api-key-file " + path + " is empty (the key is its first line)");
  return key;
}

// The embedding model's id in the API: its file's (or folder's) name.
std::string embedding_id(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// `v` within [lo, hi], else a UsageError naming the flag.
int in_range(int v, const char* flag, int lo, int hi) {
  if (v < lo || v > hi)
    throw UsageError(std::string(flag) + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got " + std::to_string(v));
  return v;
}

// Serves until SIGINT/SIGTERM: the handler only writes the signal's number into a pipe
// (async-signal-safe, whichever thread it lands on, including threads libraries started before
// us); a watcher thread reads it and shuts the server down gracefully. A zero byte tells the
// watcher to leave.
int run_until_signal(server::Server& srv) {
  if (pipe(signal_pipe) != 0) throw Error("wgc serve: pipe() failed");
  struct sigaction sa {};
  sa.sa_handler = [](int sig) {
    unsigned char b = static_cast<unsigned char>(sig);
    [[maybe_unused]] ssize_t n = write(signal_pipe[1], &b, 1);
  };
  sigemptyset(&sa.sa_mask);
  const bool keep_sigint = !signal_ignored(SIGINT);  // `wgc serve &` in a script: SIGINT stays ignored
  if (keep_sigint) sigaction(SIGINT, &sa, nullptr);
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
  if (keep_sigint) signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  std::fprintf(stderr, "wgc serve: stopped\n");
  return 0;
}

// What one loaded model owns (ModelPool's LoadedModel::owner), in construction order.
struct OwnedModel {
  llm::ModelFile file;
  llm::Tokenizer tok;
  llm::ChatTemplate chat;
  llm::ServedModel served;
  llm::Scheduler scheduler;
  OwnedModel(llm::ModelFile f, llm::Tokenizer t, std::optional<Context> ctx, const llm::EngineOptions& eo,
             const llm::SchedulerOptions& so, const std::string& name)
      : file(std::move(f)),
        tok(std::move(t)),
        chat(llm::ChatTemplate::for_tokenizer(tok)),
        served(file, std::move(ctx), eo),
        scheduler(served.model(), tok, so, served.recovery([name](const std::string& line) {
          std::fprintf(stderr, "wgc serve: %s: %s\n", name.c_str(), line.c_str());
        })) {}
};

// The bytes a position takes in the main pool and in the sliding-window layers' pool
// (--kv-swa-blocks; 0 without it: every layer in the main pool), in the model's cache type.
std::pair<double, double> kv_pool_per_token(const llm::LlamaModel& m, const llm::SchedulerOptions& o) {
  if (o.kv_swa_blocks == 0) return {m.kv_bytes_per_token(), 0.0};
  const llm::ModelConfig& c = m.config();
  int64_t sliding = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) sliding += c.layer_is_sliding(l) ? 1 : 0;
  const double per_layer = m.kv_bytes_per_token() / double(std::max<int64_t>(1, c.n_layers));
  return {per_layer * double(c.n_layers - sliding), per_layer * double(sliding)};
}

// Bytes of the KV pools as the scheduler resolved them.
uint64_t kv_pool_bytes(const llm::LlamaModel& m, const llm::SchedulerOptions& o) {
  const auto [main, swa] = kv_pool_per_token(m, o);
  return uint64_t((double(o.kv_blocks) * main + double(o.kv_swa_blocks) * swa) * double(o.kv_block_tokens));
}

// ", KV cache f16 (64.0 KiB per token)": the startup line's part about the cache type (with
// --kv-swa-blocks: "(8.0 KiB per token, 40.0 in the sliding-window pool)").
std::string kv_cache_note(const llm::LlamaModel& m, const llm::SchedulerOptions& o) {
  const auto [main, swa] = kv_pool_per_token(m, o);
  char buf[160];
  if (o.kv_swa_blocks > 0)
    std::snprintf(buf, sizeof buf, ", KV cache %s (%.1f KiB per token, %.1f in the sliding-window pool)",
                  std::string(to_string(m.cache_type())).c_str(), main / 1024, swa / 1024);
  else
    std::snprintf(buf, sizeof buf, ", KV cache %s (%.1f KiB per token)", std::string(to_string(m.cache_type())).c_str(),
                  main / 1024);
  return buf;
}

// A --model NAME=PATH: a model served under NAME.
struct NamedModel {
  std::string name;
  fs::path path;
};

// --model's text: NAME=PATH where it names no file as a whole and NAME is an id (letters, digits,
// . _ - :, at most 64), else a PATH (nullopt).
std::optional<std::pair<std::string, std::string>> split_named(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq > 64 || eq + 1 == text.size()) return std::nullopt;
  std::error_code ec;
  if (fs::exists(fs::path(text), ec)) return std::nullopt;
  for (size_t i = 0; i < eq; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '-' && c != ':') return std::nullopt;
  }
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

// Several models: the default one (--model, or the built-in one), each --model NAME=PATH, and
// every *.gguf in --models-dir, each loaded on first use within --max-gpu-memory
// (server/model_pool.h).
int serve_pool(const Flags& f, const fs::path& default_path, const std::string& default_name,
               const std::vector<NamedModel>& named, const std::string& tokenizer, const server::ServerOptions& so,
               const llm::SchedulerOptions& sched, int gpu) {
  std::vector<server::ModelSpec> specs;
  auto size_of = [](const fs::path& p) {
    std::error_code ec;
    uint64_t n = fs::is_regular_file(p, ec) ? fs::file_size(p, ec) : 0;
    return ec ? 0 : n;
  };
  specs.push_back({default_name, default_path, size_of(default_path)});
  for (const NamedModel& m : named) {
    for (const auto& s : specs)
      if (s.name == m.name)
        throw UsageError("wgc serve: two models named '" + m.name + "' (" + s.path.string() + " and " +
                         m.path.string() + ")");
    specs.push_back({m.name, m.path, size_of(m.path)});
  }
  const size_t given = specs.size();
  if (f.models_dir) {
    const fs::path dir = *f.models_dir;
    if (!fs::is_directory(dir)) throw Error("wgc serve: --models-dir " + dir.string() + " is not a folder");
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".gguf") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
      // The default model's own file is served once (a link to it under another name: twice).
      if (fs::absolute(p).lexically_normal() == fs::absolute(default_path).lexically_normal()) continue;
      for (size_t i = 0; i < given; ++i)
        if (p.stem().string() == specs[i].name)
          throw Error("wgc serve: " + p.string() + " has the name of the model '" + specs[i].name + "' (" +
                      specs[i].path.string() + "): rename the file, or give that model another name");
      specs.push_back({p.stem().string(), p, size_of(p)});
    }
  }
  const uint64_t budget = f.max_gpu_memory ? server::parse_bytes(*f.max_gpu_memory, "--max-gpu-memory") : 0;
  LlmBackend be = llm_backend(f.gpu, gpu);
  llm::EngineOptions eo;
  eo.max_ctx = sched.max_ctx;
  eo.threads = checked_threads(f.threads);
  eo.device = be.device;
  eo.cache_type = cache_type_flag(f.split, be.device == llm::Device::Cpu);
  eo.swa_full = f.split.swa_full;
  auto loader = [&be, eo, sched, tokenizer, default_path](const server::ModelSpec& spec) {
    llm::ModelFile file = llm::open_model(spec.path);
    // --tokenizer is the default model's; the others' are their own.
    auto tok = llm::find_tokenizer(file, spec.path == default_path ? tokenizer : std::string());
    if (!tok) throw Error("wgc serve: " + spec.path.string() + " has no tokenizer (no tokenizer.json beside it)");
    auto owned = std::make_shared<OwnedModel>(std::move(file), std::move(*tok), be.ctx, eo, sched, spec.name);
    server::LoadedModel m;
    m.scheduler = &owned->scheduler;
    m.info = server::ModelInfo{spec.name, &owned->tok, &owned->chat, owned->scheduler.options().max_ctx,
                               llm::default_sampling(spec.path)};
    llm::ServedModel* served = &owned->served;
    m.context = [served] { return served->context(); };
    m.bytes = spec.estimate_bytes + kv_pool_bytes(owned->served.model(), owned->scheduler.options());
    m.owner = owned;
    return m;
  };
  auto pool = std::make_shared<server::ModelPool>(
      specs, loader, budget, std::chrono::seconds(in_range(f.load_timeout_s, "--model-load-timeout", 1, 3600)));
  server::Server srv(pool, sched, so);
  std::string names;
  for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
  std::fprintf(stderr, "wgc serve: %zu models (%s), loaded on first use%s%s\n", specs.size(), names.c_str(),
               budget ? (", within " + std::to_string(budget >> 20) + " MiB").c_str() : "",
               so.api_key.empty() ? "" : ", API key required");
  std::fprintf(stderr, "wgc serve: listening on http://%s:%d\n", so.host.c_str(), srv.port());
  return run_until_signal(srv);
}

// --draft-model, --draft-tokens (speculative decoding: docs/serving.md).
void add_draft_flags(CLI::App& app, Flags& f) {
  add_text(app, "--draft-model,--model-draft", f.draft_model,
           "speculative decoding: a small model of the same tokenizer proposes tokens that the model checks in its "
           "batched steps (greedy requests: their tokens unchanged; sampled: the same distribution)")
      ->type_name("MODEL");
  add_number(app, "--draft-tokens,--draft-max", f.sched.draft_tokens,
             "speculative decoding: tokens the draft proposes per step and sequence (1.." +
                 std::to_string(llm::kMaxDraftTokens) + ")");
}

int serve(const Flags& f) {
  // --model PATH (at most one: the default model) and --model NAME=PATH (each a model of the pool;
  // the first is the default one where no PATH is given).
  std::optional<std::string> plain;
  std::vector<NamedModel> named;
  for (const std::string& m : f.models) {
    if (auto nm = split_named(m)) {
      fs::path p;
      try {
        p = model_path(nm->second);
      } catch (const Error& e) {
        throw Error("wgc serve: model '" + nm->first + "': " + e.what());
      }
      std::error_code ec;  // checked now: the pool opens it only on the first request for it
      if (!fs::exists(p, ec))
        throw Error("wgc serve: model '" + nm->first + "': " + p.string() + " is no file or folder");
      named.push_back({nm->first, p});
    } else if (plain) {
      throw UsageError("wgc serve: --model " + *plain + " and --model " + m +
                       ": one model is given by its PATH; give the others as --model NAME=PATH");
    } else {
      plain = m;
    }
  }
  fs::path path;
  std::string name;
  if (plain || named.empty()) {
    path = model_path(plain);
    name = f.name.value_or(path.stem().string());
  } else {  // the first NAME=PATH is the default model
    if (f.name) throw UsageError("wgc serve: --name names a --model PATH; --model NAME=PATH names itself");
    path = named.front().path;
    name = named.front().name;
    named.erase(named.begin());
  }
  const std::string& tokenizer = f.tokenizer;
  server::ServerOptions so = f.so;
  in_range(so.port, "--port", 0, 65535);
  if (f.api_key_file) {
    if (!so.api_key.empty()) throw UsageError("give --api-key or --api-key-file, not both");
    so.api_key = read_key_file(*f.api_key_file);
  }
  if (so.api_key.empty())
    if (const char* env = std::getenv("WGC_API_KEY")) so.api_key = env;
  so.max_body_bytes = size_t(in_range(f.max_body, "--max-body", 1024, 1 << 30));
  so.shutdown_grace = std::chrono::seconds(in_range(f.grace_s, "--shutdown-grace", 0, 3600));
  so.max_connections = in_range(f.max_conn, "--max-connections", 0, 1000);
  so.max_connections_per_client = in_range(f.max_conn_client, "--max-connections-per-client", 0, 1000);
  if (!(f.request_timeout_s >= 0.1 && f.request_timeout_s <= 3600))
    throw UsageError("--request-timeout expects seconds in [0.1, 3600], got " + std::to_string(f.request_timeout_s));
  so.request_timeout = std::chrono::milliseconds(int64_t(f.request_timeout_s * 1000));
  llm::SchedulerOptions sched = f.sched;
  in_range(sched.parallel, "--parallel", 1, 1024);
  in_range(sched.max_queue, "--max-queue", 0, 100000);
  in_range(sched.max_ctx, "--ctx", 0, 1 << 24);
  in_range(sched.kv_blocks, "--kv-blocks", 0, 1 << 24);
  in_range(sched.kv_block_tokens, "--kv-block", 1, 4096);
  in_range(sched.kv_swa_blocks, "--kv-swa-blocks", 0, 1 << 24);
  in_range(sched.prefill_chunk, "--prefill-chunk", 1, 1 << 16);
  if (const auto& k = f.kernel) {  // the serving engine's linear kernels (docs/serving.md)
    if (*k == "batched")
      sched.linear = llm::LinearVersion::Batched;
    else if (*k == "batched-q8")
      sched.linear = llm::LinearVersion::BatchedQ8;
    else if (*k == "naive")
      sched.linear = llm::LinearVersion::Naive;
    else if (*k != "auto")
      throw UsageError("--kernel expects auto, batched, batched-q8 or naive, got '" + *k + "'");
  }
  int gpu = in_range(f.gpu_index, "--gpu", -1, 1024);

  llm::ModelFile file = llm::open_model(path);
  for (const auto& note : file.config().notes) info("note: " + note);
  auto tok = llm::find_tokenizer(file, tokenizer);
  if (!tok)
    throw Error("wgc serve: " + path.string() +
                " has no tokenizer (no tokenizer.json beside it): give --tokenizer PATH");
  llm::ChatTemplate chat = llm::ChatTemplate::for_tokenizer(*tok);

  if (f.draft_model) {
    if (f.models_dir || !named.empty())
      throw UsageError("--draft-model serves one model: not with --models-dir or several --model NAME=PATH");
    in_range(sched.draft_tokens, "--draft-tokens", 1, llm::kMaxDraftTokens);
  }
  if (f.models_dir || !named.empty()) return serve_pool(f, path, name, named, tokenizer, so, sched, gpu);

  LlmBackend be = llm_backend(f.gpu, gpu, &f.split);
  llm::EngineOptions eo;
  eo.max_ctx = sched.max_ctx;
  eo.threads = checked_threads(f.threads);
  be.apply(eo);
  if (f.embedding_model)  // POST /v1/embeddings (server/embeddings.h)
    so.embedder = load_embedder(*f.embedding_model, embedding_id(*f.embedding_model), be, eo.threads);
  // A lost GPU device (driver reset, GPU reclaimed) is survived: the scheduler has the model
  // rebuilt on a new device from the file (llm/serve/served_model.h).
  llm::ServedModel served(file, be.ctx, eo);
  const std::string engine = engine_name(served.model(), be);
  say_engine_choice(served.model());
  llm::DeviceRecovery recovery =
      served.recovery([](const std::string& line) { std::fprintf(stderr, "wgc serve: %s\n", line.c_str()); });
  // --draft-model: speculative decoding in the scheduler's steps (docs/serving.md), the draft on the
  // same backend with the target's context, its tokenizer checked before its engine starts.
  std::optional<llm::ModelFile> draft_file;
  std::optional<llm::ServedModel> draft;
  std::string draft_note;
  if (f.draft_model) {
    const fs::path dp = model_path(f.draft_model);
    draft_file.emplace(llm::open_model(dp));
    auto dtok = llm::find_tokenizer(*draft_file, "");
    try {
      llm::check_draft(file.config(), &*tok, draft_file->config(), dtok ? &*dtok : nullptr, dp.string());
    } catch (const Error& e) {
      std::string why = e.what();
      if (why.starts_with("wgc: ")) why.erase(0, 5);
      throw Error("wgc serve: --draft-model " + dp.string() + " cannot draft for --model " + path.string() + ": " +
                  why);
    }
    llm::EngineOptions deo = eo;
    deo.max_ctx = served.model().max_ctx();
    draft.emplace(*draft_file, be.ctx, deo);
    sched.draft = &draft->model();
    if (recovery) recovery.rebuild_draft = [&draft]() -> llm::LlamaModel& { return draft->rebuild(); };
    draft_note = ", draft " + dp.filename().string() + " (" + std::to_string(sched.draft_tokens) + " tokens)";
  }
  llm::Scheduler scheduler(served.model(), *tok, sched, std::move(recovery));

  server::ModelInfo info{name, &*tok, &chat, scheduler.options().max_ctx, llm::default_sampling(path)};
  server::Server srv(
      scheduler, info, [&served] { return served.context(); }, so);
  const std::string swa_note =
      scheduler.options().kv_swa_blocks > 0
          ? ", sliding-window pool " + std::to_string(scheduler.options().kv_swa_blocks) + " blocks (no prefix cache)"
          : "";
  std::fprintf(stderr, "wgc serve: %s on %s, context %d, parallel %d, KV pool %d blocks of %d tokens%s%s%s%s%s\n",
               name.c_str(), engine.c_str(), info.max_ctx, sched.parallel, scheduler.options().kv_blocks,
               scheduler.options().kv_block_tokens, swa_note.c_str(),
               kv_cache_note(served.model(), scheduler.options()).c_str(), draft_note.c_str(),
               chat.is_fallback() ? ", no chat template (plain-text chat rendering)" : "",
               so.api_key.empty() ? "" : ", API key required");
  std::fprintf(stderr, "wgc serve: listening on http://%s:%d\n", so.host.c_str(), srv.port());
  return run_until_signal(srv);
}

Register reg{{"serve", "OpenAI-compatible HTTP server for a language model (default: the built-in wgc-tiny-dict)",
              [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                app.add_option("--model,-m", f->models,
                               std::string(kModelHelp) +
                                   "; NAME=PATH (repeatable) serves that model too, under NAME (the first one is "
                                   "the default model where no PATH is given)")
                    ->allow_extra_args(false)
                    ->type_name("PATH|NAME=PATH");
                app.add_option("--tokenizer", f->tokenizer,
                               "a tokenizer.json, folder or .gguf (default: the model's own)")
                    ->type_name("PATH");
                add_text(app, "--name", f->name, "the model's id in the API (default: the file's name)");
                add_text(app, "--embedding-model", f->embedding_model,
                         "an embedding model (BERT family, Qwen3-Embedding) for /v1/embeddings (its id: its name)")
                    ->type_name("PATH");
                app.add_option("--host", f->so.host, "the address to listen on");
                add_number(app, "--port", f->so.port, "the port to listen on (0: any free one)");
                app.add_option("--api-key", f->so.api_key,
                               "require this bearer token (visible in the process list: prefer --api-key-file "
                               "or WGC_API_KEY)")
                    ->type_name("KEY")
                    ->default_str("");
                add_text(app, "--api-key-file", f->api_key_file, "require the bearer token on this file's first line")
                    ->type_name("PATH");
                add_number(app, "--parallel", f->sched.parallel, "sequences decoded together");
                add_draft_flags(app, *f);
                add_ctx_flag(app, f->sched.max_ctx, "context per sequence in tokens; 0: the model's, capped");
                add_threads_flag(app, f->threads);
                add_number(app, "--max-queue", f->sched.max_queue,
                           "waiting requests beyond which new ones get 503 with Retry-After");
                add_number(app, "--kv-blocks", f->sched.kv_blocks,
                           "KV-cache blocks shared by the sequences (default 0: parallel x ctx / block, at most "
                           "48 GiB)");
                add_number(app, "--kv-block", f->sched.kv_block_tokens, "tokens per KV-cache block");
                add_number(app, "--kv-swa-blocks", f->sched.kv_swa_blocks,
                           "a KV pool of this many blocks for the sliding-window layers alone, whose blocks behind "
                           "each sequence's window are freed as it advances (default 0: one pool, every position "
                           "kept; turns the prefix cache off)");
                add_number(app, "--prefill-chunk", f->sched.prefill_chunk, "prompt tokens per step");
                add_text(app, "--kernel", f->kernel,
                         "the engine's linear kernels: auto, batched, batched-q8 or naive (default: auto)")
                    ->type_name("K");
                add_number(app, "--max-body", f->max_body, "the largest request body in bytes (chunked ones too)");
                add_number(app, "--max-connections", f->max_conn,
                           "open connections at once (default 0: parallel + max-queue + 16, at most 1000); past "
                           "it an idle or slow one is closed, else 503");
                add_number(app, "--max-connections-per-client", f->max_conn_client,
                           "open connections from one address (default 0: 3/4 of --max-connections; behind a proxy "
                           "give --max-connections)");
                add_number(app, "--request-timeout", f->request_timeout_s,
                           "seconds a request's headers and body may take to arrive (else 408)");
                add_number(app, "--shutdown-grace", f->grace_s, "seconds running requests get to finish on SIGTERM");
                add_text(app, "--models-dir", f->models_dir,
                         "serve every *.gguf in this folder too (named by file stem), each loaded on the first "
                         "request whose 'model' names it")
                    ->type_name("DIR");
                add_text(app, "--max-gpu-memory", f->max_gpu_memory,
                         "with several models: their memory budget (weights + KV pools, e.g. 8G); the least "
                         "recently used idle model is unloaded to make room")
                    ->type_name("BYTES");
                add_number(app, "--model-load-timeout", f->load_timeout_s,
                           "with several models: seconds a request waits for its model to load or to fit");
                add_number(app, "--gpu", f->gpu_index, "the adapter's index (wgc info lists them); -1: the default");
                add_gpu_flags(app, f->gpu);
                add_engine_flags(app, f->split);
                return [f] { return serve(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
