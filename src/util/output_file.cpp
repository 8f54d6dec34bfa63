#include "util/output_file.h"

#include "util/signals.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace wgc {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// Temporaries being written, for the signal handler to remove: fixed slots of plain chars, since
// a handler may only use async-signal-safe calls (unlink) on memory that is not being changed. A
// slot is reserved, its path written, and only then published.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
enum SlotState { kFree, kReserved, kLive };
struct Slot {
  std::atomic<int> state{kFree};
  char path[kPathMax];
};
std::array<Slot, kSlots> g_slots;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[std::size(kSignals)];

void on_signal(int sig) {
  for (auto& s : g_slots)
    if (s.state.load() == kLive) ::unlink(s.path);
  for (size_t i = 0; i < std::size(kSignals); ++i)
    if (kSignals[i] == sig) {
      const struct sigaction& prev = g_previous[i];
      if (prev.sa_handler == SIG_IGN) return;
      if (prev.sa_handler != SIG_DFL && !(prev.sa_flags & SA_SIGINFO)) {
        prev.sa_handler(sig);  // a handler that was there before (e.g. chat's Ctrl-C)
        return;
      }
      ::sigaction(sig, &prev, nullptr);
      ::raise(sig);  // end the process the way the signal would have
      return;
    }
}

// A signal inherited as ignored (nohup: SIGHUP; `cmd &` in a script: SIGINT) gets no handler: the
// process goes on and its file is completed, as the user asked.
void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      if (signal_ignored(kSignals[i])) {
        g_previous[i].sa_handler = SIG_IGN;
        continue;
      }
      struct sigaction sa {};
      sa.sa_handler = on_signal;
      sigemptyset(&sa.sa_mask);
      ::sigaction(kSignals[i], &sa, &g_previous[i]);
    }
  });
}

int take_slot(const fs::path& temp) {
  std::string p = temp.string();
  if (p.size() >= kPathMax) return -1;  // too long to track: removed by the destructor only
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = g_slots[size_t(i)];
    int expected = kFree;
    if (!slot.state.compare_exchange_strong(expected, kReserved)) continue;
    std::memcpy(slot.path, p.c_str(), p.size() + 1);
    slot.state.store(kLive);
    return i;
  }
  return -1;  // more than kSlots files at once: the rest are removed by their destructors only
}

void release_slot(int i) {
  if (i >= 0) g_slots[size_t(i)].state.store(kFree);
}

// New files get the usual permissions (0666 less the umask); mkstemp makes them 0600.
mode_t file_mode() {
  mode_t m = ::umask(0);
  ::umask(m);
  return 0666 & ~m;
}

// Temporaries are named ".NAME.XXXXXX.wgc-tmp" beside NAME, and their writer holds an flock on
// them until they are renamed: one that can be locked belongs to a writer that is gone (kill -9,
// a power cut), and the next OutputFile for NAME removes it.
constexpr const char* kTempSuffix = ".wgc-tmp";

std::string temp_prefix(const fs::path& path) {
  std::string s(1, '.');
  s += path.filename().string();
  s += '.';
  return s;
}

void remove_stale_temporaries(const fs::path& path) {
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = temp_prefix(path);
  const size_t len = prefix.size() + 6 + std::char_traits<char>::length(kTempSuffix);
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != len || !name.starts_with(prefix) || !name.ends_with(kTempSuffix)) continue;
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    // A writer locks its temporary right after creating it: one younger than a second may be in
    // that instant.
    struct stat st {};
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const bool known = ::fstat(fd, &st) == 0;
    const double age = double(now.tv_sec - st.st_mtim.tv_sec) + 1e-9 * double(now.tv_nsec - st.st_mtim.tv_nsec);
    const bool young = !known || age < 1.0;
    if (!young && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(it->path().c_str());  // no writer holds it
    ::close(fd);
  }
}

}  // namespace

void check_output(const fs::path& path, Overwrite overwrite) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(path.string() + " is a folder, not a file to write");
  if (overwrite == Overwrite::No && fs::exists(fs::symlink_status(path, ec))) throw FileExistsError(path);
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(dir, ec)) throw Error(path.string() + ": the folder " + dir.string() + " does not exist");
  remove_stale_temporaries(path);  // their space counts for check_free_space
}

