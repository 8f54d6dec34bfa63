// libFuzzer target: the image reader (PNG through libpng, JPEG through libjpeg, told apart by the
// first bytes). The input goes through a memory file, as read_image takes a path. Any input must
// give an image whose buffer matches its size, or a wgc::Error; never a crash, a longjmp past a
// destructor, or an allocation beyond what the file can hold. libpng and libjpeg are the system's
// (not instrumented): coverage guides through wgc's side of the decoders, and ASan sees their
// writes into wgc's buffers only through the intercepted calls.
#include "io/image.h"
#include "util/error.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("fuzz_image", 0);
  if (fd < 0) __builtin_trap();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) __builtin_trap();
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    wgc::Image img = wgc::read_image(path);
    if (img.data.size() != size_t(img.pixels()) * size_t(img.channels)) __builtin_trap();
  } catch (const wgc::Error&) {
  }
  return 0;
}
