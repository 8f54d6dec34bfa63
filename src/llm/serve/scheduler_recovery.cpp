// The scheduler after a lost device (DeviceRecovery): requests sent back to the queue or ended
// retryable, then a new model, engine and KV pool.
#include "llm/serve/scheduler_impl.h"

namespace wgc::llm {

using namespace scheduler_detail;

void Scheduler::Impl::recover(std::string why) {
  const SteadyTime t0 = std::chrono::steady_clock::now();
  if (why.starts_with("wgc: ")) why.erase(0, 5);
  if (recovery.log) recovery.log(why + "; rebuilding the model");
  {
    std::lock_guard lk(mu);
    totals.recovering = true;
    totals.device_error = why;
  }
  std::vector<std::shared_ptr<Job>> replay;
  for (auto it = running.begin(); it != running.end();) {
    auto next = std::next(it);
    if (it->rs->generated() == 0 && !it->job->cancel) {
      replay.push_back(it->job);  // its client has seen nothing: it runs again from its prompt
      running.erase(it);
    } else {
      end(it, StopReason::Cancelled,
          "the GPU device was lost while the request ran; the model is being rebuilt on a new device: send "
          "the request again",
          true);
    }
    it = next;
  }
  {
    std::lock_guard lk(mu);
    queue.insert(queue.begin(), replay.begin(), replay.end());
    n_running = int(running.size());
  }
  engine.reset();
  draft_engine.reset();
  kv.reset();
  swa_kv.reset();
  reserved = 0;
  swa_reserved = 0;
  for (int attempt = 1;; ++attempt) {
    try {
      model = &recovery.rebuild();
      if (draft) draft = &recovery.rebuild_draft();
      make_engine();
      break;
    } catch (const std::exception& e) {
      engine.reset();
      draft_engine.reset();
      if (recovery.log)
        recovery.log("rebuilding the model failed (attempt " + std::to_string(attempt) + "): " + e.what());
      std::unique_lock lk(mu);
      totals.device_error = e.what();
      // Retried with a growing pause (a driver reset can take seconds); a shutdown ends it.
      backoff.wait_for(lk, std::chrono::seconds(std::min(attempt, 10)), [&] { return quit; });
      if (quit) {
        lk.unlock();
        fail_queued("the server is stopping while the GPU device is lost");
        return;
      }
    }
  }
  const double s = ms_between(t0, std::chrono::steady_clock::now()) / 1e3;
  {
    std::lock_guard lk(mu);
    totals.recovering = false;
    totals.device_error.clear();
    ++totals.recoveries;
    totals.last_recovery_s = s;
    kv_used = 0;
  }
  if (recovery.log) {
    char line[96];
    std::snprintf(line, sizeof line, "the model is rebuilt on a new device in %.2f s; serving again", s);
    recovery.log(line);
  }
}

void Scheduler::Impl::fail_queued(const std::string& why) {
  std::deque<std::shared_ptr<Job>> q;
  {
    std::lock_guard lk(mu);
    q.swap(queue);
  }
  for (auto& job : q) {
    RequestStream rs(*job, tok, stop_ids, opt.max_ctx);
    rs.finish(StopReason::Cancelled, why, true);
    std::lock_guard lk(mu);
    live.erase(job->id);
    ++totals.requests;
  }
  std::lock_guard lk(mu);
  idle.notify_all();
}

}  // namespace wgc::llm
