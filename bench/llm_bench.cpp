// `wgc bench --ops llm.matvec,llm.matmul,llm.batched,llm.attention`: every version of the LLM
// linear kernels for the main weight types at an 8B model's square projection (4096 x 4096 by
// default; --sizes sets the side): matvec = one token (rate: the bytes it must read), matmul =
// prefill of 512 tokens (FLOPs), batched = the serving kernel at 1..256 tokens (the tiled prefill
// kernel beside it); attention = one decode token over a long context, contiguous vs paged cache,
// and 64 sequences' decode tokens over their own blocks, and a 512-token prefill after the
// context (FLOPs; llm.attention-prefill: that alone). Checked against the CPU reference (double
// precision) on the first tokens.
#include "bench/bench.h"
#include "cpu/llm/llm_ref.h"
#include "ops/llm/llm_ops.h"
#include "util/error.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

namespace wgc::bench {
namespace {

using llm::LinearVersion;
using llm::TensorType;

constexpr int kPrefillTokens = 512;
constexpr int kCheckedTokens = 2;  // tokens compared with the CPU reference
constexpr int kMaxLinks = 256;     // WGC_BENCH_LINKS

struct LinearData {
  std::vector<llm::GpuWeight> ws;  // the links' weights (chain_links); ws[0] is the one checked
  std::vector<double> deq;         // the weights as the reference sees them
  std::vector<float> x;
  Tensor xt, y;
  llm::Q8Act xq;  // x quantized (versions q8: the integer-dot kernels)
};

enum class Kind { Matvec, Matmul, Batched };

// Versions "kx" run the kx schedule for every kind (tuning.matvec_kx 7; the other kx knobs from the
// tuning set); the others run what the tuning says (by default kx too where the version is
// Subgroup).
constexpr uint32_t kKxAll = llm::LlmOps::kKxSwiglu | llm::LlmOps::kKxPlain | llm::LlmOps::kKxRope;

// LlmOps with a tuning set of --tuning (or WGC_LLM_TUNING), so that a benchmark run sweeps the
// kernels' knobs without a rebuild: llm::split_tuning_sets' "key=value,..." sets separated by ';',
// each timed as its own version ("VERSION [SET]", which --versions VERSION keeps) of every case, on
// the same data.
struct TuningSet {
  std::string spec;
  std::shared_ptr<llm::LlmOps> ops, kx;  // kx: the same with the kx schedule for every kind and width
};
std::vector<TuningSet> tuning_sets(const Context& ctx, const Options& o) {
  std::vector<TuningSet> sets;
  const char* env = std::getenv("WGC_LLM_TUNING");
  for (const std::string& spec : llm::split_tuning_sets(!o.tuning.empty() ? o.tuning : env ? env : "")) {
    TuningSet t{spec, std::make_shared<llm::LlmOps>(ctx), std::make_shared<llm::LlmOps>(ctx)};
    llm::apply_tuning(t.ops->tuning, t.spec);
    t.kx->tuning = t.ops->tuning;
    t.kx->tuning.matvec_kx = kKxAll;
    sets.push_back(std::move(t));
  }
  return sets;
}

// One case per tuning set, make(ops) making it for the set's ops (kx: its kx ops); the version
// gets " [SET]" where there are several sets. Sets whose ops cannot run the case (runs(ops)
// false) are left out, so that one set does not stop a run.
template <class Make>
void add_per_set(std::vector<Case>& out, const std::vector<TuningSet>& sets, bool kx, Make&& make,
                 const std::function<bool(const llm::LlmOps&)>& runs = {}) {
  for (const auto& t : sets) {
    if (runs && !runs(kx ? *t.kx : *t.ops)) continue;
    Case c = make(kx ? t.kx : t.ops);
    if (sets.size() > 1) c.version += " [" + t.spec + "]";
    out.push_back(std::move(c));
  }
}

// WGC_BENCH_LINKS=N (1..256, default 1): each llm.matvec case records N dispatches, one over each
// of N copies of its weights (distinct buffers, so nothing stays in the L2 from one to the next),
// timed as one span (Timing::Span, as gpu.chain-read): the table's us per dispatch is then a
// link's cost in a chain, comparable with a gpu.chain-read link of the same bytes.
int bench_links() {
  const char* env = std::getenv("WGC_BENCH_LINKS");
  if (!env) return 1;
  const std::string_view v(env);
  int n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > kMaxLinks)
    throw Error("WGC_BENCH_LINKS: '" + std::string(v) + "' is not a count of links from 1 to " +
                std::to_string(kMaxLinks));
  return n;
}

// The weights of a case's links: `links` uploads of the same bytes.
std::vector<llm::GpuWeight> link_weights(const Context& ctx, TensorType t, const std::vector<std::byte>& bytes,
                                         int64_t rows, int64_t cols, int links) {
  std::vector<llm::GpuWeight> ws;
  for (int i = 0; i < links; ++i) ws.push_back(llm::upload_weight(ctx, t, bytes, rows, cols));
  return ws;
}

// A case whose run records one dispatch per link (each over its own weights): timed as one span
// with its bytes and dispatches counted per link, where there is more than one.
void chain_links(Case& c, size_t links) {
  if (links <= 1) return;
  c.timing = Timing::Span;
  c.dispatches = double(links);
  c.bytes *= double(links);
}

// A case's record: `rec(batch, weight)` over every link's weights in `ws` (chain_links). Returns
// what its check compares: one run over the first link's weights into `y`, poisoned first. `keep`
// holds `ws` and `y` alive (the case's data).
template <class Rec>
std::function<std::vector<float>()> record_links(Case& c, const Context& ctx, std::shared_ptr<const void> keep,
                                                 const std::vector<llm::GpuWeight>& ws, Tensor y, Rec rec) {
  const auto* links = &ws;
  c.record = [keep, links, rec](Batch& b) {
    for (const auto& w : *links) rec(b, w);
  };
  chain_links(c, ws.size());
  return [keep, links, y, rec, &ctx] {
    fill_u32(ctx, y, kPoisonNaN);
    Batch b(ctx);
    rec(b, links->front());
    b.run();
    return download<float>(ctx, y);
  };
}

// Whether o asks for this version (or for all).
// (WGC_BENCH_LLM_VERSIONS: a comma-separated list as --versions, for the llm.* benches alone, so
// that a GPU run's other bench steps keep all their versions.)
std::vector<std::string> llm_versions() {
  std::vector<std::string> v;
  const char* env = std::getenv("WGC_BENCH_LLM_VERSIONS");
  for (std::string_view rest = env ? env : ""; !rest.empty();) {
    const size_t comma = rest.find(',');
    if (comma != 0) v.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return v;
}
bool wanted(const Options& o, const std::string& version) {
  auto in = [&](const std::vector<std::string>& vs) {
    return vs.empty() || std::find(vs.begin(), vs.end(), version) != vs.end();
  };
  return in(o.versions) && in(llm_versions());
}
// Whether WGC_BENCH_SHAPES (comma-separated sizes as the table prints them, e.g.
// "4096x14336,2x14336x4096"; unset: all) asks for a llm.matvec case of this size.
bool wanted_shape(const std::string& size) {
  const char* env = std::getenv("WGC_BENCH_SHAPES");
  if (!env || !*env) return true;
  const std::string list = std::string(",") + env + ",";
  return list.find("," + size + ",") != std::string::npos;
}

// Whether o asks for any version of weight type t ("F16/..."), so that its cases are worth building.
bool wanted_type(const Options& o, TensorType t) {
  const std::string prefix = std::string(llm::to_string(t)) + "/";
  auto in = [&](const std::vector<std::string>& vs) {
    return vs.empty() || std::any_of(vs.begin(), vs.end(), [&](const std::string& v) { return v.starts_with(prefix); });
  };
  return in(o.versions) && in(llm_versions());
}

// The fused RMSNorm + gate|up + SwiGLU matvec of one token (rms_norm_swiglu, as a decode step
// runs it) on F16 weights of 2 x ffn rows: an 8B model's 2 x 14336 x 4096 at side 4096.
void swiglu_cases(std::vector<Case>& out, const Context& ctx, const std::vector<TuningSet>& sets, int64_t ffn,
                  int64_t cols, bool kx) {
  if (!wanted_shape("2x" + std::to_string(ffn) + "x" + std::to_string(cols))) return;
  struct Data {
    std::vector<llm::GpuWeight> ws;  // the links' weights; ws[0] is checked
    std::vector<double> deq;
    std::vector<float> x, nw;
    Tensor xt, nt, y;
  };
  constexpr float kEps = 1e-5f;
  auto d = std::make_shared<Data>();
  const TensorType t = TensorType::F16;
  auto bytes = llm::ref::random_weight(t, 2 * ffn, cols, 9);
  d->ws = link_weights(ctx, t, bytes, 2 * ffn, cols, bench_links());
  d->deq = llm::ref::dequantize(t, bytes, 2 * ffn, cols);
  d->x.resize(size_t(cols));
  d->nw.resize(size_t(cols));
  for (size_t i = 0; i < d->x.size(); ++i) {
    d->x[i] = float(std::sin(double(i) * 0.37));
    d->nw[i] = float(1.0 + 0.5 * std::cos(double(i) * 0.11));
  }
  d->xt = make_tensor(ctx, {cols}, d->x);
  d->nt = make_tensor(ctx, {cols}, d->nw);
  d->y = make_tensor(ctx, {ffn});
  add_per_set(out, sets, kx, [&](std::shared_ptr<llm::LlmOps> ops) {
    Case c;
    c.op = "llm.matvec";
    c.version = std::string(llm::to_string(t)) + "/swiglu-norm" + (kx ? "-kx" : "");
    c.size = "2x" + std::to_string(ffn) + "x" + std::to_string(cols);
    c.elements = 2.0 * double(ffn) * double(cols);
    c.bytes = double(d->ws[0].gpu_bytes()) + 8.0 * double(cols) + 4.0 * double(ffn);
    auto run = record_links(c, ctx, d, d->ws, d->y, [ops, d = d.get()](Batch& b, const llm::GpuWeight& w) {
      ops->rms_norm_swiglu(b, d->xt, d->nt, kEps, w, d->y);
    });
    c.check = [run, d, ffn, cols] {
      auto got = run();
      auto xn = llm::ref::rms_norm(d->x, d->nw, 1, int(cols), kEps);
      auto to_f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
      auto want = llm::ref::swiglu(to_f(llm::ref::linear(d->deq, cols, xn, 1, 0, ffn)),
                                   to_f(llm::ref::linear(d->deq, cols, xn, 1, ffn, ffn)));
      return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(want));
    };
    return c;
  });
}

// The fused RMSNorm + QKV + RoPE + KV-append matvec of one token (rms_norm_qkv_rope, as a decode
// step runs it) on F16 weights of an 8B model's heads at side 4096 (32 query and 8 KV heads of
// 128: 6144 x 4096; side / 128 query heads, a quarter as many KV heads), interleaved pairs (GGUF
// Llama's) at position 5. Checked on the rotated query rows.
void qkv_rope_cases(std::vector<Case>& out, const Context& ctx, const std::vector<TuningSet>& sets, int64_t side) {
  constexpr int hd = 128, kPos = 5, kMaxPos = 16;
  constexpr float kEps = 1e-5f;
  const int nh = int(std::max<int64_t>(1, side / hd)), nkv = std::max(1, nh / 4);
  const int64_t rows = int64_t(nh + 2 * nkv) * hd, cols = side;
  if (!wanted_shape(std::to_string(rows) + "x" + std::to_string(cols))) return;
  struct Data {
    std::vector<llm::GpuWeight> ws;
    std::vector<double> deq;
    std::vector<float> x, nw, inv;
    Tensor xt, nt, qkv;
    llm::RopeTable table;
    llm::KvCache cache;
  };
  auto d = std::make_shared<Data>();
  const TensorType t = TensorType::F16;
  auto bytes = llm::ref::random_weight(t, rows, cols, 13);
  d->ws = link_weights(ctx, t, bytes, rows, cols, bench_links());
  d->deq = llm::ref::dequantize(t, bytes, rows, cols);
  d->x.resize(size_t(cols));
  d->nw.resize(size_t(cols));
  for (size_t i = 0; i < d->x.size(); ++i) {
    d->x[i] = float(std::sin(double(i) * 0.37));
    d->nw[i] = float(1.0 + 0.5 * std::cos(double(i) * 0.11));
  }
  std::vector<double> inv(hd / 2);
  for (int i = 0; i < hd / 2; ++i) inv[size_t(i)] = std::pow(500000.0, -2.0 * i / hd);
  d->inv.assign(inv.begin(), inv.end());
  d->table = llm::make_rope_table(ctx, inv, hd, kMaxPos);
  d->cache = llm::make_kv_cache(ctx, 1, nkv, kMaxPos, hd);
  d->xt = make_tensor(ctx, {cols}, d->x);
  d->nt = make_tensor(ctx, {cols}, d->nw);
  d->qkv = make_tensor(ctx, {rows});
  llm::RopeKvArgs a;
  a.n_heads = nh;
  a.pos0 = kPos;
  a.interleaved = true;
  add_per_set(out, sets, false, [&](std::shared_ptr<llm::LlmOps> ops) {
    auto rec = [ops, d, a](Batch& b, const llm::GpuWeight& w) {
      ops->rms_norm_qkv_rope(b, d->xt, d->nt, kEps, w, d->qkv, d->table, d->cache.layer(0), a);
    };
    Case c;
    c.op = "llm.matvec";
    c.version = std::string(llm::to_string(t)) + "/qkv-rope-norm";
    c.size = std::to_string(rows) + "x" + std::to_string(cols);
    c.elements = double(rows) * double(cols);
    c.bytes = double(d->ws[0].gpu_bytes()) + 8.0 * double(cols) + 4.0 * double(rows);
    auto run = record_links(c, ctx, d, d->ws, d->qkv, rec);
    c.check = [run, d, nh, cols] {
      auto got = run();
      got.resize(size_t(nh) * hd);
      auto xn = llm::ref::rms_norm(d->x, d->nw, 1, int(cols), kEps);
      auto q = llm::ref::linear(d->deq, cols, xn, 1, 0, int64_t(nh) * hd);
      std::vector<float> want(q.begin(), q.end());
      llm::ref::rope(want, 1, nh, hd, {kPos}, d->inv, true);
      return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(want));
    };
    return c;
  });
}

