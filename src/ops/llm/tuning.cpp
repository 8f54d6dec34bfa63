#include "ops/llm/tuning.h"

#include "ops/llm/llm_ops.h"
#include "util/error.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>
#include <utility>

namespace wgc::llm {

namespace {

#define WGC_KNOB(name) \
  { #name, &LlmTuning::name }
constexpr std::pair<const char*, uint32_t LlmTuning::*> kKnobs[] = {WGC_KNOB(matvec_wg),
                                                                    WGC_KNOB(matvec_tpr),
                                                                    WGC_KNOB(matvec_unroll),
                                                                    WGC_KNOB(matvec_rows),
                                                                    WGC_KNOB(matvec_pf),
                                                                    WGC_KNOB(matvec_split),
                                                                    WGC_KNOB(matvec_split_cols),
                                                                    WGC_KNOB(swiglu_wg_rows),
                                                                    WGC_KNOB(matvec_kx),
                                                                    WGC_KNOB(kx_wg),
                                                                    WGC_KNOB(kx_wide_wg),
                                                                    WGC_KNOB(kx_rows),
                                                                    WGC_KNOB(kx_loads),
                                                                    WGC_KNOB(kx_groups),
                                                                    WGC_KNOB(matmul_bm),
                                                                    WGC_KNOB(matmul_bn),
                                                                    WGC_KNOB(matmul_bk),
                                                                    WGC_KNOB(mvq_wg),
                                                                    WGC_KNOB(mvq_tpr),
                                                                    WGC_KNOB(mvq_rows),
                                                                    WGC_KNOB(mvq_unroll),
                                                                    WGC_KNOB(mvq_pf),
                                                                    WGC_KNOB(mvq_kq_pf),
                                                                    WGC_KNOB(mvq_sw_tpr),
                                                                    WGC_KNOB(mvq_kq_sw_tpr),
                                                                    WGC_KNOB(mmq_bm),
                                                                    WGC_KNOB(mmq_bn),
                                                                    WGC_KNOB(mmq_min_groups),
                                                                    WGC_KNOB(mmq_units),
                                                                    WGC_KNOB(quant_groups),
                                                                    WGC_KNOB(batched_kl),
                                                                    WGC_KNOB(batched_tt),
                                                                    WGC_KNOB(batched_tt_large),
                                                                    WGC_KNOB(batched_mv_n),
                                                                    WGC_KNOB(batched_mv_sl),
                                                                    WGC_KNOB(attn_dec_wg),
                                                                    WGC_KNOB(attn_dec_wgs),
                                                                    WGC_KNOB(attn_dec_tpk),
                                                                    WGC_KNOB(attn_dec_u)};
#undef WGC_KNOB

}  // namespace

void apply_tuning(LlmTuning& t, std::string_view spec) {
  while (!spec.empty()) {
    const size_t comma = spec.find_first_of(",/");
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string name(item.substr(0, eq));
    const std::string value = eq == std::string_view::npos ? "" : std::string(item.substr(eq + 1));
    if (name == "matmul") {
      t.matmul = parse_linear_version(value);
      continue;
    }
    auto f = std::find_if(std::begin(kKnobs), std::end(kKnobs), [&](const auto& e) { return name == e.first; });
    if (f == std::end(kKnobs)) {
      std::string known;
      for (const auto& e : kKnobs) known += std::string(known.empty() ? "" : ", ") + e.first;
      throw Error("wgc: llm tuning: unknown knob '" + name + "' (known: matmul, " + known + ")");
    }
    char* end = nullptr;
    const unsigned long v = std::strtoul(value.c_str(), &end, 10);
    if (value.empty() || *end || v > (1ul << 20))
      throw Error("wgc: llm tuning: " + name + " expects a non-negative integer, got '" + value + "'");
    t.*(f->second) = uint32_t(v);
  }
}

std::vector<std::string> split_tuning_sets(std::string_view spec) {
  std::vector<std::string> sets;
  for (;;) {
    const size_t semi = spec.find(';');
    sets.emplace_back(spec.substr(0, semi));
    LlmTuning check;
    apply_tuning(check, sets.back());
    if (semi == std::string_view::npos) return sets;
    spec = spec.substr(semi + 1);
  }
}

std::shared_ptr<const LlmTuning> with_tuning(const std::shared_ptr<const LlmTuning>& base, std::string_view spec) {
  auto t = std::make_shared<LlmTuning>(base ? *base : LlmTuning{});
  apply_tuning(*t, spec);
  return t;
}

}  // namespace wgc::llm
