// libFuzzer target: the JSON parser. Whatever parses must write back (compact and indented) to
// text that parses to an equal value.
#include "util/error.h"
#include "util/json.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace wgc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  json::Value v;
  try {
    v = json::parse(text, "fuzz.json");
  } catch (const json::ParseError&) {
    return 0;
  }
  for (int indent : {-1, 2}) {
    std::string out = v.dump(indent);
    json::Value again = json::parse(out, "dumped");
    // Numbers that overflow to infinity are written as null; otherwise the round trip is exact.
    if (again != v && out.find("null") == std::string::npos) __builtin_trap();
  }
  return 0;
}
