// The server's counters and histograms, written as Prometheus text (GET /metrics). Thread-safe.
#pragma once

#include "llm/serve/scheduler.h"

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace wgc::server {

// A Prometheus histogram of seconds with fixed buckets.
class Histogram {
 public:
  static constexpr std::array<double, 13> kBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  void observe(double seconds);
  // "# HELP", "# TYPE" and the _bucket/_sum/_count lines of `name`.
  std::string text(const std::string& name, const std::string& help) const;

 private:
  std::array<uint64_t, kBuckets.size()> counts_{};  // per bucket (not cumulative)
  uint64_t count_ = 0;
  double sum_ = 0;
};

// What the engine and the device report at the time of the scrape.
struct EngineGauges {
  llm::SchedulerStats scheduler;
  uint64_t gpu_buffer_bytes = 0;  // allocated on the device, incl. the context's pool
  uint64_t gpu_buffers = 0;
  uint64_t resident_bytes = 0;  // the process's resident memory (RSS)
  // HTTP connections: open now; refused at a cap; closed to make room (idle or slow).
  uint64_t connections_open = 0, connections_refused = 0, connections_evicted = 0;
};

class Metrics {
 public:
  void request(const std::string& route, int status);  // one answered HTTP request
  void first_token(double seconds);                    // time from the request to its first token
  void finished(double seconds);                       // a generation's time from request to end
  std::string text(const EngineGauges& g) const;       // the Prometheus exposition

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  Histogram ttft_, e2e_;
};

}  // namespace wgc::server
