#include "util/signals.h"

#include "util/error.h"

namespace wgc {

namespace {
std::atomic<std::atomic<bool>*> g_flag{nullptr};
struct sigaction g_previous {};

void on_interrupt(int sig) {
  std::atomic<bool>* flag = g_flag.load();
  if (flag && !flag->exchange(true)) return;  // the first: a request to stop
  ::sigaction(sig, &g_previous, nullptr);     // the second: what Ctrl-C did before
  ::raise(sig);
}
}  // namespace

bool signal_ignored(int sig) {
  struct sigaction now {};
  return ::sigaction(sig, nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN;
}

InterruptFlag::InterruptFlag(std::atomic<bool>& flag) {
  if (signal_ignored(SIGINT)) return;
  std::atomic<bool>* none = nullptr;
  if (!g_flag.compare_exchange_strong(none, &flag)) throw Error("wgc: InterruptFlag: one is active already");
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &previous_);
  g_previous = previous_;
  installed_ = true;
}

InterruptFlag::~InterruptFlag() {
  if (!installed_) return;
  ::sigaction(SIGINT, &previous_, nullptr);
  g_flag.store(nullptr);
}

}  // namespace wgc
