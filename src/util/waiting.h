// A line on stderr while a long step runs that reports no progress of its own (a model's kernels
// compiling on SwiftShader): "label: 12 s (estimate)", redrawn every second where progress bars
// are drawn (util/progress.h: a terminal, or WGC_PROGRESS=1; cut to 79 columns) and cleared when
// the step ends; elsewhere the label and the estimate are printed once.
//
//   { Waiting w("loading model.gguf onto SwiftShader", "about 2 min on 2 cores"); load(); }
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace wgc {

class Waiting {
 public:
  Waiting(std::string label, std::string estimate);
  ~Waiting();  // stops and clears the line
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

 private:
  std::string label_, estimate_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread ticker_;
};

}  // namespace wgc
