// Signals as the user set them up. A signal that the process inherited as ignored (`nohup` ignores
// SIGHUP; `cmd &` in a script SIGINT) stays ignored: wgc installs no handler for it, so the run
// goes on as the user asked instead of being cut short by a handler.
#pragma once

#include <atomic>
#include <csignal>

namespace wgc {

// Whether `sig`'s disposition is "ignore" (wgc never sets that itself: it was inherited, or set by
// the program embedding the library).
bool signal_ignored(int sig);

// Ctrl-C as a request to stop, for as long as the object lives: SIGINT sets `flag` (the work polls
// it and ends cleanly); a second SIGINT while the flag is still set ends the process as Ctrl-C does
// (the handler that was there before runs: output files remove their temporaries). Nothing is
// installed when SIGINT is ignored. One at a time.
class InterruptFlag {
 public:
  explicit InterruptFlag(std::atomic<bool>& flag);
  ~InterruptFlag();
  InterruptFlag(const InterruptFlag&) = delete;
  InterruptFlag& operator=(const InterruptFlag&) = delete;
  bool installed() const { return installed_; }

 private:
  bool installed_ = false;
  struct sigaction previous_ {};
};

}  // namespace wgc
