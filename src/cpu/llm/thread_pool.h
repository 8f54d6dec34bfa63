// ThreadPool: the CPU engine's workers. parallel_for hands out the indices of a job to the calling
// thread and the workers through one atomic counter (so uneven work balances itself) and returns
// when all are done. Between jobs the workers spin briefly (a decode step runs ~100 jobs of tens
// of microseconds each, and a wake-up from sleep costs about as much), then sleep on a futex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace wgc::llm::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1, the caller counts as one
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Runs f(i, thread) for every i in [0, n) (thread: 0 .. size()-1, for per-thread scratch);
  // returns when every call returned. Not reentrant: one job at a time, from one thread. An
  // exception thrown by f is rethrown here (the first one; the remaining indices are skipped).
  void parallel_for(int64_t n, const std::function<void(int64_t i, int thread)>& f);

 private:
  void worker(int id);
  void work(int thread);

  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<uint32_t> generation_{0};  // bumped per job; workers wait on it
  std::atomic<int> busy_{0};             // workers still in the current job
  std::atomic<bool> quit_{false}, failed_{false};
  std::exception_ptr error_;
};

}  // namespace wgc::llm::cpu
