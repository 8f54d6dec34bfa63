// The HTTP server of `wgc serve`: OpenAI's completions, chat completions and Responses API and
// Anthropic's Messages API (with streaming), llama-server's /tokenize and /detokenize, /health,
// Prometheus /metrics and the web pages, over the models of a ModelPool. See docs/serving.md.
//
//   Server server(scheduler, model_info, ctx, {.host = "127.0.0.1", .port = 8080});
//   std::thread t([&] { server.run(); });   // until shutdown()
//   ...
//   server.shutdown();                        // e.g. from a signal-watching thread
#pragma once

#include "gpu/context.h"
#include "llm/serve/scheduler.h"
#include "server/embeddings.h"
#include "server/model_pool.h"
#include "server/request.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace wgc::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port (see Server::port)
  std::string api_key;               // non-empty: requests need "Authorization: Bearer <key>"
  size_t max_body_bytes = 8u << 20;  // larger request bodies get 413 (chunked ones too)
  // Open connections at once (0: one per sequence and queue slot and 16 more, at most 1000), and
  // of them from one client address (0: three quarters of that). Past a cap, an idle or slow
  // connection is closed to make room, else the new one gets 503 (server/connections.h).
  int max_connections = 0;
  int max_connections_per_client = 0;
  // A request's line, headers and body must arrive within this time of its first byte (else 408).
  std::chrono::milliseconds request_timeout{30000};
  int retry_after_s = 1;                    // Retry-After of a 503 when the queue is full
  std::chrono::seconds shutdown_grace{30};  // shutdown(): how long running requests may finish
  // POST /v1/embeddings runs this model (server/embeddings.h); none: that route answers 404.
  std::shared_ptr<Embedder> embedder;
};

class Server {
 public:
  // Binds the socket (wgc::Error naming host and port when it cannot). The scheduler and model info
  // outlive the server. context: the model's current GPU context, for the metrics (none: the CPU
  // engine; a new one after the scheduler rebuilt the model on a new device).
  using ContextSource = std::function<std::optional<Context>()>;
  Server(llm::Scheduler& scheduler, const ModelInfo& model, ContextSource context, ServerOptions options = {});
  // Several models (model_pool.h), each request's `model` picking one. limits: the scheduler
  // options the connection caps are derived from (parallel, max_queue: one model's).
  Server(std::shared_ptr<ModelPool> pool, const llm::SchedulerOptions& limits, ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;  // the bound port
  // Serves until shutdown() has finished; returns normally then.
  void run();
  // Graceful stop, from any thread: new requests get 503; running requests may finish within
  // shutdown_grace, then are cancelled (streams end with an error event); at the latest a second
  // later every connection is closed, whatever its client does, the listening socket closes and
  // run() returns. Safe to call more than once.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgc::server