void check_free_space(const fs::path& path, uint64_t bytes, uint64_t reclaimable) {
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(path.string() + ": the folder " + dir.string() + " does not exist");
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) throw Error(dir.string() + ": cannot query free space: " + errno_text());
  uint64_t avail = uint64_t(s.f_bavail) * uint64_t(s.f_frsize) + reclaimable;
  if (avail < bytes) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: not enough free disk space: the file needs %.2f GB, %s has %.2f GB free",
                  path.string().c_str(), double(bytes) / 1e9, dir.string().c_str(), double(avail) / 1e9);
    throw Error(buf);
  }
}

OutputFile::OutputFile(fs::path path, Overwrite overwrite) : path_(std::move(path)), overwrite_(overwrite) {
  check_output(path_, overwrite_);
  install_handler();
  remove_stale_temporaries(path_);
  std::string tmpl = (path_.parent_path() / (temp_prefix(path_) + "XXXXXX" + kTempSuffix)).string();  // hidden
  fd_ = ::mkostemps(tmpl.data(), int(std::char_traits<char>::length(kTempSuffix)), O_CLOEXEC);
  if (fd_ < 0) throw Error(path_.string() + ": cannot create a temporary file beside it: " + errno_text());
  temp_ = tmpl;
  // The lock says "being written" (remove_stale_temporaries); it is held on a second descriptor of
  // the same open file, so that it outlives fd_'s close until the rename is done.
  lock_fd_ = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    std::string why = errno_text();
    ::close(fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
    ::unlink(temp_.c_str());
    throw Error(path_.string() + ": cannot lock its temporary file " + temp_.string() + ": " + why);
  }
  ::fchmod(fd_, file_mode());
  slot_ = take_slot(temp_);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
  if (lock_fd_ >= 0) ::close(lock_fd_);
  release_slot(slot_);
}

void OutputFile::write(std::span<const std::byte> bytes) {
  const char* p = reinterpret_cast<const char*>(bytes.data());
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(path_.string() + ": write failed: " + errno_text());
    p += n;
    left -= size_t(n);
  }
}

void OutputFile::write(std::string_view text) { write(std::as_bytes(std::span(text.data(), text.size()))); }

void OutputFile::commit() {
  if (committed_) return;
  keep_mode_of_replaced_file();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw Error(path_.string() + ": writing failed: " + errno_text());
  if (overwrite_ == Overwrite::Yes) {
    if (::rename(temp_.c_str(), path_.c_str()) != 0)
      throw Error(path_.string() + ": cannot rename the temporary file onto it: " + errno_text());
  } else if (::link(temp_.c_str(), path_.c_str()) == 0) {  // fails if a file appeared meanwhile
    ::unlink(temp_.c_str());
  } else if (errno == EEXIST) {
    throw FileExistsError(path_);
  } else {  // a file system without hard links: the check in the constructor stands
    if (::rename(temp_.c_str(), path_.c_str()) != 0)
      throw Error(path_.string() + ": cannot rename the temporary file onto it: " + errno_text());
  }
  committed_ = true;
  release_slot(slot_);
  slot_ = -1;
  ::close(lock_fd_);
  lock_fd_ = -1;
}

// A file that --force replaces keeps its permissions (a 0600 key file stays 0600) and, where we
// may set them (root), its owner and group.
void OutputFile::keep_mode_of_replaced_file() {
  if (overwrite_ != Overwrite::Yes) return;
  struct stat old {};
  if (::stat(path_.c_str(), &old) != 0 || !S_ISREG(old.st_mode)) return;
  if (::geteuid() == 0 && (old.st_uid != ::geteuid() || old.st_gid != ::getegid()))
    if (::fchown(fd_, old.st_uid, old.st_gid) != 0)
      throw Error(path_.string() + ": cannot give the new file the old one's owner: " + errno_text());
  if (::fchmod(fd_, old.st_mode & 07777) != 0)
    throw Error(path_.string() + ": cannot give the new file the old one's permissions: " + errno_text());
}

void write_file(const fs::path& path, std::span<const std::byte> bytes, Overwrite overwrite) {
  OutputFile out(path, overwrite);
  out.write(bytes);
  out.commit();
}

void write_file(const fs::path& path, std::string_view text, Overwrite overwrite) {
  write_file(path, std::as_bytes(std::span(text.data(), text.size())), overwrite);
}

}  // namespace wgc