// The o projection of one token with the decode attention's combine folded in (combine_linear,
// as a decode step runs it): x merged in every workgroup from flash-decoding partials of side /
// 128 heads of 128 in 16 splits (an 8B step's: 128 workgroups over 8 KV heads, over the whole
// cache of 4096), of which the first holds keys and the others are masked (m = -3e38), as at
// tg128's depths (256 positions per split); F16 weights of side x side.
void combine_cases(std::vector<Case>& out, const Context& ctx, const std::vector<TuningSet>& sets, int64_t side) {
  constexpr int hd = 128, kSplits = 16, kKeyed = 1;
  constexpr float kMasked = -3.0e38f;  // flash_decode_sg.wgsl's m of a split past the position
  const int nh = int(std::max<int64_t>(1, side / hd));
  const int64_t rows = side, cols = int64_t(nh) * hd;
  if (!wanted_shape(std::to_string(rows) + "x" + std::to_string(cols))) return;
  struct Data {
    std::vector<llm::GpuWeight> ws;
    std::vector<double> deq;
    std::vector<float> part;
    llm::DecodePartials p;
    Tensor y;
  };
  auto d = std::make_shared<Data>();
  const TensorType t = TensorType::F16;
  auto bytes = llm::ref::random_weight(t, rows, cols, 17);
  d->ws = link_weights(ctx, t, bytes, rows, cols, bench_links());
  d->deq = llm::ref::dequantize(t, bytes, rows, cols);
  // [heads][splits][hd + 2]: the unnormalised acc, the max m, the sum l (> 0 where keyed)
  const size_t w = hd + 2;
  d->part.assign((size_t(nh) * kSplits * w + 3) / 4 * 4, 0.f);
  for (size_t i = 0; i < size_t(nh) * kSplits * w; ++i) {
    const size_t e = i % w;
    if ((i / w) % kSplits >= kKeyed)
      d->part[i] = e == size_t(hd) ? kMasked : 0.f;
    else
      d->part[i] = e < size_t(hd)    ? float(std::sin(double(i) * 0.37))
                   : e == size_t(hd) ? float(0.5 * std::sin(double(i) * 0.013))
                                     : float(1.5 + std::cos(double(i) * 0.07));
  }
  d->p.part = make_tensor(ctx, {int64_t(d->part.size())}, d->part);
  d->p.splits = kSplits;
  d->p.n_heads = nh;
  d->p.head_dim = hd;
  d->y = make_tensor(ctx, {rows});
  add_per_set(
      out, sets, false,
      [&](std::shared_ptr<llm::LlmOps> ops) {
        auto rec = [ops, d](Batch& b, const llm::GpuWeight& wt) { ops->combine_linear(b, d->p, wt, d->y, {}); };
        Case c;
        c.op = "llm.matvec";
        c.version = std::string(llm::to_string(t)) + "/combine-o";
        c.size = std::to_string(rows) + "x" + std::to_string(cols);
        c.elements = double(rows) * double(cols);
        c.bytes = double(d->ws[0].gpu_bytes()) + 4.0 * double(d->part.size()) + 4.0 * double(rows);
        auto run = record_links(c, ctx, d, d->ws, d->y, rec);
        c.check = [run, d, nh, cols, rows] {
          auto got = run();
          // attn_combine's merge: the splits' accs weighted by exp(m_s - max m), over the weighted ls
          std::vector<float> x(static_cast<size_t>(cols));
          const size_t sw = hd + 2;
          for (int h = 0; h < nh; ++h) {
            const float* ph = d->part.data() + size_t(h) * kSplits * sw;
            double mx = -1e300, l = 0;
            for (int s = 0; s < kSplits; ++s) mx = std::max(mx, double(ph[size_t(s) * sw + hd]));
            std::vector<double> acc(hd, 0.0);
            for (int s = 0; s < kSplits; ++s) {
              const double f = std::exp(double(ph[size_t(s) * sw + hd]) - mx);
              l += f * ph[size_t(s) * sw + hd + 1];
              for (int e = 0; e < hd; ++e) acc[size_t(e)] += f * ph[size_t(s) * sw + size_t(e)];
            }
            for (int e = 0; e < hd; ++e) x[size_t(h) * hd + size_t(e)] = float(acc[size_t(e)] / l);
          }
          auto want = llm::ref::linear(d->deq, cols, x, 1, 0, rows);
          return cpu::max_rel_error(std::span<const float>(got), std::span<const double>(want));
        };
        return c;
      },
      [d](const llm::LlmOps& ops) {
        return ops.fuses_combine(TensorType::F16, d->p);
      });  // e.g. little workgroup memory
}

