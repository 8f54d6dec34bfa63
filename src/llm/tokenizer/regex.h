// A compiled PCRE2 regex (UTF + UCP, JIT where available) for pre-tokenizers and normalizers.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wgc::llm {

class Regex {
 public:
  Regex() = default;
  // Throws wgc::Error naming `where` and the PCRE2 message when the pattern does not compile.
  Regex(const std::string& pattern, const std::string& where);
  // Non-overlapping matches, left to right: [begin, end) byte offsets. `text` must be valid UTF-8.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  bool empty() const { return !code_; }

 private:
  std::shared_ptr<void> code_;  // pcre2_code_8
};

}  // namespace wgc::llm
