// The libc functions the library calls that emscripten 3.1.6 lacks (wasm build only).
#include <sched.h>

#include <cerrno>

extern "C" {
// cpu/llm/cpu_features.cpp asks which processors it may run on (the CPU engine's thread count); a
// browser tells nothing: the call fails and the caller falls back to hardware_concurrency().
int sched_getaffinity(pid_t, size_t, cpu_set_t*) {
  errno = ENOSYS;
  return -1;
}
int __sched_cpucount(size_t, const cpu_set_t*) { return 1; }
}