std::vector<Case> linear_cases(const Context& ctx, const Options& o, Kind kind) {
  const auto sets = tuning_sets(ctx, o);
  const auto& ops = sets.front().ops;  // x quantized for the q8 versions (any set's quantization)
  std::vector<int> token_counts = {kind == Kind::Matmul ? (o.quick ? 7 : kPrefillTokens) : 1};
  if (kind == Kind::Batched) token_counts = o.quick ? std::vector<int>{1, 7} : std::vector<int>{1, 8, 16, 32, 64, 256};
  const bool prefill = kind != Kind::Matvec;
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {256}, {256}, {4096}))
    for (int n : token_counts) {
      std::vector<std::pair<LinearVersion, std::string>> versions;
      if (kind == Kind::Matmul) {
        versions = {{LinearVersion::Shared, "tiled"}, {LinearVersion::RegTile, "regtile"}};
      } else if (kind == Kind::Batched) {
        versions = {{LinearVersion::Batched, "batched"}};
        if (n > 1) versions.push_back({LinearVersion::Shared, "tiled"});
      } else {
        versions = {{LinearVersion::Naive, "naive"}, {LinearVersion::Shared, "shared"}};
        if (ctx.features().subgroups) {
          versions.push_back({LinearVersion::Subgroup, "subgroup"});
          versions.push_back({LinearVersion::Subgroup, "kx"});  // the kx schedule (matvec_kx)
        }
      }
      const auto side = static_cast<int64_t>(s);
      // Matvec also at a tall shape (an 8B model's ffn rows at side 4096: 14336 x 4096), which a
      // single square matvec is too small to show (launch-bound), and a wide one (its down
      // projection: 4096 x 14336).
      std::vector<std::pair<int64_t, int64_t>> shapes = {{side, side}};  // rows, cols
      if (kind == Kind::Matvec && side % 128 == 0) {                     // whole heads of 128
        if (wanted(o, "F16/qkv-rope-norm")) qkv_rope_cases(out, ctx, sets, side);
        if (wanted(o, "F16/combine-o")) combine_cases(out, ctx, sets, side);
      }
      if (kind == Kind::Matvec && !o.quick) {
        shapes.push_back({side * 7 / 2 / 32 * 32, side});
        shapes.push_back({side, side * 7 / 2 / 256 * 256});
        shapes.push_back({side * 3 / 2, side});  // an 8B model's fused QKV (6144 x 4096)
        if (ctx.features().subgroups)
          for (bool kx : {false, true})
            if (wanted(o, std::string("F16/swiglu-norm") + (kx ? "-kx" : "")))
              swiglu_cases(out, ctx, sets, side * 7 / 2 / 32 * 32, side, kx);
      }
      for (const auto& shape : shapes)
        for (TensorType t : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K, TensorType::Q6_K}) {
          const int64_t nrows = shape.first, cols = shape.second;  // variables, not bindings: lambdas capture them
          if (!wanted_type(o, t)) continue;                        // no version of this type asked for: not built
          if (kind == Kind::Matvec && !wanted_shape(std::to_string(nrows) + "x" + std::to_string(cols))) continue;
          if (cols % int64_t(llm::block_size(t))) continue;
          if (kind == Kind::Batched && (t == TensorType::Q4_K || t == TensorType::Q6_K)) continue;
          auto d = std::make_shared<LinearData>();
          auto bytes = llm::ref::random_weight(t, nrows, cols, 7);
          d->ws = link_weights(ctx, t, bytes, nrows, cols, kind == Kind::Matvec ? bench_links() : 1);
          d->deq = llm::ref::dequantize(t, bytes, nrows, cols);
          d->x.resize(size_t(n) * size_t(cols));
          for (size_t i = 0; i < d->x.size(); ++i) d->x[i] = float(std::sin(double(i) * 0.37));
          d->xt = make_tensor(ctx, {int64_t(d->x.size())}, d->x);
          d->y = make_tensor(ctx, {int64_t(n) * nrows});
          auto all = versions;
          if (kind == Kind::Batched && (t == TensorType::Q8_0 || t == TensorType::Q4_0))
            all.push_back({LinearVersion::BatchedQ8, "batched-q8"});
          const bool q8 = kind != Kind::Batched && llm::supports_q8(t);
          if (q8) {
            d->xq = llm::make_q8_act(ctx, n, cols);
            Batch b(ctx);
            ops->quantize_q8(b, d->xt, d->xq, n);
            b.run();
            all.push_back({LinearVersion::Auto, "q8"});  // Auto stands for linear_q8 here
          }
          for (const auto& version : all) {
            const LinearVersion v = version.first;  // a variable, not a binding: lambdas capture it (clang 14)
            const std::string& vname = version.second;
            if (vname == "kx" && t != TensorType::F16) continue;  // float weights only (F16 stands for them)
            if (!wanted(o, std::string(llm::to_string(t)) + "/" + vname)) continue;
            const bool is_q8 = vname == "q8";
            add_per_set(out, sets, vname == "kx", [&](std::shared_ptr<llm::LlmOps> vops) {
              Case c;
              c.op = kind == Kind::Matvec ? "llm.matvec" : kind == Kind::Matmul ? "llm.matmul" : "llm.batched";
              c.version = std::string(llm::to_string(t)) + "/" + vname;
              c.size = std::to_string(nrows) + "x" + std::to_string(cols) + (prefill ? "x" + std::to_string(n) : "");
              c.elements = double(nrows) * double(cols);
              // x as the kernel reads it: f32, or 8-bit quants with a scale and sums per 32.
              const double x_bytes =
                  is_q8 ? double(n) * double(cols) * (1.0 + 8.0 / 32) : 4.0 * double(n) * double(cols);
              c.bytes = double(d->ws[0].gpu_bytes()) + x_bytes + 4.0 * double(n) * double(nrows);
              if (prefill && n > 1) c.flops = 2.0 * double(n) * double(nrows) * double(cols);
              auto rec = [vops, d, v, n, is_q8](Batch& b, const llm::GpuWeight& w) {
                if (is_q8)
                  vops->linear_q8(b, w, d->xq, d->y, n);
                else
                  vops->linear(b, w, d->xt, d->y, n, {}, v);
              };
              auto run = record_links(c, ctx, d, d->ws, d->y, rec);
              c.check = [run, d, n, cols, nrows] {
                auto got = run();
                const int k = std::min(n, kCheckedTokens);
                std::vector<float> xk(d->x.begin(), d->x.begin() + std::ptrdiff_t(k * cols));
                auto want = llm::ref::linear(d->deq, cols, xk, k, 0, nrows);
                return cpu::max_rel_error(std::span<const float>(got), std::span<const double>(want));
              };
              c.tolerance = v == LinearVersion::BatchedQ8 || is_q8 ? 3e-2 : 1e-4;  // 8-bit activations
              return c;
            });
          }
        }
    }
  return out;
}

