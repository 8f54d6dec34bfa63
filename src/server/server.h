// The HTTP server of `wgc serve`: OpenAI's completions and chat completions API (with streaming),
// llama-server's /tokenize and /detokenize, /health, Prometheus /metrics and the web pages, over
// one model served by a Scheduler. See docs/serving.md.
//
//   Server server(scheduler, model_info, ctx, {.host = "127.0.0.1", .port = 8080});
//   std::thread t([&] { server.run(); });   // until shutdown()
//   ...
//   server.shutdown();                        // e.g. from a signal-watching thread
#pragma once

#include "gpu/context.h"
#include "llm/serve/scheduler.h"
#include "server/request.h"

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace wgc::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port (see Server::port)
  std::string api_key;               // non-empty: requests need "Authorization: Bearer <key>"
  size_t max_body_bytes = 8u << 20;  // larger request bodies get 413
  int threads = 0;        // HTTP worker threads (0: one per sequence and queue slot and 8 more, at most 1024)
  int retry_after_s = 1;  // Retry-After of a 503 when the queue is full
  std::chrono::seconds shutdown_grace{30};  // shutdown(): how long running requests may finish
};

class Server {
 public:
  // Binds the socket (wgc::Error naming host and port when it cannot). The scheduler and model info
  // outlive the server. ctx: the model's GPU context, for the metrics (none: the CPU engine).
  Server(llm::Scheduler& scheduler, const ModelInfo& model, std::optional<Context> ctx, ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;  // the bound port
  // Serves until shutdown() has finished; returns normally then.
  void run();
  // Graceful stop, from any thread: new requests get 503; running requests may finish within
  // shutdown_grace, then are cancelled (streams end with an error event); then the listening
  // socket closes and run() returns. Safe to call more than once.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgc::server
