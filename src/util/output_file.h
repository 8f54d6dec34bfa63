// Files wgc writes (arrays, images, charts, model files, benchmark results), all by one rule:
//  - a file that exists is replaced only when the caller says so (Overwrite::Yes; the CLI's
//    --force), otherwise FileExistsError names it;
//  - the bytes go to a temporary file in the same folder, renamed onto the name at commit(), so a
//    crash, an error or an interrupt (SIGINT, SIGTERM, SIGHUP) leaves the old file or none, never a
//    partial one; the temporary is removed on the way out. A signal the process inherited as
//    ignored (nohup) stays ignored. A temporary left by a writer that was killed (kill -9) is
//    removed by the next OutputFile for the same name (its writer's lock is gone);
//  - a file that is replaced keeps its permissions (and owner, when run as root).
//
//   OutputFile out(path, Overwrite::No);   // checks, creates ".name.XXXXXX.wgc-tmp" beside it
//   out.write(bytes);                      // or write to out.fd() / out.temp_path()
//   out.commit();                          // renames it into place
#pragma once

#include "util/error.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace wgc {

enum class Overwrite { No, Yes };

// The file exists and Overwrite::No was asked. Front ends say how to allow it (the CLI: --force).
struct FileExistsError : Error {
  explicit FileExistsError(std::filesystem::path p)
      : Error(p.string() + " exists; refusing to overwrite it"), path(std::move(p)) {}
  std::filesystem::path path;
};

// Throws FileExistsError when `path` exists and `overwrite` is No, and wgc::Error when its folder
// does not exist or `path` is a folder: lets a command fail before it does the work. Removes the
// temporaries that killed writers of `path` left beside it.
void check_output(const std::filesystem::path& path, Overwrite overwrite);

class OutputFile {
 public:
  OutputFile(std::filesystem::path path, Overwrite overwrite);
  ~OutputFile();  // removes the temporary unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temp_path() const { return temp_; }
  int fd() const { return fd_; }  // the temporary, open for writing (pwrite, fallocate)

  void write(std::span<const std::byte> bytes);  // appends
  void write(std::string_view text);
  // Flushes, closes and renames the temporary onto path(); with Overwrite::No it fails (and keeps
  // the old file) when one appeared meanwhile.
  void commit();

 private:
  std::filesystem::path path_, temp_;
  Overwrite overwrite_;
  void keep_mode_of_replaced_file();

  int fd_ = -1;
  int lock_fd_ = -1;  // holds the temporary's flock until it is renamed
  int slot_ = -1;     // in the signal handler's list of temporaries
  bool committed_ = false;
};

// Throws wgc::Error with a clear message when the file system holding `path` (its folder) has
// fewer than `bytes` bytes available to this user; `reclaimable` bytes (e.g. a file about to be
// replaced) count as free.
void check_free_space(const std::filesystem::path& path, uint64_t bytes, uint64_t reclaimable = 0);

// The whole file at once, by the rule above.
void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes, Overwrite overwrite);
void write_file(const std::filesystem::path& path, std::string_view text, Overwrite overwrite);

}  // namespace wgc
