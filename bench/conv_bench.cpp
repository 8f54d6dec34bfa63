// `wgc bench --ops conv2d,depthwise,winograd,pool --sizes ...`: every convolution version on
// the anchor layers and MobileNetV2's layers, against the plain CPU loop and OpenBLAS
// (im2col + sgemm). Sizes are presets or specs (kPresets and parse_spec below); convolutions are timed
// as a model runs them: prepared weights (prepare_conv2d), bias + ReLU fused.
#include "bench/bench.h"
#include "cpu/conv.h"
#include "ops/conv.h"
#include "ops/map.h"
#include "ops/pool.h"
#include "util/error.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>

#ifdef WGC_HAVE_CBLAS
#include <cblas.h>
#endif

namespace wgc::bench {
namespace {

constexpr double kPlainCpuMaxFlops = 2e10;  // the plain loop takes seconds past this
constexpr size_t kCheckSamples = 4096;      // outputs checked against the double reference

// MobileNetV2 1.0 at 224x224, batch 1: its distinct layers as specs (see parse_spec).
const char* const kMobileNetV2Conv[] = {
    "n1c3o32h224k3s2p1", "n1c32o16h112k1p0", "n1c16o96h112k1p0", "n1c96o24h56k1p0",  "n1c24o144h56k1p0",
    "n1c144o24h56k1p0",  "n1c144o32h28k1p0", "n1c32o192h28k1p0", "n1c192o32h28k1p0", "n1c192o64h14k1p0",
    "n1c64o384h14k1p0",  "n1c384o64h14k1p0", "n1c384o96h14k1p0", "n1c96o576h14k1p0", "n1c576o96h14k1p0",
    "n1c576o160h7k1p0",  "n1c160o960h7k1p0", "n1c960o160h7k1p0", "n1c960o320h7k1p0", "n1c320o1280h7k1p0"};
const char* const kMobileNetV2Depthwise[] = {
    "n1c32h112k3s1p1g32",  "n1c96h112k3s2p1g96",  "n1c144h56k3s1p1g144", "n1c144h56k3s2p1g144", "n1c192h28k3s1p1g192",
    "n1c192h28k3s2p1g192", "n1c384h14k3s1p1g384", "n1c576h14k3s1p1g576", "n1c576h14k3s2p1g576", "n1c960h7k3s1p1g960"};

// Named presets: the anchor layers. "mobilenetv2" (conv2d, depthwise ops): MobileNetV2's
// layers with the version Auto picks; "mobilenetv2-all": with every version.
const std::map<std::string, std::string> kPresets = {
    {"conv3x3-64-56-n32", "n32c64o64h56k3p1"},           {"conv3x3-256-14-n32", "n32c256o256h14k3p1"},
    {"conv1x1-144-24-56-n32", "n32c144o24h56k1p0"},      {"dw3x3-144-56-n32", "n32c144h56k3p1g144"},
    {"maxpool3x3s2-64-112-n32", "max:n32c64h112k3s2p1"}, {"gap-1280-7-n32", "gap:n32c1280h7"}};

// A spec: letters with numbers, "n32c64o64h56k3s1p1": n batch, c input channels, o output
// channels (default c), h and w (default h), k kernel, s stride, p padding (all sides; default
// (k - 1) / 2 * d), d dilation, g groups (default 1; c for the depthwise op). Pooling specs start
// with "max:", "avg:" or "gap:".
struct Spec {
  std::map<char, uint32_t> v;
  std::string kind;  // pooling only
  uint32_t get(char c, uint32_t def) const { return v.count(c) ? v.at(c) : def; }
};

Spec parse_spec(const std::string& s) {
  Spec sp;
  std::string body = s;
  if (size_t colon = s.find(':'); colon != std::string::npos) sp.kind = s.substr(0, colon), body = s.substr(colon + 1);
  for (size_t i = 0; i < body.size();) {
    char key = body[i++];
    size_t j = i;
    while (j < body.size() && std::isdigit(static_cast<unsigned char>(body[j]))) ++j;
    if (std::string("ncohwkspdg").find(key) == std::string::npos || j == i || j - i > 6)
      throw Error("wgc bench: size '" + s +
                  "' is not a preset or a spec like n32c64o64h56k3s1p1 (letters n c o h w k s p d g)");
    sp.v[key] = uint32_t(std::stoul(body.substr(i, j - i)));
    i = j;
  }
  return sp;
}

Conv2dDims conv_dims(const Spec& sp, bool depthwise) {
  Conv2dDims d;
  d.n = sp.get('n', 1), d.c_in = sp.get('c', 16), d.c_out = sp.get('o', d.c_in), d.h = sp.get('h', 16);
  d.w = sp.get('w', d.h), d.kh = d.kw = sp.get('k', 3), d.stride_h = d.stride_w = sp.get('s', 1);
  d.dil_h = d.dil_w = sp.get('d', 1), d.groups = sp.get('g', depthwise ? d.c_in : 1);
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = sp.get('p', (d.kh - 1) / 2 * d.dil_h);
  check(d);
  return d;
}

std::string conv_spec(const Conv2dDims& d) {
  std::string s = "n" + std::to_string(d.n) + "c" + std::to_string(d.c_in) + "o" + std::to_string(d.c_out) + "h" +
                  std::to_string(d.h);
  if (d.w != d.h) s += "w" + std::to_string(d.w);
  s += "k" + std::to_string(d.kh) + "s" + std::to_string(d.stride_h) + "p" + std::to_string(d.pad_top);
  if (d.dil_h != 1) s += "d" + std::to_string(d.dil_h);
  if (d.groups != 1) s += "g" + std::to_string(d.groups);
  return s;
}

// The sizes of an op: the --sizes entries (presets, specs, "mobilenetv2") or its defaults.
std::vector<std::string> size_list(const Options& o, const Context& ctx, std::vector<std::string> quick,
                                   std::vector<std::string> cpu_adapter, std::vector<std::string> gpu) {
  std::vector<std::string> in = !o.size_names.empty()    ? o.size_names
                                : o.quick                ? quick
                                : ctx.adapter().is_cpu() ? cpu_adapter
                                                         : gpu;
  std::vector<std::string> out;
  for (const auto& s : in) {
    if (!o.size_names.empty() && !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])))
      throw Error("wgc bench: convolution sizes are presets or specs, not numbers ('" + s + "')");
    out.push_back(kPresets.count(s) ? kPresets.at(s) : s);
  }
  return out;
}

