// The KV cache's storage type (EngineOptions::cache_type, `--cache-type`). Public: the engines'
// options name it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wgc::llm {

// How the cache stores its values (llama.cpp's --cache-type-k/-v names). This Dawn has no
// shader-f16 on NVIDIA, so the packed types live in u32 words and the kernels unpack them:
//  - F32: one f32 per value;
//  - F16: two halves per word (pack2x16float, the lower index in the low half);
//  - Q8_0: blocks of 32 values, each an int8 q (round(x / d), |q| <= 127) with one f32 scale d =
//    max|x| / 127 per block. A layer's region holds all its quants first ([n_kv][max_ctx][hd]
//    bytes, four to a word) and then all its scales ([n_kv][max_ctx][hd / 32] f32): the quants
//    of a key row stay where an f32 row's vec4s would be (word i = values 4i .. 4i + 3), so the
//    attention kernels' loads keep their alignment and index (one u32 per vec4 of values; 32 +
//    4 bytes per block), where interleaving a scale with every block (34 or 36 bytes) would not.
//    Needs head_dim % 32 == 0.
// Only rope_kv_append and kv_append write the packed types (each invocation owns whole words, or
// a whole block for Q8_0); the fused RoPE epilogues of the matvecs write f32 only (the layer
// plan's PackedKv fact keeps them off packed caches).
enum class KvType : uint8_t { F32, F16, Q8_0 };
std::string_view to_string(KvType t);  // "f32", "f16", "q8_0"
// "f32", "f16", "q8_0" (wgc::OptionError naming cache_type and the valid names otherwise).
KvType parse_kv_type(std::string_view s);
inline constexpr KvType kKvTypes[] = {KvType::F32, KvType::F16, KvType::Q8_0};
// u32 words holding `values` values of a layer (values % 32 == 0 for Q8_0), and bytes per value.
int64_t kv_words(KvType t, int64_t values);
double kv_bytes_per_value(KvType t);
// Whether a cache of this type takes heads of head_dim (Q8_0: whole blocks of 32); false with
// the reason in *why.
bool kv_type_fits(KvType t, int head_dim, std::string* why = nullptr);

}  // namespace wgc::llm
