#pragma once
// Tuning knobs given as text ("bm=256/wn=8", "igemm_bm=128,igemm_bn=64"): the one parser the op
// families' sweeps share (matmul, conv2d).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace wgc {

// One knob: its name and the field it sets.
using Knob = std::pair<const char*, uint32_t*>;

// Sets the fields of `knobs` from the KEY=VALUE items of `spec`, separated by `sep`. wgc::Error
// naming `what` and the item for an unknown key, a missing or non-numeric value or one above 2^20.
void parse_knobs(std::string_view spec, std::span<const Knob> knobs, char sep, std::string_view what);

}  // namespace wgc
