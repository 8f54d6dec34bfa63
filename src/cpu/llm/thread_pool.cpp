#include "cpu/llm/thread_pool.h"

#include <chrono>
#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace wgc::llm::cpu {
namespace {

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// How long a worker spins for the next job before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);

std::mutex error_mu;

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  quit_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work(int thread) {
  for (;;) {
    const int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= job_n_ || failed_.load(std::memory_order_relaxed)) return;
    try {
      (*job_)(i, thread);
    } catch (...) {
      std::lock_guard lk(error_mu);
      if (!failed_.exchange(true)) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker(int id) {
  uint32_t seen = 0;
  for (;;) {
    // Spin, then sleep, until the generation moves on.
    auto until = std::chrono::steady_clock::now() + kSpin;
    uint32_t g;
    for (int k = 0;; ++k) {
      g = generation_.load(std::memory_order_acquire);
      if (g != seen) break;
      if ((k & 63) == 0 && std::chrono::steady_clock::now() > until) {
        generation_.wait(seen, std::memory_order_acquire);
        continue;
      }
      relax();
    }
    seen = g;
    if (quit_.load()) return;
    work(id);
    busy_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int)>& f) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i) f(i, 0);
    return;
  }
  job_ = &f;
  job_n_ = n;
  failed_.store(false);
  error_ = nullptr;
  next_.store(0, std::memory_order_relaxed);
  busy_.store(int(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  work(0);
  // The workers finish their last index; a preempted one may take a while (a loaded machine).
  for (int k = 0; busy_.load(std::memory_order_acquire) > 0; ++k) {
    if (k < 4096)
      relax();
    else
      std::this_thread::yield();
  }
  job_ = nullptr;
  if (failed_.load()) std::rethrow_exception(error_);
}

}  // namespace wgc::llm::cpu