std::vector<float> random_floats(uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// A Case::check: y poisoned, one run recorded, all of y against `want`.
std::function<double()> whole_output_check(const Context& ctx, std::function<void(Batch&)> record, Tensor y,
                                           std::shared_ptr<const std::vector<float>> want) {
  return [&ctx, record = std::move(record), y, want = std::move(want)] {
    fill_u32(ctx, y, kPoisonNaN);
    Batch b(ctx);
    record(b);
    b.run();
    auto got = download<float>(ctx, y);
    return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(*want));
  };
}

struct ConvData {
  Conv2dDims d;
  ConvEpilogue ep{true, false, Activation::Relu};
  std::vector<float> x, w, bias;
  Tensor tx, ty;
  std::vector<uint64_t> sample;  // checked outputs
  std::vector<float> want;
};

std::shared_ptr<ConvData> conv_data(const Context& ctx, const Conv2dDims& d) {
  auto cd = std::make_shared<ConvData>();
  cd->d = d;
  cd->x = random_floats(d.x_elements(), d.c_in * 7 + d.h);
  cd->w = random_floats(d.w_elements(), d.c_out * 3 + d.kh);
  cd->bias = random_floats(d.c_out, d.c_out);
  cd->tx = make_tensor(ctx, {int64_t(d.x_elements())}, cd->x);
  cd->ty = make_tensor(ctx, {int64_t(d.y_elements())});
  std::mt19937_64 rng(d.y_elements());
  uint64_t n = d.y_elements();
  for (size_t i = 0; i < std::min<uint64_t>(n, kCheckSamples); ++i)
    cd->sample.push_back(n <= kCheckSamples ? i : rng() % n);
  for (uint64_t i : cd->sample) cd->want.push_back(cpu::conv2d_reference_at(cd->x, cd->w, cd->bias, {}, d, cd->ep, i));
  return cd;
}

#ifdef WGC_HAVE_CBLAS
// im2col + sgemm per image and group (bias and ReLU not included: they cost little).
void blas_conv(const ConvData& cd) {
  const Conv2dDims& d = cd.d;
  Conv2dDims one = d;
  one.n = 1;
  uint32_t k = d.c_in / d.groups * d.kh * d.kw, cout_g = d.c_out / d.groups, pix = d.out_h() * d.out_w();
  std::vector<float> col(size_t(k) * pix), y(d.y_elements());
  for (uint32_t n = 0; n < d.n; ++n) {
    std::span<const float> xn = std::span(cd.x).subspan(size_t(n) * d.c_in * d.h * d.w, size_t(d.c_in) * d.h * d.w);
    for (uint32_t g = 0; g < d.groups; ++g) {
      cpu::im2col(xn, col, one, g);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(cout_g), int(pix), int(k), 1.f,
                  cd.w.data() + size_t(g) * cout_g * k, int(k), col.data(), int(pix), 0.f,
                  y.data() + (size_t(n) * d.c_out + size_t(g) * cout_g) * pix, int(pix));
    }
  }
}
#endif