// K or V rows [len][nkv][hd] in the cache's layout [nkv][len][hd].
std::vector<float> cache_layout(const std::vector<float>& rows, int len, int nkv, int hd) {
  std::vector<float> out(rows.size());
  for (int p = 0; p < len; ++p)
    for (int h = 0; h < nkv; ++h)
      std::copy_n(rows.begin() + std::ptrdiff_t((size_t(p) * nkv + size_t(h)) * hd), hd,
                  out.begin() + std::ptrdiff_t((size_t(h) * size_t(len) + size_t(p)) * hd));
  return out;
}

// Decode attention: one token over `len` cached positions, contiguous cache vs paged (blocks of
// 16, scattered); and `seqs` sequences' decode tokens at once over their own blocks (paged). An
// 8B model's heads: 32 query, 8 KV, head_dim 128. Rate: the K/V bytes read.
struct AttnData {
  llm::KvCache flat;
  llm::KvCache pool;
  llm::PagedAttentionPlan one, many;
  Tensor q, out;
  std::vector<float> qv, kv, vv;  // q [seqs][nh][hd]; k, v [len][nkv][hd] of sequence 0
};

// Prefill attention: n tokens after `len` cached positions (an 8B model's heads), FLOPs of the
// two products counted over the visible keys. Checked on the first and last tokens.
Case prefill_attention_case(const Context& ctx, std::shared_ptr<llm::LlmOps> ops, int len, int n) {
  constexpr int nh = 32, nkv = 8, hd = 128;
  struct Data {
    llm::KvCache cache;
    Tensor q, out;
    std::vector<float> qv, kv, vv;  // q [n][nh][hd]; k, v [len + n][nkv][hd]
  };
  auto d = std::make_shared<Data>();
  const int total = len + n;
  d->cache = llm::make_kv_cache(ctx, 1, nkv, total, hd);
  d->kv.resize(size_t(total) * nkv * hd);
  d->vv.resize(d->kv.size());
  for (size_t i = 0; i < d->kv.size(); ++i) {
    d->kv[i] = float(std::sin(double(i) * 0.011));
    d->vv[i] = float(std::cos(double(i) * 0.007));
  }
  const auto ck = cache_layout(d->kv, total, nkv, hd), cv = cache_layout(d->vv, total, nkv, hd);
  upload(ctx, d->cache.k, std::as_bytes(std::span(ck)));
  upload(ctx, d->cache.v, std::as_bytes(std::span(cv)));
  d->qv.resize(size_t(n) * nh * hd);
  for (size_t i = 0; i < d->qv.size(); ++i) d->qv[i] = float(std::sin(double(i) * 0.13));
  d->q = make_tensor(ctx, {int64_t(d->qv.size())}, d->qv);
  d->out = make_tensor(ctx, {int64_t(d->qv.size())});
  auto rec = [d, ops, len, n](Batch& b) {
    llm::AttentionArgs a;
    a.n_tokens = n;
    a.n_heads = nh;
    a.start = len;
    ops->attention_prefill(b, d->cache.layer(0), d->q, d->out, a);
  };
  Case c;
  c.op = "llm.attention";
  c.version = "prefill";
  c.size = std::to_string(len) + "+" + std::to_string(n);
  c.elements = double(len);
  c.flops = 4.0 * hd * nh * (double(n) * len + double(n) * (n + 1) / 2);
  c.bytes = 2.0 * double(total) * nkv * hd * 4 + 2.0 * double(n) * nh * hd * 4;
  c.record = rec;
  c.check = [d, rec, &ctx, len, n] {
    fill_u32(ctx, d->out, kPoisonNaN);
    Batch b(ctx);
    rec(b);
    b.run();
    auto got = download<float>(ctx, d->out);
    // tokens 0 and n - 1 (at positions len and len + n - 1)
    std::vector<float> sel, want;
    for (int t : {0, n - 1}) {
      const auto row = [&](const std::vector<float>& x) {
        return std::vector<float>(x.begin() + t * nh * hd, x.begin() + (t + 1) * nh * hd);
      };
      auto w = llm::ref::attention(row(d->qv), d->kv, d->vv, 1, nh, nkv, hd, len + t, 1.f / std::sqrt(float(hd)));
      want.insert(want.end(), w.begin(), w.end());
      auto g = row(got);
      sel.insert(sel.end(), g.begin(), g.end());
    }
    return cpu::max_rel_error(std::span<const float>(sel), std::span<const float>(want));
  };
  c.tolerance = 1e-4;
  return c;
}

