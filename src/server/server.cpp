#include "server/server.h"

#include "gpu/tensor.h"
#include "server/anthropic.h"
#include "server/guarded_http.h"
#include "server/metrics.h"
#include "server/response.h"
#include "server/responses.h"
#include "server/web_assets.h"
#include "util/json.h"

#include <httplib.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>

namespace wgc::server {
namespace {

using json::Value;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The routes, for the metrics' labels (anything else counts as "other": a label per unknown path
// would let clients grow the metrics without bound).
const char* route_label(const std::string& path) {
  static const char* known[] = {
      "/",           "/health",      "/metrics",        "/v1/models",           "/tokenize",
      "/detokenize", "/v1/messages", "/v1/completions", "/v1/chat/completions", "/v1/responses"};
  if (path == "/v1/embeddings") return "/v1/embeddings";
  for (const char* k : known)
    if (path == k) return k;
  if (path.starts_with("/v1/models/")) return "/v1/models/{id}";
  if (web_asset(path)) return "web";
  return "other";
}

// Routes open without the API key: the health check and the web pages.
bool needs_key(const std::string& path) {
  return path != "/health" &&
         (path.starts_with("/v1/") || path == "/tokenize" || path == "/detokenize" || path == "/metrics");
}

// The API key a request carries: "Authorization: Bearer KEY", or Anthropic's "x-api-key: KEY" (what
// the Anthropic client sends).
std::optional<std::string> sent_key(const httplib::Request& req) {
  const std::string auth = req.get_header_value("Authorization");
  if (auth.starts_with("Bearer ")) return auth.substr(7);
  if (req.has_header("x-api-key")) return req.get_header_value("x-api-key");
  return std::nullopt;
}

// Constant-time comparison (the key is a secret).
bool same_key(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(error_body(e), "application/json");
}

uint64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

// One generation request: the scheduler's worker pushes events, the HTTP thread takes them.
struct Exchange {
  Exchange(std::shared_ptr<ModelPool::Lease> l, ApiRequest r, std::string id, Clock::time_point arrived)
      : lease(std::move(l)),
        request(std::move(r)),
        builder(request, lease->info(), std::move(id), int64_t(std::time(nullptr))),
        start(arrived) {}

  std::shared_ptr<ModelPool::Lease> lease;  // its model stays loaded while the exchange lives
  ApiRequest request;
  ResponseBuilder builder;                     // refers to `request`
  std::optional<AnthropicResponse> anthropic;  // /v1/messages: answered in Anthropic's shapes
  std::optional<ResponsesAnswer> responses;    // /v1/responses: answered as a `response`
  Clock::time_point start;                     // the request's arrival
  uint64_t sched_id = 0;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<llm::TokenEvent> events;
  std::optional<llm::RequestResult> result;  // until take() moves it out
  bool ended = false;                        // on_done has run
  bool first_token_seen = false;
  std::atomic<bool> abandoned{false};  // the client went away: on_token ends the request

  // The answer in the request's API: streamed events, or the body from the collected events.
  std::string first_events() {
    return anthropic ? anthropic->first_events() : responses ? responses->first_events() : builder.first_chunk();
  }
  std::string event(const llm::TokenEvent& e) {
    return anthropic ? anthropic->events(e) : responses ? responses->events(e) : builder.chunk(e);
  }
  std::string last_events(const llm::RequestResult& r) {
    return anthropic ? anthropic->last_events(r) : responses ? responses->last_events(r) : builder.last_chunks(r);
  }
  void add(const llm::TokenEvent& e) { anthropic ? anthropic->add(e) : responses ? responses->add(e) : builder.add(e); }
  std::string body(const llm::RequestResult& r) {
    return anthropic ? anthropic->body(r) : responses ? responses->body(r) : builder.body(r);
  }