// One case per version of `versions` that runs d (Auto: the version Auto picks, named so).
std::vector<Case> conv_cases(const Context& ctx, const std::string& op, const Conv2dDims& d,
                             const std::vector<Conv2dVersion>& versions, bool bytes_bound) {
  std::vector<Case> out;
  std::shared_ptr<ConvData> cd;
  for (Conv2dVersion v : versions) {
    if (!supports(ctx, v, d)) continue;
    if (!cd) cd = conv_data(ctx, d);
    auto layer = std::make_shared<PreparedConv>(prepare_conv2d(ctx, cd->w, cd->bias, d, v));
    Case c;
    c.op = op;
    c.version = v == Conv2dVersion::Auto ? "auto:" + std::string(to_string(layer->version)) : std::string(to_string(v));
    c.size = conv_spec(d);
    double bytes = 4.0 * double(d.x_elements() + d.w_elements() + d.y_elements() + d.c_out);
    c.elements = bytes_bound ? bytes : d.flops();
    c.x_label = bytes_bound ? "bytes moved (x, w, y)" : "layer FLOPs";
    c.flops = bytes_bound ? 0 : d.flops();  // Winograd too: the direct FLOPs, so rates compare
    c.bytes = bytes;
    c.record = [cd, layer](Batch& b) { conv2d(b, *layer, cd->tx, {}, cd->ty, cd->ep); };
    c.check = [cd, layer, &ctx] {
      fill_u32(ctx, cd->ty, kPoisonNaN);
      Batch b(ctx);
      conv2d(b, *layer, cd->tx, {}, cd->ty, cd->ep);
      b.run();
      auto y = download<float>(ctx, cd->ty);
      std::vector<float> got;
      for (uint64_t i : cd->sample) got.push_back(y[size_t(i)]);
      return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(cd->want));
    };
    double k = double(d.c_in / d.groups) * d.kh * d.kw;
    bool winograd = layer->version == Conv2dVersion::Winograd2x2;
    c.tolerance = (winograd ? 1e-4 : 1e-5) * (1 + std::sqrt(k));
    if (out.empty()) {  // CPU figures once per size
      if (d.flops() <= kPlainCpuMaxFlops)
        c.cpu = [cd] {
          std::vector<float> y(cd->d.y_elements());
          cpu::conv2d(cd->x, cd->w, cd->bias, {}, y, cd->d, cd->ep);
        };
#ifdef WGC_HAVE_CBLAS
      if (!d.depthwise() || d.groups == 1) c.cpu_blas = [cd] { blas_conv(*cd); };
#endif
    }
    out.push_back(std::move(c));
  }
  return out;
}

const std::vector<Conv2dVersion> kAll(std::begin(kConv2dVersions), std::end(kConv2dVersions));

std::vector<Case> conv2d_op(const Context& ctx, const Options& o) {
  check_conv2d_tuning(ctx);
  std::vector<Case> out;
  for (const auto& s :
       size_list(o, ctx, {"n1c8o12h13k3p1"}, {"n1c32o32h28k3p1", "n2c24o40h17k3s2p1", "n1c64o24h28k1p0"},
                 {"n32c64o64h56k3p1", "n32c256o256h14k3p1", "n32c144o24h56k1p0", "mobilenetv2"})) {
    if (s == "mobilenetv2" || s == "mobilenetv2-all") {  // Auto's version only, or every one
      for (const char* l : kMobileNetV2Conv)
        for (auto& c : conv_cases(ctx, "conv2d", conv_dims(parse_spec(l), false),
                                  s == "mobilenetv2" ? std::vector{Conv2dVersion::Auto} : kAll, false))
          out.push_back(std::move(c));
      continue;
    }
    Conv2dDims d = conv_dims(parse_spec(s), false);
    for (auto& c : conv_cases(ctx, "conv2d", d, kAll, false)) out.push_back(std::move(c));
  }
  return out;
}

