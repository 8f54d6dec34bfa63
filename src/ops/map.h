// Elementwise maps over f32 tensors of any length: vector add, copy, and unary / binary maps given
// as a WGSL f32 expression in `x` (unary) or `x` and `y` (binary), e.g.
//   auto b = wgc::map(ctx, a, "exp(x) * 0.5");
//   auto c = wgc::map(ctx, a, b, "x * y + 1.0");
// The expression goes into a template kernel (src/kernels/map/{unary,binary}_*.wgsl) in place of
// WGC_EXPR; it must not contain ';', '{' or '}'. It may use any WGSL built-in; WGSL errors come
// back as a ShaderError naming the expression. Kernels are cached per context by wgc::compile.
//
// Versions (all selectable; Auto picks the best for the adapter):
//   Scalar     one element per invocation (map/add.wgsl for add)
//   Vec4       one vec4 (4 elements) per invocation; the partial last vec4 writes only its lanes
//              below n
//   GridStride a fixed grid walks the data with 4 vec4 loads in flight per invocation per step
#pragma once

#include "gpu/batch.h"
#include "ops/op_version.h"
#include "ops/thresholds.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wgc {

enum class MapVersion { Auto, Scalar, Vec4, GridStride };
std::string_view to_string(MapVersion v);             // "auto", "scalar", "vec4", "grid-stride"
MapVersion parse_map_version(std::string_view name);  // throws naming the op and the valid names
inline constexpr MapVersion kMapVersions[] = {MapVersion::Scalar, MapVersion::Vec4, MapVersion::GridStride};

// The problem: n elements of each tensor (they may hold more).
struct MapDims {
  uint64_t n = 0;
};

bool supports(const Context& ctx, MapVersion v, const MapDims& d);  // every version runs every n
// What Auto runs: Vec4 (the fastest on the H200: copy 4.25 TB/s against grid-stride's 3.9,
// docs/benchmarks.md).
MapVersion choose_map(const Context& ctx, const MapDims& d);

// Tuning knobs, for benchmarks; the defaults are what the ops use.
struct MapConfig {
  uint32_t workgroup = 256;  // invocations per workgroup (at most the device's limit)
  uint32_t max_groups = 0;   // GridStride: the grid's size in workgroups; 0: the adapter's default
};

// Throws wgc::Error unless expr is a usable expression text (not empty; no ';', '{', '}').
void check_map_expression(std::string_view expr);

// --- recording into a batch: the first d.n elements of the f32 inputs into out ------------------
void map(Batch& batch, const Tensor& x, const Tensor& out, const MapDims& d, std::string_view expr, MapConfig cfg = {},
         MapVersion v = MapVersion::Auto);
void map(Batch& batch, const Tensor& x, const Tensor& y, const Tensor& out, const MapDims& d, std::string_view expr,
         MapConfig cfg = {}, MapVersion v = MapVersion::Auto);
void add(Batch& batch, const Tensor& a, const Tensor& b, const Tensor& out, const MapDims& d, MapConfig cfg = {},
         MapVersion v = MapVersion::Auto);
// A copy kernel (the unary map "x"): the bandwidth figure's yardstick.
void copy(Batch& batch, const Tensor& x, const Tensor& out, const MapDims& d, MapConfig cfg = {},
          MapVersion v = MapVersion::Auto);

// --- device tensors in, a new tensor out (waits) ------------------------------------------------
Tensor map(const Context& ctx, const Tensor& x, std::string_view expr, MapVersion v = MapVersion::Auto);
Tensor map(const Context& ctx, const Tensor& x, const Tensor& y, std::string_view expr,
           MapVersion v = MapVersion::Auto);
Tensor add(const Context& ctx, const Tensor& a, const Tensor& b, MapVersion v = MapVersion::Auto);
Tensor copy(const Context& ctx, const Tensor& x, MapVersion v = MapVersion::Auto);

// --- host memory: the CPU below the op's threshold (ops/thresholds.h, in elements), else the device
// The CPU path of map evaluates the expression with cpu::Expr (cpu/map.h); an expression outside
// its subset always runs on the device.
std::vector<float> map(const Context& ctx, std::span<const float> x, std::string_view expr, Policy policy = {});
std::vector<float> map(const Context& ctx, std::span<const float> x, std::span<const float> y, std::string_view expr,
                       Policy policy = {});
std::vector<float> add(const Context& ctx, std::span<const float> a, std::span<const float> b, Policy policy = {});

// --- benchmark hooks ------------------------------------------------------------------------------
// Every version of copy ("copy", including "buffer": a copyBufferToBuffer command), add ("add"),
// a unary map ("map.exp": "exp(x) * 0.5") and a binary map ("map2.fma": "x * y + 1.0").
// bytes_per_element: 8 for copy and unary maps, 12 for add and binary maps.
std::vector<OpVersion> map_versions(const Context& ctx);

}  // namespace wgc