  // Waits up to `timeout` for events or the end; moves them out.
  void take(std::deque<llm::TokenEvent>& out, std::optional<llm::RequestResult>& done,
            std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, timeout, [&] { return !events.empty() || result.has_value(); });
    out.swap(events);
    if (result) {
      done = std::move(result);
      result.reset();
    }
  }
};

HttpLimits http_limits(const ServerOptions& o, const llm::SchedulerOptions& so) {  // so: one model's
  HttpLimits l;
  size_t total = o.max_connections > 0 ? size_t(o.max_connections)
                                       : std::min<size_t>(size_t(so.parallel + so.max_queue + 16), 1000);
  l.connections.total = total;
  l.connections.per_client =
      o.max_connections_per_client > 0 ? size_t(o.max_connections_per_client) : std::max<size_t>(1, total * 3 / 4);
  l.request_timeout = o.request_timeout;
  l.max_body_bytes = o.max_body_bytes;
  return l;
}

bool chunked(const httplib::Request& req) {
  std::string te = req.get_header_value("Transfer-Encoding");
  std::transform(te.begin(), te.end(), te.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return te.find("chunked") != std::string::npos;
}

// The request's body, at most `limit` bytes as received (a chunked body decoded). The body is read
// here rather than by httplib, which caps neither a chunked body nor one without a length and
// takes an application/x-www-form-urlencoded body (curl -d) for a form of at most 8 KB.
std::string read_body(const httplib::Request& req, const httplib::ContentReader& reader, const HttpLimits& limits) {
  HttpConnection* conn = current_http_connection();
  std::string body;
  // A request with neither a length nor chunks has no body (RFC 9112 6.3).
  if (req.has_header("Content-Length") || chunked(req)) {
    bool too_large = false;
    bool ok = reader([&](const char* data, size_t n) {
      if (n > limits.max_body_bytes - body.size()) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (!ok) {
      if (conn) conn->close_after_response();  // the rest of the body is not read
      if (too_large) throw cut_error(Cut::BodyTooLarge, limits);
      if (conn && conn->cut() != Cut::None) throw cut_error(conn->cut(), limits);
      throw ApiError(400, "the request body could not be read (it ended early, or its chunked encoding is malformed)");
    }
  }
  if (conn) conn->enter(Phase::Handling);
  return body;
}

// POST /tokenize's answer, written a few thousand tokens at a time: with pieces it is ~10x the
// text, and an 8 MiB text must not cost gigabytes.
void send_tokens(httplib::Response& res, const std::string& body, const llm::Tokenizer& tok) {
  constexpr size_t kPart = 4096;
  auto t = std::make_shared<TokenizeAnswer>(tokenize_request(body, tok));
  if (t->ids.size() <= kPart) {
    res.set_content(tokenize_answer_part(*t, 0, t->ids.size(), tok), "application/json");
    return;
  }
  auto next = std::make_shared<size_t>(0);
  res.set_chunked_content_provider("application/json", [t, next, &tok](size_t, httplib::DataSink& sink) {
    size_t end = std::min(*next + kPart, t->ids.size());
    std::string part = tokenize_answer_part(*t, *next, end, tok);
    if (!sink.write(part.data(), part.size())) return false;
    *next = end;
    if (end == t->ids.size()) sink.done();
    return true;
  });
}

}  // namespace

struct Server::Impl {
  Impl(std::shared_ptr<ModelPool> p, Server::ContextSource c, const llm::SchedulerOptions& so, ServerOptions o)
      : pool(std::move(p)), context(std::move(c)), opt(std::move(o)), http(http_limits(opt, so)) {}

  std::shared_ptr<ModelPool> pool;
  Server::ContextSource context;
  ServerOptions opt;
  GuardedHttpServer http;
  Metrics metrics;
  int64_t created = int64_t(std::time(nullptr));
  std::string id_prefix;
  std::atomic<uint64_t> next_id{1};

  // Generation requests in flight (their scheduler ids), for shutdown.
  std::mutex mu;
  std::condition_variable idle_cv;
  std::map<const Exchange*, std::weak_ptr<Exchange>> active;
  std::atomic<bool> stopping{false};
  std::once_flag shutdown_once;

  void routes();
  // The API a generation request came in (its body is translated into a chat request first).
  enum class Dialect { OpenAI, Anthropic, Responses };
  void generate(const std::string& body, httplib::Response& res, Api api, Dialect dialect = Dialect::OpenAI);
  void stream(const std::shared_ptr<Exchange>& x, httplib::Response& res);
  void wait_whole(Exchange& x, httplib::Response& res);
  uint64_t submit(const std::shared_ptr<Exchange>& x);
  void finish(const Exchange& x);
  std::string models_json(const std::string* one) const;
  llm::SchedulerStats stats() const;  // of every loaded model
  EngineGauges gauges() const;
  void do_shutdown();
};

uint64_t Server::Impl::submit(const std::shared_ptr<Exchange>& x) {
  llm::Request r = x->request.generation;
  auto on_token = [this, x](const llm::TokenEvent& e) {
    {
      std::lock_guard lock(x->mu);
      if (!x->first_token_seen) {
        x->first_token_seen = true;
        metrics.first_token(seconds_since(x->start));
      }
      x->events.push_back(e);
    }
    x->cv.notify_one();
    return !x->abandoned.load();
  };
  auto on_done = [this, x](const llm::RequestResult& result) {
    {
      std::lock_guard lock(x->mu);
      x->result = result;
      x->ended = true;
    }
    if (result.error.empty() && result.stop != llm::StopReason::Cancelled) metrics.finished(seconds_since(x->start));
    x->cv.notify_one();
  };
  // The id goes into `active` under the lock before any callback can end the request.
  std::lock_guard lock(mu);
  try {
    x->sched_id = x->lease->scheduler().submit(std::move(r), on_token, on_done);
  } catch (const llm::QueueFull& e) {
    throw ApiError(503, "the server is busy (" + plain_message(e) + "); retry later", "unavailable_error", "",
                   "queue_full");
  } catch (const llm::NotAccepting&) {
    throw ApiError(503, "the server is shutting down", "unavailable_error", "", "shutting_down");
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw ApiError(400, plain_message(e));
  }
  active[x.get()] = x;
  return x->sched_id;
}

void Server::Impl::finish(const Exchange& x) {
  {
    std::lock_guard lock(mu);
    active.erase(&x);
  }
  idle_cv.notify_all();
}

void Server::Impl::generate(const std::string& raw, httplib::Response& res, Api api, Dialect dialect) {
  auto arrived = Clock::now();
  // The OpenAI request it means.
  ResponsesRequest responses;
  if (dialect == Dialect::Responses) responses = responses_to_chat(raw);
  const std::string body = dialect == Dialect::Anthropic   ? anthropic_to_openai(raw)
                           : dialect == Dialect::Responses ? responses.chat
                                                           : raw;
  std::shared_ptr<ModelPool::Lease> lease = pool->acquire(requested_model(body));  // loads it when needed
  ApiRequest parsed = parse_request(api, body, lease->info());
  std::string id = (dialect == Dialect::Anthropic   ? "msg_"
                    : dialect == Dialect::Responses ? "resp_"
                    : api == Api::Chat              ? "chatcmpl-"
                                                    : "cmpl-") +
                   id_prefix + std::to_string(next_id++);
  auto x = std::make_shared<Exchange>(std::move(lease), std::move(parsed), id, arrived);
  if (dialect == Dialect::Anthropic) x->anthropic.emplace(x->request, x->lease->info(), id);
  if (dialect == Dialect::Responses)
    x->responses.emplace(x->request, x->lease->info(), id, int64_t(std::time(nullptr)), std::move(responses.echo));
  submit(x);
  if (x->request.stream)
    stream(x, res);
  else
    wait_whole(*x, res);
}

void Server::Impl::wait_whole(Exchange& x, httplib::Response& res) {
  std::optional<llm::RequestResult> done;
  while (!done) {
    std::deque<llm::TokenEvent> events;
    x.take(events, done, std::chrono::milliseconds(1000));
    for (const auto& e : events) x.add(e);
  }
  finish(x);
  res.set_content(x.body(*done), "application/json");
}

void Server::Impl::stream(const std::shared_ptr<Exchange>& x, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx: pass events on as they come
  auto started = std::make_shared<bool>(false);
  auto last_write = std::make_shared<Clock::time_point>(Clock::now());
  res.set_chunked_content_provider(
      "text/event-stream",
      [x, started, last_write](size_t, httplib::DataSink& sink) {
        std::string out;
        if (!*started) {
          *started = true;
          out = x->first_events();
        }
        std::deque<llm::TokenEvent> events;
        std::optional<llm::RequestResult> done;
        if (out.empty()) x->take(events, done, std::chrono::milliseconds(250));
        for (const auto& e : events) out += x->event(e);
        if (done) out += x->last_events(*done);
        // A comment line now and then while nothing comes: a client that went away is noticed
        // (the write fails) during a long prefill or queue wait, not only at the next token.
        if (out.empty() && seconds_since(*last_write) > 1.0) out = ": keep-alive\n\n";
        if (!out.empty()) {
          if (!sink.write(out.data(), out.size())) {
            x->abandoned = true;
            x->lease->scheduler().cancel(x->sched_id);
            return false;
          }
          *last_write = Clock::now();
        }
        if (done) sink.done();
        return true;
      },
      [this, x](bool) {
        // However the response ended (finished, client gone, server stopping): free the sequence.
        bool ended;
        {
          std::lock_guard lock(x->mu);
          ended = x->ended;
        }
        if (!ended) {
          x->abandoned = true;
          x->lease->scheduler().cancel(x->sched_id);
        }
        finish(*x);
      });
}

std::string Server::Impl::models_json(const std::string* one) const {
  Value data = Value::array();
  for (const ModelPool::Entry& e : pool->list()) {
    if (one && e.name != *one) continue;
    Value m = Value::object();
    m.set("id", e.name);
    m.set("object", "model");
    m.set("created", created);
    m.set("owned_by", "wgc");
    Value meta = Value::object();
    if (e.info) {  // what is known of a model once it is loaded
      const ModelInfo& model = *e.info;
      meta.set("n_ctx", model.max_ctx);
      meta.set("n_vocab", uint64_t(model.tokenizer->vocab_size()));
      meta.set("chat_template", model.chat_template && !model.chat_template->is_fallback() ? "model" : "plain-text");
    }
    if (pool->size() > 1) {
      meta.set("loaded", e.loaded);
      meta.set("bytes", e.bytes);
    }
    m.set("meta", std::move(meta));
    if (one) return m.dump();
    data.push_back(std::move(m));
  }
  Value out = Value::object();
  out.set("object", "list");
  out.set("data", std::move(data));
  return out.dump();
}

llm::SchedulerStats Server::Impl::stats() const {
  llm::SchedulerStats t;
  pool->for_each_loaded([&](const std::string&, llm::Scheduler& sched) {
    llm::SchedulerStats s = sched.stats();
    t.queued += s.queued;
    t.running += s.running;
    t.kv_blocks_used += s.kv_blocks_used;
    t.kv_blocks_total += s.kv_blocks_total;
    t.requests += s.requests;
    t.prompt_tokens += s.prompt_tokens;
    t.cached_prompt_tokens += s.cached_prompt_tokens;
    t.generated_tokens += s.generated_tokens;
    t.draft_proposed += s.draft_proposed;
    t.draft_accepted += s.draft_accepted;
    t.draft_verifies += s.draft_verifies;
    t.decode_tokens_per_s += s.decode_tokens_per_s;
    if (s.recovering && !t.recovering) {
      t.recovering = true;
      t.device_error = s.device_error;
    }
    t.recoveries += s.recoveries;
    t.last_recovery_s = std::max(t.last_recovery_s, s.last_recovery_s);
  });
  return t;
}

EngineGauges Server::Impl::gauges() const {
  EngineGauges g;
  g.scheduler = stats();
  if (auto ctx = context ? context() : std::nullopt) {
    g.gpu_buffer_bytes = allocated_buffer_bytes(*ctx);
    g.gpu_buffers = allocated_buffers(*ctx);
  }
  g.resident_bytes = resident_bytes();
  auto c = const_cast<GuardedHttpServer&>(http).connections().counts();
  g.connections_open = c.open;
  g.connections_refused = c.refused;
  g.connections_evicted = c.evicted;
  return g;
}

void Server::Impl::routes() {
  // Every handler answers errors in OpenAI's shape.
  auto answer = [](httplib::Response& res, auto&& fn) {
    try {
      fn();
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
    }
  };
  auto guarded = [answer](auto fn) {
    return [fn, answer](const httplib::Request& req, httplib::Response& res) { answer(res, [&] { fn(req, res); }); };
  };
  // POST handlers take the body read by read_body (bounded, whatever its encoding).
  auto with_body = [this, answer](auto fn) {
    return
        [this, fn, answer](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
          answer(res, [&] { fn(read_body(req, reader, http.limits()), res); });
        };
  };
  auto json = [](httplib::Response& res, const std::string& body) { res.set_content(body, "application/json"); };

  http.Get("/health", guarded([this](const httplib::Request&, httplib::Response& res) {
             llm::SchedulerStats s = stats();
             Value h = Value::object();
             if (stopping) {
               res.status = 503;
               h.set("status", "shutting down");
             } else if (s.recovering) {
               // The GPU device was lost: the model is being rebuilt; requests wait in the queue.
               res.status = 503;
               h.set("status", "recovering");
               h.set("error", plain_message(Error(s.device_error)));
             } else {
               h.set("status", "ok");
             }
             if (s.recoveries) {
               h.set("recoveries", s.recoveries);
               h.set("last_recovery_s", s.last_recovery_s);
             }
             res.set_content(h.dump(), "application/json");
           }));
  http.Get("/v1/models",
           guarded([this, json](const httplib::Request&, httplib::Response& res) { json(res, models_json(nullptr)); }));
  http.Get("/v1/models/(.+)", guarded([this, json](const httplib::Request& req, httplib::Response& res) {
             const std::string id = req.matches[1];
             if (!pool->knows(id)) {
               std::string known;
               for (const auto& e : pool->list()) known += (known.empty() ? "'" : ", '") + e.name + "'";
               throw ApiError(404, "the model '" + id + "' does not exist (this server has " + known + ")",
                              "invalid_request_error", "model", "model_not_found");
             }
             json(res, models_json(&id));
           }));
  http.Post("/v1/completions", with_body([this](const std::string& body, httplib::Response& res) {
              generate(body, res, Api::Completions);
            }));
  http.Post("/v1/chat/completions",
            with_body([this](const std::string& body, httplib::Response& res) { generate(body, res, Api::Chat); }));
  // Anthropic's Messages API: its errors in its own shape.
  http.Post("/v1/messages", with_body([this](const std::string& body, httplib::Response& res) {
              try {
                generate(body, res, Api::Chat, Dialect::Anthropic);
              } catch (const ApiError& e) {
                res.status = e.status;
                res.set_content(anthropic_error_body(e), "application/json");
              }
            }));
  // OpenAI's Responses API: errors in OpenAI's shape, naming the Responses field.
  http.Post("/v1/responses", with_body([this](const std::string& body, httplib::Response& res) {
              try {
                generate(body, res, Api::Chat, Dialect::Responses);
              } catch (ApiError& e) {
                e.param = responses_param(e.param);
                throw;
              }
            }));
  http.Post("/v1/embeddings", with_body([this, json](const std::string& body, httplib::Response& res) {
              if (!opt.embedder)
                throw ApiError(404, "this server has no embedding model (start it with --embedding-model PATH)",
                               "invalid_request_error", "model", "model_not_found");
              json(res, embeddings_response(body, *opt.embedder));
            }));
  http.Post("/tokenize", with_body([this](const std::string& body, httplib::Response& res) {
              auto lease = pool->acquire("");  // the default model's tokenizer
              send_tokens(res, body, *lease->info().tokenizer);
            }));
  http.Post("/detokenize", with_body([this, json](const std::string& body, httplib::Response& res) {
              auto lease = pool->acquire("");
              json(res, detokenize(body, *lease->info().tokenizer));
            }));
  http.Get("/metrics", guarded([this](const httplib::Request&, httplib::Response& res) {
             res.set_content(metrics.text(gauges()), "text/plain; version=0.0.4");
           }));
  // The web pages (server/web_assets.h); "/" without a chat page points to the API instead.
  http.Get("/(.*)", guarded([json](const httplib::Request& req, httplib::Response& res) {
             if (auto asset = web_asset(req.path)) {
               res.set_content(std::string(asset->body), std::string(asset->mime));
             } else if (auto file = web_local_file(req.path)) {
               std::ifstream in(file->file, std::ios::binary);
               std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
               if (!in.good() && !in.eof()) throw Error("wgc serve: could not read " + file->file.string());
               res.set_content(std::move(body), std::string(file->mime));
             } else if (auto to = web_redirect(req.path)) {
               size_t query = req.target.find('?');  // kept: /kernels?run=1 -> /kernels/?run=1
               res.set_redirect(*to + (query == std::string::npos ? "" : req.target.substr(query)), 301);
             } else if (req.path == "/") {
               json(res, R"({"name":"wgc serve","api":["GET /v1/models","POST /v1/chat/completions",)"
                         R"("POST /v1/completions","POST /v1/responses","POST /v1/messages","POST /tokenize",)"
                         R"("POST /detokenize",)"
                         R"("GET /health","GET /metrics"],)"
                         R"("docs":"docs/serving.md"})");
             } else {
               res.status = 404;  // the error handler writes the body
             }
           }));

  // Any other method and path: 404 (httplib would answer 400 for an unrouted POST). The body is
  // read (bounded) and dropped, so that the connection can serve the next request.
  auto not_found = with_body([](const std::string&, httplib::Response& res) { res.status = 404; });
  http.Post("/(.*)", not_found);
  http.Put("/(.*)", not_found);
  http.Delete("/(.*)", not_found);
  http.Patch("/(.*)", not_found);

  // Before routing (the head is read, the body not yet): the body's declared size and encoding,
  // then the API key (the health check and the web pages need none).
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    HttpConnection* conn = current_http_connection();
    bool has_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE";
    if (conn) conn->enter(has_body ? Phase::Body : Phase::Handling);
    auto refuse = [&](const ApiError& e) {
      if (conn) conn->close_after_response();  // the body stays unread
      send_error(res, e);
      return httplib::Server::HandlerResponse::Handled;
    };
    if (req.has_header("Content-Length")) {
      const std::string v = req.get_header_value("Content-Length");
      if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos ||
          req.get_header_value_count("Content-Length") > 1)
        return refuse(ApiError(400, "the Content-Length header is not one decimal number", "invalid_request_error", "",
                               "bad_content_length"));
      if (std::stoull(v) > opt.max_body_bytes) return refuse(cut_error(Cut::BodyTooLarge, http.limits()));
      if (!has_body && v != "0" && conn) conn->close_after_response();  // a GET with a body: not read
    } else if (chunked(req) && !has_body && conn) {
      conn->close_after_response();
    }
    if (has_body && req.get_header_value("Content-Type").starts_with("multipart/"))
      return refuse(ApiError(415, "a multipart body is not accepted: send JSON (Content-Type: application/json)",
                             "invalid_request_error", "", "unsupported_media_type"));
    if (!opt.api_key.empty() && needs_key(req.path)) {
      const std::optional<std::string> key = sent_key(req);
      if (!key || !same_key(*key, opt.api_key)) {
        res.set_header("WWW-Authenticate", "Bearer");
        ApiError e(401, "invalid or missing API key (send \"Authorization: Bearer <key>\" or \"x-api-key: <key>\")",
                   "authentication_error", "", "invalid_api_key");
        if (req.path != "/v1/messages") return refuse(e);
        if (conn) conn->close_after_response();  // the Messages API's errors in Anthropic's shape
        res.status = e.status;
        res.set_content(anthropic_error_body(e), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // "Expect: 100-continue" (curl, for bodies over 1 MB): a body past the limit is refused before
  // the client sends it.
  http.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response&) {
    const std::string v = req.get_header_value("Content-Length");
    if (!v.empty() && v.size() < 20 && v.find_first_not_of("0123456789") == std::string::npos &&
        std::stoull(v) > opt.max_body_bytes) {
      if (HttpConnection* conn = current_http_connection()) conn->close_after_response();
      return 413;
    }
    return 100;
  });
  // Statuses without a body (unknown route 404, 400 from the HTTP parser, or a request cut by a
  // limit while httplib read its head) get one in OpenAI's shape; a 503 gets Retry-After.
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        HttpConnection* conn = current_http_connection();
        if (conn && conn->cut() != Cut::None && res.body.empty()) {
          ApiError e = cut_error(conn->cut(), http.limits());
          res.status = e.status;
          send_error(res, e);
        }
        if (res.status == 503 && !res.has_header("Retry-After"))
          res.set_header("Retry-After", std::to_string(opt.retry_after_s));
        if (conn && (conn->closing() || conn->cut() != Cut::None)) res.set_header("Connection", "close");
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 404)
          send_error(res, ApiError(404, "no route " + req.method + " " + req.path + " (see GET /)",
                                   "invalid_request_error", "", "not_found"));
        else if (res.status == 413)
          send_error(res, cut_error(Cut::BodyTooLarge, http.limits()));
        else if (res.status == 400)
          send_error(res, ApiError(400,
                                   "malformed HTTP request (the request line, or a header line: at most 8192 bytes "
                                   "each)",
                                   "invalid_request_error"));
        else
          send_error(res, ApiError(res.status, "HTTP error " + std::to_string(res.status), "invalid_request_error"));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics.request(route_label(req.path), res.status);
  });
}

