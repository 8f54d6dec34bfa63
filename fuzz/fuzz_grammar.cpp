// libFuzzer target: grammars and JSON schemas from requests (response_format, tools, "grammar").
// The input is split at its first NUL: a GBNF grammar (or a JSON schema when it starts with '{'),
// then text fed to the grammar's matcher. Bad grammars must be wgc::Error, never a crash, and the
// matcher's bounded stacks must hold whatever the text.
#include "llm/grammar/grammar.h"
#include "llm/grammar/json_schema.h"
#include "llm/grammar/matcher.h"
#include "util/error.h"
#include "util/json.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

using namespace wgc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t cut = input.find('\0');
  std::string_view spec = input.substr(0, cut);
  std::string_view text = cut == std::string_view::npos ? std::string_view{} : input.substr(cut + 1);
  try {
    std::string gbnf(spec);
    if (!spec.empty() && spec.front() == '{') gbnf = llm::json_schema_to_grammar(json::parse(spec, "fuzz.schema"));
    auto grammar = std::make_shared<const llm::Grammar>(llm::parse_grammar(gbnf));
    llm::GrammarMatcher m(grammar);
    // Feed the text in pieces of 1..4 bytes, as tokens would arrive (partial UTF-8 included).
    for (size_t i = 0; i < text.size();) {
      size_t n = 1 + (static_cast<unsigned char>(text[i]) & 3u);
      std::string_view piece = text.substr(i, n);
      bool could = m.can_accept(piece);
      if (m.accept(piece) != could) __builtin_trap();
      if (!could) break;
      i += piece.size();
    }
    (void)m.complete();
    (void)m.finished();
  } catch (const Error&) {
  }
  return 0;
}
