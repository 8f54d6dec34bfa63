// util/output_file.h: the one rule for files wgc writes. Refuses an existing file unless asked,
// never leaves a partial file (errors, destructors, SIGINT/SIGTERM in the middle of a write), and
// keeps the old file until the new one is complete. No GPU.
#include "util/output_file.h"

#include "io/npy.h"
#include "test_util.h"

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