void Server::Impl::do_shutdown() {
  stopping = true;
  pool->stop_accepting();
  std::unique_lock lock(mu);
  if (!idle_cv.wait_for(lock, opt.shutdown_grace, [&] { return active.empty(); })) {
    std::fprintf(stderr, "wgc serve: cancelling %zu request(s) still running after %llds\n", active.size(),
                 (long long)opt.shutdown_grace.count());
    for (auto& [p, weak] : active)
      if (auto x = weak.lock()) x->lease->scheduler().cancel(x->sched_id);
    // Their streams end with an error event; a client that does not read gets its connection
    // closed below.
    idle_cv.wait_for(lock, std::chrono::seconds(1), [&] { return active.empty(); });
  }
  lock.unlock();
  // Whatever the clients do (send slowly, read nothing, keep idle connections): every connection
  // is cut, so the workers return at once and run() ends.
  http.close_connections();
  http.stop();
}

namespace {
std::shared_ptr<ModelPool> pool_of_one(llm::Scheduler& scheduler, const ModelInfo& model,
                                       const Server::ContextSource& context) {
  LoadedModel m;
  m.info = model;
  m.scheduler = &scheduler;
  m.context = context;
  return std::make_shared<ModelPool>(std::move(m));
}
}  // namespace

Server::Server(llm::Scheduler& scheduler, const ModelInfo& model, ContextSource context, ServerOptions options)
    : Server(pool_of_one(scheduler, model, context), scheduler.options(), std::move(options)) {}

Server::Server(std::shared_ptr<ModelPool> pool, const llm::SchedulerOptions& limits, ServerOptions options)
    : impl_(std::make_unique<Impl>(
          pool, [pool] { return pool->context(); }, limits, std::move(options))) {
  Impl& s = *impl_;
  std::random_device rd;
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%08x-", unsigned(rd()));
  s.id_prefix = prefix;
  s.http.set_tcp_nodelay(true);
  s.routes();
  int bound = s.http.bind(s.opt.host, s.opt.port);
  if (bound > 0) s.opt.port = bound;
  if (bound <= 0)
    throw Error("wgc serve: cannot listen on " + s.opt.host + ":" + std::to_string(s.opt.port) + " (" +
                std::strerror(errno) + ")");
}

Server::~Server() = default;

int Server::port() const { return impl_->opt.port; }

void Server::run() { impl_->http.listen_after_bind(); }

void Server::shutdown() {
  std::call_once(impl_->shutdown_once, [this] { impl_->do_shutdown(); });
}

}  // namespace wgc::server
