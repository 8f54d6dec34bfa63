#include "server/metrics.h"

#include <cstdio>

namespace wgc::server {
namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + num(value) +
         "\n";
}

}  // namespace

void Histogram::observe(double seconds) {
  for (size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) {
      ++counts_[i];
      break;
    }
  ++count_;
  sum_ += seconds;
}

std::string Histogram::text(const std::string& name, const std::string& help) const {
  std::string out = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + num(kBuckets[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return out;
}

void Metrics::request(const std::string& route, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{route, status}];
}

void Metrics::first_token(double seconds) {
  std::lock_guard lock(mu_);
  ttft_.observe(seconds);
}

void Metrics::finished(double seconds) {
  std::lock_guard lock(mu_);
  e2e_.observe(seconds);
}

std::string Metrics::text(const EngineGauges& g) const {
  std::string out;
  {
    std::lock_guard lock(mu_);
    out +=
        "# HELP wgc_requests_total HTTP requests answered, by route and status.\n"
        "# TYPE wgc_requests_total counter\n";
    for (const auto& [key, n] : requests_)
      out += "wgc_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
             std::to_string(n) + "\n";
    out += ttft_.text("wgc_time_to_first_token_seconds", "Time from a generation request to its first token.");
    out += e2e_.text("wgc_request_duration_seconds", "Time from a generation request to its last token.");
  }
  const llm::SchedulerStats& s = g.scheduler;
  metric(out, "wgc_generation_requests_total", "counter", "Generation requests finished (any reason).",
         double(s.requests));
  metric(out, "wgc_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", double(s.prompt_tokens));
  metric(out, "wgc_prompt_tokens_cached_total", "counter", "Prompt tokens found in the KV cache (not recomputed).",
         double(s.cached_prompt_tokens));
  metric(out, "wgc_generation_tokens_total", "counter", "Tokens generated.", double(s.generated_tokens));
  metric(out, "wgc_generation_tokens_per_second", "gauge", "Recent aggregate decode speed.", s.decode_tokens_per_s);
  metric(out, "wgc_draft_tokens_total", "counter", "Speculative decoding: tokens the draft model proposed.",
         double(s.draft_proposed));
  metric(out, "wgc_draft_tokens_accepted_total", "counter",
         "Speculative decoding: proposed tokens the model kept (equal to its own).", double(s.draft_accepted));
  metric(out, "wgc_draft_verify_passes_total", "counter",
         "Speculative decoding: a sequence's proposals checked in one forward (each gives 1 + accepted tokens).",
         double(s.draft_verifies));
  metric(out, "wgc_queue_length", "gauge", "Requests waiting for a sequence.", s.queued);
  metric(out, "wgc_running_sequences", "gauge", "Requests being generated.", s.running);
  metric(out, "wgc_kv_blocks_used", "gauge", "KV-cache blocks in use.", s.kv_blocks_used);
  metric(out, "wgc_kv_blocks_free", "gauge", "KV-cache blocks free.", s.kv_blocks_total - s.kv_blocks_used);
  metric(out, "wgc_gpu_buffer_bytes", "gauge", "Bytes of GPU buffers allocated (incl. the reuse pool).",
         double(g.gpu_buffer_bytes));
  metric(out, "wgc_gpu_buffers", "gauge", "GPU buffers allocated (incl. the reuse pool).", double(g.gpu_buffers));
  metric(out, "wgc_device_recovering", "gauge", "1 while the model is rebuilt after the GPU device was lost.",
         s.recovering ? 1 : 0);
  metric(out, "wgc_device_recoveries_total", "counter", "Times the model was rebuilt on a new GPU device.",
         double(s.recoveries));
  metric(out, "wgc_device_last_recovery_seconds", "gauge", "How long the last rebuild took, from the loss to serving.",
         s.last_recovery_s);
  metric(out, "wgc_http_connections", "gauge", "HTTP connections open.", double(g.connections_open));
  metric(out, "wgc_http_connections_refused_total", "counter",
         "HTTP connections refused with 503 at the connection caps.", double(g.connections_refused));
  metric(out, "wgc_http_connections_evicted_total", "counter",
         "HTTP connections closed to make room (idle, or sending their request slowly).",
         double(g.connections_evicted));
  metric(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", double(g.resident_bytes));
  return out;
}

}  // namespace wgc::server
