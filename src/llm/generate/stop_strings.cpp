#include "llm/generate/stop_strings.h"

#include "util/error.h"

#include <algorithm>

namespace wgc::llm {

void validate_stop(std::span<const std::string> stop) {
  if (stop.size() > kMaxStopStrings)
    throw OptionError(
        "stop", "holds at most " + std::to_string(kMaxStopStrings) + " strings, got " + std::to_string(stop.size()));
  for (const auto& s : stop) {
    if (s.empty()) throw OptionError("stop", "must not hold an empty string (it would stop before the first token)");
    if (s.size() > kMaxStopBytes)
      throw OptionError("stop", "strings are at most " + std::to_string(kMaxStopBytes) + " bytes, got one of " +
                                    std::to_string(s.size()));
  }
}

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopStrings::push(std::string_view piece) {
  if (stopped_) return {};
  text_ += piece;
  // A stop string cannot start before shown_: anything that could have begun one was held back.
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, text_.find(s, shown_));
  if (first != std::string::npos) {
    stopped_ = true;
    text_.resize(first);
    std::string out = text_.substr(shown_);
    shown_ = text_.size();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of a stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    size_t most = std::min(s.size() - 1, text_.size() - shown_);
    for (size_t k = most; k > hold; --k)
      if (std::string_view(text_).substr(text_.size() - k) == std::string_view(s).substr(0, k)) {
        hold = k;
        break;
      }
  }
  std::string out = text_.substr(shown_, text_.size() - hold - shown_);
  shown_ = text_.size() - hold;
  return out;
}

std::string StopStrings::finish() {
  std::string out = text_.substr(shown_);
  shown_ = text_.size();
  return out;
}

}  // namespace wgc::llm