// Sets the convolution knobs for its lifetime.
struct TuningScope {
  ConvTuning saved = conv2d_tuning();
  explicit TuningScope(const ConvTuning& t) { conv2d_tuning() = t; }
  ~TuningScope() { conv2d_tuning() = saved; }
  TuningScope(const TuningScope&) = delete;
  TuningScope& operator=(const TuningScope&) = delete;
};

// WGC_CONV_SWEEP="KNOBS;KNOBS;..." (each in WGC_CONV_TUNING's form, over it): the depthwise
// versions whose knobs a set names (dwr_* depthwise-reg, dw_tile_* depthwise, dw_rows
// depthwise-rows, dw_threads both) timed again under each set, named "VERSION [KNOBS]", so that
// one process (one device call) sweeps them all.
std::vector<Case> depthwise_sweep(const Context& ctx, const Conv2dDims& d) {
  std::vector<Case> out;
  const char* env = std::getenv("WGC_CONV_SWEEP");
  std::string all = env ? env : "";
  for (size_t pos = 0; pos < all.size();) {
    size_t end = std::min(all.find(';', pos), all.size());
    std::string set = all.substr(pos, end - pos);
    pos = end + 1;
    if (set.empty()) continue;
    ConvTuning t = parse_conv2d_tuning(set, conv2d_tuning());
    std::vector<Conv2dVersion> versions;
    if (set.find("dw_tile") != std::string::npos || set.find("dw_threads") != std::string::npos)
      versions.push_back(Conv2dVersion::Depthwise);
    if (set.find("dw_rows") != std::string::npos || set.find("dw_threads") != std::string::npos)
      versions.push_back(Conv2dVersion::DepthwiseRows);
    if (set.find("dwr_") != std::string::npos) versions.push_back(Conv2dVersion::DepthwiseReg);
    std::vector<Case> cases;
    {
      TuningScope scope(t);
      check_conv2d_tuning(ctx);
      cases = conv_cases(ctx, "depthwise", d, versions, true);
    }
    for (auto& c : cases) {
      c.version += " [" + set + "]";
      c.cpu = {}, c.cpu_blas = {};  // timed with the default cases
      c.record = [rec = c.record, t](Batch& b) {
        TuningScope scope(t);
        rec(b);
      };
      c.check = [check = c.check, t] {
        TuningScope scope(t);
        return check();
      };
      out.push_back(std::move(c));
    }
  }
  return out;
}

// The copy kernel that the bandwidth figure uses (vec4), moving x's bytes in and out: at a
// layer's size the launch and the drain are a visible part of the time, so the layer's GB/s over
// this row's is how close it comes to a copy of its own size (the table's "% of copy" is over a
// copy of 1 GiB, which no 100 MB kernel reaches).
Case same_bytes_copy(const Context& ctx, const Conv2dDims& d) {
  auto x = std::make_shared<std::vector<float>>(random_floats(d.x_elements(), 5));
  Tensor tx = make_tensor(ctx, {int64_t(x->size())}, *x), ty = make_tensor(ctx, {int64_t(x->size())});
  Case c;
  c.op = "depthwise";
  c.version = "copy (x's bytes)";
  c.size = conv_spec(d);
  c.bytes = c.elements = 8.0 * double(d.x_elements());
  c.x_label = "bytes moved (x, y)";
  c.record = [tx, ty, n = d.x_elements()](Batch& b) { copy(b, tx, ty, {n}, {}, MapVersion::Vec4); };
  c.check = whole_output_check(ctx, c.record, ty, x);
  c.tolerance = 1e-7;
  return c;
}

