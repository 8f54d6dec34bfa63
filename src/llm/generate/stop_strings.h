// Stop strings of a generation request: their limits (requests are untrusted) and the streaming
// matcher that holds back text which could still become one. No model, no GPU: the server's
// request parser (and its fuzz target) use them too.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

// Limits of GenerateOptions::stop and of the scheduler's requests.
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopBytes = 1024;
// Throws wgc::OptionError("stop", ...) for an empty stop string, more than kMaxStopStrings or one
// longer than kMaxStopBytes.
void validate_stop(std::span<const std::string> stop);

// Streams text while watching for stop strings: push() returns what is safe to show, holding back
// a tail that could still become a stop string; once one appears, stopped() is true and the text
// ends right before it.
class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);
  std::string push(std::string_view piece);  // "" after stopped()
  std::string finish();                      // the held-back tail (none after a stop)
  bool stopped() const { return stopped_; }
  const std::string& text() const { return text_; }  // everything shown or held, ending before a stop

 private:
  std::vector<std::string> stops_;
  std::string text_;
  size_t shown_ = 0;
  bool stopped_ = false;
};

}  // namespace wgc::llm
