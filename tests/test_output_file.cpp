// util/output_file.h: the one rule for files wgc writes. Refuses an existing file unless asked,
// never leaves a partial file (errors, destructors, SIGINT/SIGTERM in the middle of a write), and
// keeps the old file until the new one is complete. No GPU.
#include "util/output_file.h"

#include "io/npy.h"
#include "test_util.h"

#include <chrono>
#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

using namespace wgc;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path fresh_dir(const std::string& name) {
  auto d = test::temp_dir(name);
  for (const auto& e : fs::directory_iterator(d)) fs::remove_all(e.path());
  return d;
}

TEST(OutputFile, RefusesAnExistingFileUnlessAsked) {
  auto dir = fresh_dir("refuse");
  auto p = dir / "a.txt";
  write_file(p, "one", Overwrite::No);
  EXPECT_EQ(slurp(p), "one");
  try {
    write_file(p, "two", Overwrite::No);
    FAIL() << "overwrote";
  } catch (const FileExistsError& e) {
    EXPECT_EQ(e.path, p);
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(p), "one");
  EXPECT_THROW(check_output(p, Overwrite::No), FileExistsError);
  EXPECT_NO_THROW(check_output(p, Overwrite::Yes));
  write_file(p, "three", Overwrite::Yes);
  EXPECT_EQ(slurp(p), "three");
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"a.txt"});  // no temporaries left
  // A file that appears while the new one is written is not replaced either.
  OutputFile late(dir / "b.txt", Overwrite::No);
  late.write("mine");
  write_file(dir / "b.txt", "theirs", Overwrite::No);
  EXPECT_THROW(late.commit(), FileExistsError);
  EXPECT_EQ(slurp(dir / "b.txt"), "theirs");
}

TEST(OutputFile, BadPlacesAreNamed) {
  auto dir = fresh_dir("bad");
  try {
    write_file(dir / "no" / "x.bin", "x", Overwrite::Yes);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "no").string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_file(dir, "x", Overwrite::Yes), Error);  // a folder
}

TEST(OutputFile, NothingIsLeftWithoutCommit) {
  auto dir = fresh_dir("abandon");
  {
    OutputFile f(dir / "x.npy", Overwrite::No);
    f.write("partial");
    EXPECT_TRUE(fs::exists(f.temp_path()));
    EXPECT_EQ(f.temp_path().parent_path(), dir);  // same folder: the rename cannot cross file systems
  }
  EXPECT_TRUE(names_in(dir).empty());
  // The old file stays when the new one is abandoned.
  write_file(dir / "y.npy", "old", Overwrite::No);
  {
    OutputFile f(dir / "y.npy", Overwrite::Yes);
    f.write("new but unfinished");
  }
  EXPECT_EQ(slurp(dir / "y.npy"), "old");
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"y.npy"});
}

// A process interrupted in the middle of a write: the temporary is removed, the old file (or none)
// is there, and the process still ends by the signal.
TEST(OutputFile, AnInterruptLeavesNoPartialFile) {
  for (int sig : {SIGINT, SIGTERM}) {
    auto dir = fresh_dir("signal" + std::to_string(sig));
    write_file(dir / "kept.bin", "old", Overwrite::No);
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      OutputFile a(dir / "new.bin", Overwrite::No), b(dir / "kept.bin", Overwrite::Yes);
      std::string chunk(1 << 16, 'x');
      a.write(chunk);
      b.write(chunk);
      char c = 1;
      (void)!::write(ready[1], &c, 1);
      for (;;) ::pause();  // killed here, in the middle of the writes
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ::kill(child, sig);
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(ready[0]);
    ::close(ready[1]);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    EXPECT_EQ(names_in(dir), std::vector<std::string>{"kept.bin"});
    EXPECT_EQ(slurp(dir / "kept.bin"), "old");
  }
}

