#include "llm/formats/mapped_file.h"

#include "util/error.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace wgc::llm {

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(path.string() + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path.string() + ": not a regular file");
  }
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->path_ = path;
  m->size_ = size_t(st.st_size);
  if (m->size_ > 0) {
    void* p = ::mmap(nullptr, m->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error(path.string() + ": cannot map " + std::to_string(m->size_) + " bytes: " + std::strerror(e));
    }
    m->map_ = p;
    m->data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
  return m;
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

void MappedFile::will_need(std::span<const std::byte> range) const {
#ifdef MADV_WILLNEED
  if (!map_ || range.empty()) return;
  long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  auto base = reinterpret_cast<uintptr_t>(map_);
  auto lo = reinterpret_cast<uintptr_t>(range.data());
  auto hi = lo + range.size();
  if (lo < base || hi > base + size_) return;
  lo &= ~uintptr_t(page - 1);
  ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_WILLNEED);
#else
  (void)range;
#endif
}

}  // namespace wgc::llm
