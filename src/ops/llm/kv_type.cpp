#include "ops/llm/kv_type.h"

#include "util/error.h"

namespace wgc::llm {

std::string_view to_string(KvType t) {
  switch (t) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::Q8_0: return "q8_0";
  }
  return "?";
}

KvType parse_kv_type(std::string_view s) {
  for (KvType t : kKvTypes)
    if (s == to_string(t)) return t;
  throw OptionError("cache_type", "must be f32, f16 or q8_0, not '" + std::string(s) + "'");
}

int64_t kv_words(KvType t, int64_t values) {
  switch (t) {
    case KvType::F32: return values;
    case KvType::F16: return (values + 1) / 2;
    case KvType::Q8_0: return values / 4 + values / 32;
  }
  return values;
}

double kv_bytes_per_value(KvType t) {
  switch (t) {
    case KvType::F32: return 4;
    case KvType::F16: return 2;
    case KvType::Q8_0: return 36.0 / 32.0;
  }
  return 4;
}

bool kv_type_fits(KvType t, int head_dim, std::string* why) {
  if (t == KvType::Q8_0 && head_dim % 32 != 0) {
    if (why) *why = "a q8_0 KV cache needs head_dim a multiple of 32, not " + std::to_string(head_dim);
    return false;
  }
  return true;
}

}  // namespace wgc::llm
