// The kernel playground's C++ path (web/kernels/, "C++ ops"): the library's ops (src/ops) run
// from the wasm build on the browser's WebGPU, on data the page hands over in wasm memory, so that
// their results can be set beside the playground's own JavaScript driver of the same kernels.
// Asynchronous in JavaScript (the ops wait for their results: ASYNCIFY).
#include "gpu/context.h"
#include "gpu/tensor.h"
#include "ops/map.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/stencil.h"
#include "util/error.h"
#include "util/json.h"

#include <emscripten/emscripten.h>

#include <cstring>
#include <optional>
#include <span>
#include <string>

namespace {

using namespace wgc;

std::optional<Context> g_ctx;  // made on first use
std::string g_error;

const Context& context() {
  if (!g_ctx) g_ctx.emplace(ContextOptions{});
  return *g_ctx;
}

Tensor upload_f32(const Context& ctx, const float* p, int64_t n) {
  return make_tensor(ctx, {n}, std::span<const float>(p, size_t(n)));
}

void read_into(const Context& ctx, const Tensor& t, float* out, int64_t n) {
  download(ctx, t, std::as_writable_bytes(std::span<float>(out, size_t(n))));
}

int64_t positive(const json::Value& r, const char* key) {
  int64_t v = r.get_int(key, 0);
  if (v <= 0 || v > (int64_t(1) << 28)) throw Error(std::string("wgc op: '") + key + "' must be in 1..2^28");
  return v;
}

}  // namespace

extern "C" {

EMSCRIPTEN_KEEPALIVE const char* wgc_op_error() { return g_error.c_str(); }

// request: {op, version, ...}; a, b: the inputs (b: the second operand, if any); out: room for the
// result. The ops and their fields:
//   add (map/add.wgsl)                   n; a, b -> out[n]
//   map (x + y through the map ladder)   n; a, b -> out[n]
//   matmul                               m, n, k; a [m,k], b [k,n] -> out [m,n]
//   reduce                               n, reduce ("sum", "max", ...); a -> out[1]
//   sobel, blur                          width, height, channels (, sigma); a -> out[w*h*c]
// Returns 0, or 1 with the error in wgc_op_error().
EMSCRIPTEN_KEEPALIVE int wgc_op(const char* request, const float* a, const float* b, float* out) {
  try {
    json::Value r = json::parse(request);
    const Context& ctx = context();
    const std::string op = r.get_string("op"), version = r.get_string("version", "auto");
    if (op == "add" || op == "map") {
      const int64_t n = positive(r, "n");
      Tensor x = upload_f32(ctx, a, n), y = upload_f32(ctx, b, n);
      Tensor z = op == "add" ? add(ctx, x, y, MapVersion::Scalar) : map(ctx, x, y, "x + y", parse_map_version(version));
      read_into(ctx, z, out, n);
    } else if (op == "matmul") {
      const int64_t m = positive(r, "m"), n = positive(r, "n"), k = positive(r, "k");
      Tensor x = upload_f32(ctx, a, m * k).view({m, k}), y = upload_f32(ctx, b, k * n).view({k, n});
      read_into(ctx, matmul(ctx, x, y, false, parse_matmul_version(version)), out, m * n);
    } else if (op == "reduce") {
      const int64_t n = positive(r, "n");
      const std::string which = r.get_string("reduce", "sum");
      const ReduceOp rop = which == "sum"   ? ReduceOp::Sum
                           : which == "max" ? ReduceOp::Max
                           : which == "min" ? ReduceOp::Min
                           : which == "mean"
                               ? ReduceOp::Mean
                               : throw Error("wgc op: reduce is sum, max, min or mean, not '" + which + "'");
      *out = reduce_value(ctx, upload_f32(ctx, a, n), rop, parse_reduce_version(version));
    } else if (op == "sobel" || op == "blur") {
      const int64_t w = positive(r, "width"), h = positive(r, "height"), c = positive(r, "channels");
      Tensor img = upload_f32(ctx, a, w * h * c).view({h, w, c});
      const StencilVersion v = parse_stencil_version(version);
      Tensor res = op == "sobel" ? sobel(ctx, img, int(w), int(h), int(c), v)
                                 : gaussian_blur(ctx, img, int(w), int(h), int(c), float(r.get_double("sigma", 2)), v);
      read_into(ctx, res, out, w * h * c);
    } else {
      throw Error("wgc op: unknown op '" + op + "' (add, map, matmul, reduce, sobel, blur)");
    }
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
  }
  return 1;
}

}  // extern "C"