// --force keeps the replaced file's permissions: a 0600 file stays 0600 (and a 0755 one 0755).
TEST(OutputFile, AReplacedFileKeepsItsMode) {
  auto dir = fresh_dir("mode");
  for (fs::perms mode : {fs::perms(0600), fs::perms(0755), fs::perms(0640)}) {
    auto p = dir / "secret.bin";
    write_file(p, "old", Overwrite::Yes);
    fs::permissions(p, mode);
    write_file(p, "new", Overwrite::Yes);
    EXPECT_EQ(slurp(p), "new");
    EXPECT_EQ(fs::status(p).permissions() & fs::perms::mask, mode) << std::oct << int(mode);
  }
  // A new file gets the usual mode (0666 less the umask), not mkstemp's 0600.
  mode_t um = ::umask(022);
  write_file(dir / "fresh.bin", "x", Overwrite::No);
  ::umask(um);
  EXPECT_EQ(fs::status(dir / "fresh.bin").permissions() & fs::perms::mask, fs::perms(0644));
}

// A writer killed with SIGKILL cannot remove its temporary: the next writer of the same file
// does, and leaves a live writer's temporary alone.
TEST(OutputFile, TemporariesOfKilledWritersAreRemovedByTheNext) {
  auto dir = fresh_dir("stale");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OutputFile f(dir / "model.gguf", Overwrite::No);
    f.write(std::string(1 << 16, 'x'));
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  auto left = names_in(dir);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_TRUE(left[0].starts_with(".model.gguf.") && left[0].ends_with(".wgc-tmp")) << left[0];
  // One second old: past the instant between a temporary's creation and its lock.
  auto stale = dir / left[0];
  fs::last_write_time(stale, fs::last_write_time(stale) - std::chrono::seconds(2));
  {
    OutputFile live(dir / "model.gguf", Overwrite::No);  // removes the stale one
    EXPECT_FALSE(fs::exists(stale));
    live.write("live");
    fs::last_write_time(live.temp_path(), fs::last_write_time(live.temp_path()) - std::chrono::seconds(2));
    check_output(dir / "model.gguf", Overwrite::No);  // another writer's check: the live one stays
    EXPECT_TRUE(fs::exists(live.temp_path()));
    // Other files beside it are never touched, whatever their names.
    write_file(dir / ".model.gguf.abcdef.tmp", "not ours", Overwrite::No);
    write_file(dir / "model.gguf.wgc-tmp", "not ours", Overwrite::No);
    live.commit();
  }
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{".model.gguf.abcdef.tmp", "model.gguf", "model.gguf.wgc-tmp"}));
  EXPECT_EQ(slurp(dir / "model.gguf"), "live");
}

// Under nohup (SIGHUP ignored) or `cmd &` in a script (SIGINT ignored), such a signal changes
// nothing: the file is completed, as the user asked.
TEST(OutputFile, SignalsInheritedAsIgnoredStayIgnored) {
  for (int sig : {SIGHUP, SIGINT}) {
    auto dir = fresh_dir("ignored" + std::to_string(sig));
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      std::signal(sig, SIG_IGN);
      try {
        OutputFile f(dir / "out.bin", Overwrite::No);
        f.write("first half ");
        ::raise(sig);  // the terminal went away
        f.write("second half");
        f.commit();
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "signal " << sig << ": status " << status;
    EXPECT_EQ(slurp(dir / "out.bin"), "first half second half") << sig;
    EXPECT_EQ(names_in(dir), std::vector<std::string>{"out.bin"});
  }
}

TEST(OutputFile, NpyFollowsTheRule) {
  auto dir = fresh_dir("npy");
  std::vector<float> v = {1, 2, 3};
  npy::write(dir / "a.npy", v, {3}, Overwrite::No);
  EXPECT_THROW(npy::write(dir / "a.npy", v, {3}, Overwrite::No), FileExistsError);
  npy::write(dir / "a.npy", v, {3}, Overwrite::Yes);
  EXPECT_EQ(npy::read(dir / "a.npy").to_f32(), v);
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"a.npy"});
}

}  // namespace

TEST(OutputFile, FreeSpaceCheck) {
  EXPECT_NO_THROW(check_free_space(fs::temp_directory_path() / "x.gguf", 1));
  try {
    check_free_space(fs::temp_directory_path() / "x.gguf", uint64_t(1) << 62);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not enough free disk space"), std::string::npos) << e.what();
  }
}