std::vector<Case> depthwise_op(const Context& ctx, const Options& o) {
  check_conv2d_tuning(ctx);
  // The depthwise kernel against the general ones that take groups; rates in GB/s against the
  // copy bandwidth (depthwise layers are memory-bound).
  const std::vector<Conv2dVersion> versions{Conv2dVersion::Depthwise,    Conv2dVersion::DepthwiseRows,
                                            Conv2dVersion::DepthwiseReg, Conv2dVersion::Direct,
                                            Conv2dVersion::DirectTiled,  Conv2dVersion::ImplicitGemm};
  std::vector<Case> out;
  for (const auto& s : size_list(o, ctx, {"n1c12h13k3p1"}, {"n1c32h56k3p1", "n2c24h29k3s2p1", "n1c16o48h28k5p2g16"},
                                 {"n32c144h56k3p1g144", "mobilenetv2"})) {
    if (s == "mobilenetv2" || s == "mobilenetv2-all") {
      for (const char* l : kMobileNetV2Depthwise)
        for (auto& c : conv_cases(ctx, "depthwise", conv_dims(parse_spec(l), true),
                                  s == "mobilenetv2" ? std::vector{Conv2dVersion::Auto} : versions, true))
          out.push_back(std::move(c));
      continue;
    }
    Conv2dDims d = conv_dims(parse_spec(s), true);
    if (!d.depthwise()) throw Error("wgc bench: depthwise size '" + s + "' is not a depthwise convolution");
    for (auto& c : conv_cases(ctx, "depthwise", d, versions, true)) out.push_back(std::move(c));
    out.push_back(same_bytes_copy(ctx, d));
    for (auto& c : depthwise_sweep(ctx, d)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<Case> winograd_op(const Context& ctx, const Options& o) {
  check_conv2d_tuning(ctx);
  const std::vector<Conv2dVersion> versions{Conv2dVersion::Winograd2x2, Conv2dVersion::ImplicitGemm};
  std::vector<Case> out;
  for (const auto& s : size_list(o, ctx, {"n1c8o12h13k3p1"}, {"n1c32o32h28k3p1", "n1c64o64h14k3p1"},
                                 {"n32c64o64h56k3p1", "n32c256o256h14k3p1", "n1c64o64h56k3p1"})) {
    Conv2dDims d = conv_dims(parse_spec(s), false);
    if (!supports(ctx, Conv2dVersion::Winograd2x2, d))
      throw Error("wgc bench: winograd size '" + s + "' is not a 3x3 stride-1 undilated ungrouped convolution");
    for (auto& c : conv_cases(ctx, "winograd", d, versions, false)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<Case> pool_op(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  for (const auto& s :
       size_list(o, ctx, {"max:n1c5h13k3s2p1"}, {"max:n1c32h56k3s2p1", "avg:n1c32h28k3s1p1", "gap:n1c256h7"},
                 {"max:n32c64h112k3s2p1", "gap:n32c1280h7", "avg:n32c256h28k3s1p1"})) {
    Spec sp = parse_spec(s);
    if (sp.kind != "max" && sp.kind != "avg" && sp.kind != "gap")
      throw Error("wgc bench: pool size '" + s + "' must start with max:, avg: or gap:");
    Pool2dDims d;
    d.n = sp.get('n', 1), d.c = sp.get('c', 16), d.h = sp.get('h', 16), d.w = sp.get('w', d.h);
    d.kh = d.kw = sp.kind == "gap" ? 1 : sp.get('k', 3);
    d.stride_h = d.stride_w = sp.get('s', 1);
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = sp.get('p', 0);
    check(d);
    bool gap = sp.kind == "gap";
    PoolKind kind = sp.kind == "max" ? PoolKind::Max : PoolKind::Average;
    auto x = std::make_shared<std::vector<float>>(random_floats(d.x_elements(), d.c + d.h));
    uint64_t ny = gap ? uint64_t(d.n) * d.c : d.y_elements();
    auto want = std::make_shared<std::vector<float>>(ny);
    auto run_cpu = [x, d, gap, kind](std::vector<float>& y) {
      if (gap)
        cpu::global_average_pool(*x, y, d.n, d.c, d.h * d.w);
      else
        cpu::pool2d(*x, y, d, kind);
    };
    run_cpu(*want);
    Tensor tx = make_tensor(ctx, {int64_t(x->size())}, *x), ty = make_tensor(ctx, {int64_t(ny)});
    auto record = [tx, ty, d, gap, kind](Batch& b) {
      if (gap)
        global_average_pool(b, tx, ty, d.n, d.c, d.h * d.w);
      else
        pool2d(b, tx, ty, d, kind);
    };
    Case c;
    c.op = "pool";
    c.version = sp.kind;
    c.size = s;
    c.bytes = 4.0 * double(d.x_elements() + ny);
    c.elements = c.bytes;
    c.x_label = "bytes moved (x, y)";
    c.record = record;
    c.check = whole_output_check(ctx, record, ty, want);
    c.tolerance = 1e-5;
    c.cpu = [run_cpu, ny] {
      std::vector<float> y(ny);
      run_cpu(y);
    };
    out.push_back(std::move(c));
  }
  return out;
}

Register conv_reg("conv2d", conv2d_op);
Register dw_reg("depthwise", depthwise_op);
Register wino_reg("winograd", winograd_op);
Register pool_reg("pool", pool_op);

}  // namespace
}  // namespace wgc::bench