// llm.attention: --tuning (WGC_LLM_TUNING) may hold several tuning sets separated by ';' (knobs within a set
// by ',' or '/'), each timed as its own contiguous-decode and prefill case ("contiguous:SET"),
// so that one run compares the attention kernels' schedules; the paged cases run the first set.
std::vector<std::pair<std::string, std::shared_ptr<llm::LlmOps>>> attention_tunings(const Context& ctx,
                                                                                    const Options& o) {
  std::vector<std::pair<std::string, std::shared_ptr<llm::LlmOps>>> sets;
  for (auto& t : tuning_sets(ctx, o)) sets.emplace_back(t.spec, t.ops);
  return sets;
}

std::vector<Case> prefill_attention_cases(const Context& ctx,
                                          const std::vector<std::pair<std::string, std::shared_ptr<llm::LlmOps>>>& sets,
                                          int len, const Options& o) {
  std::vector<Case> out;
  for (const auto& [spec, tops] : sets) {
    out.push_back(prefill_attention_case(ctx, tops, len, o.quick ? 24 : kPrefillTokens));
    if (sets.size() > 1) out.back().version += ":" + spec;
  }
  return out;
}

std::vector<Case> attention_cases(const Context& ctx, const Options& o) {
  const auto sets = attention_tunings(ctx, o);
  const auto& ops = sets.front().second;
  constexpr int nh = 32, nkv = 8, hd = 128, block = 16;
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {64}, {64}, {4096})) {
    const int len = std::max(16, int(s)), seqs = o.quick ? 3 : 64;
    auto d = std::make_shared<AttnData>();
    const int per_seq = (len + block - 1) / block, n_blocks = per_seq * seqs;
    d->flat = llm::make_kv_cache(ctx, 1, nkv, len, hd);
    d->pool = llm::make_kv_cache(ctx, 1, nkv, n_blocks * block, hd);
    // Random K/V for sequence 0 in both caches (others: whatever the pool holds, finite).
    d->kv.resize(size_t(len) * nkv * hd);
    d->vv.resize(d->kv.size());
    for (size_t i = 0; i < d->kv.size(); ++i) {
      d->kv[i] = float(std::sin(double(i) * 0.011));
      d->vv[i] = float(std::cos(double(i) * 0.007));
    }
    std::vector<float> flat_k(d->kv.size()), flat_v(d->kv.size());
    std::vector<float> pool_k(size_t(n_blocks) * block * nkv * hd, 0.5f), pool_v(pool_k.size(), 0.25f);
    std::vector<int32_t> order(static_cast<size_t>(n_blocks));
    std::iota(order.begin(), order.end(), 0);
    std::reverse(order.begin(), order.end());  // scattered: sequence i's block b is order[i * per_seq + b]
    for (int p = 0; p < len; ++p)
      for (int h = 0; h < nkv; ++h)
        for (int e = 0; e < hd; ++e) {
          const size_t src = (size_t(p) * nkv + size_t(h)) * hd + size_t(e);
          flat_k[(size_t(h) * size_t(len) + size_t(p)) * hd + size_t(e)] = d->kv[src];
          flat_v[(size_t(h) * size_t(len) + size_t(p)) * hd + size_t(e)] = d->vv[src];
          const size_t row = size_t(order[size_t(p / block)]) * block + size_t(p % block);
          pool_k[(size_t(h) * size_t(n_blocks) * block + row) * hd + size_t(e)] = d->kv[src];
          pool_v[(size_t(h) * size_t(n_blocks) * block + row) * hd + size_t(e)] = d->vv[src];
        }
    upload(ctx, d->flat.k, std::as_bytes(std::span(flat_k)));
    upload(ctx, d->flat.v, std::as_bytes(std::span(flat_v)));
    upload(ctx, d->pool.k, std::as_bytes(std::span(pool_k)));
    upload(ctx, d->pool.v, std::as_bytes(std::span(pool_v)));
    d->qv.resize(size_t(seqs) * nh * hd);
    for (size_t i = 0; i < d->qv.size(); ++i) d->qv[i] = float(std::sin(double(i) * 0.13));
    d->q = make_tensor(ctx, {int64_t(d->qv.size())}, d->qv);
    d->out = make_tensor(ctx, {int64_t(d->qv.size())});
    llm::PagedAttentionArgs pa;
    pa.n_heads = nh;
    pa.n_kv_heads = nkv;
    pa.head_dim = hd;
    pa.block = block;
    std::vector<llm::PagedSequence> ps;
    for (int i = 0; i < seqs; ++i) {
      llm::PagedSequence q;
      q.tok0 = i;
      q.pos0 = len - 1;
      q.blocks.assign(order.begin() + i * per_seq, order.begin() + (i + 1) * per_seq);
      ps.push_back(q);
    }
    d->many = ops->plan_paged_attention(ps, pa, n_blocks);
    ps.resize(1);
    d->one = ops->plan_paged_attention(ps, pa, n_blocks);
    const double kv_bytes = 2.0 * double(len) * nkv * hd * 4;
    auto check = [d, &ctx, len](const std::shared_ptr<llm::LlmOps>& run, bool paged) {
      fill_u32(ctx, d->out, kPoisonNaN);
      Batch b(ctx);
      if (paged) {
        run->paged_attention(b, d->pool.layer(0), d->q, d->out, d->one);
      } else {
        llm::AttentionArgs a;
        a.n_heads = nh;
        a.start = len - 1;
        run->attention_decode(b, d->flat.layer(0), d->q, d->out, a);
      }
      b.run();
      auto got = download<float>(ctx, d->out);
      got.resize(size_t(nh) * hd);
      std::vector<float> q0(d->qv.begin(), d->qv.begin() + nh * hd);
      // The reference for the one token at position len - 1 (a whole causal reference over len
      // tokens took minutes at 4096).
      auto want = llm::ref::attention(q0, d->kv, d->vv, 1, nh, nkv, hd, len - 1, 1.f / std::sqrt(float(hd)));
      return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(want));
    };
    auto add = [&](const std::string& version, int n_seqs, std::function<void(Batch&)> rec,
                   std::function<double()> chk) {
      Case c;
      c.op = "llm.attention";
      c.version = version;
      c.size = std::to_string(len) + "x" + std::to_string(n_seqs);
      c.elements = double(len) * n_seqs;
      c.bytes = kv_bytes * n_seqs;
      c.record = std::move(rec);
      c.check = std::move(chk);
      c.tolerance = 1e-4;
      out.push_back(std::move(c));
    };
    for (const auto& set : sets) {
      auto tops = set.second;  // a named copy: clang 14 cannot capture a structured binding
      add(
          sets.size() > 1 ? "contiguous:" + set.first : "contiguous", 1,
          [d, tops, len](Batch& b) {
            llm::AttentionArgs a;
            a.n_heads = nh;
            a.start = len - 1;
            tops->attention_decode(b, d->flat.layer(0), d->q, d->out, a);
          },
          [check, tops] { return check(tops, false); });
    }
    add(
        "paged", 1, [d, ops](Batch& b) { ops->paged_attention(b, d->pool.layer(0), d->q, d->out, d->one); },
        [check, ops] { return check(ops, true); });
    add(
        "paged", seqs, [d, ops](Batch& b) { ops->paged_attention(b, d->pool.layer(0), d->q, d->out, d->many); },
        [check, ops] { return check(ops, true); });
    for (auto& c : prefill_attention_cases(ctx, sets, len, o)) out.push_back(std::move(c));
  }
  return out;
}

// llm.attention-prefill: only the prefill cases of llm.attention (without the decode cases'
// caches: 2 GB of host data for 64 sequences at 4096), one per tuning set.
std::vector<Case> attention_prefill_cases(const Context& ctx, const Options& o) {
  const auto sets = attention_tunings(ctx, o);
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {64}, {64}, {4096}))
    for (auto& c : prefill_attention_cases(ctx, sets, std::max(16, int(s)), o)) out.push_back(std::move(c));
  return out;
}

Register matvec_reg("llm.matvec", [](const Context& c, const Options& o) { return linear_cases(c, o, Kind::Matvec); });
Register matmul_reg("llm.matmul", [](const Context& c, const Options& o) { return linear_cases(c, o, Kind::Matmul); });
Register batched_reg("llm.batched",
                     [](const Context& c, const Options& o) { return linear_cases(c, o, Kind::Batched); });
Register attention_reg("llm.attention", [](const Context& c, const Options& o) { return attention_cases(c, o); });
Register attention_prefill_reg("llm.attention-prefill",
                               [](const Context& c, const Options& o) { return attention_prefill_cases(c, o); });

}  // namespace
}  // namespace wgc::bench
