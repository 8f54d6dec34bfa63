// `wgc bench --ops gpu.dispatch,gpu.chain-read`: the fixed cost of a dispatch through Dawn, the
// floor under every decode step (a step is ~84-200 dependent dispatches).
//
// gpu.dispatch, size = N dispatches in one batch (one compute pass), timed by one pair of
// timestamps around it (Timing::Span): chain-1wg / chain-grid (each dispatch reads the buffer the
// one before wrote and writes its own; one workgroup, or the full grid), independent-1wg /
// independent-grid (each reads one shared input and writes a buffer of its own that nothing else
// reads), read-only-grid (no writable binding at all: nothing for Dawn to put a barrier after),
// submit-wait (chain-1wg, the host's wall clock of one submit and wait). The fit over N
// (fit_dispatches) gives the per-dispatch cost and the batch's fixed cost.
//
// gpu.chain-read, size = bytes each dispatch streams: a chain of decode-shaped dispatches (a
// slice of weights never read before, plus the previous dispatch's small output), so that
// t = fixed + dispatches x a + bytes / bw separates a, the fixed cost of a dependent dispatch of
// real work, from bw, the streaming bandwidth.
#include "bench/bench.h"
#include "gpu/kernel.h"
#include "util/error.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace wgc::bench {
namespace {

constexpr uint32_t kWG = 256;  // invocations per workgroup of every floor kernel
// The full grid on a GPU: the H200's 132 SMs x 8 workgroups, one wave of 256-invocation groups.
constexpr uint32_t kGpuGridGroups = 132 * 8;
// On a CPU adapter or with --quick (SwiftShader, CI): an awkward small grid.
constexpr uint32_t kSmallGridGroups = 13;
// gpu.chain-read's chain reads at least this many bytes in all, so that the slices do not stay in
// the L2 cache between runs (50 MB on the H200)...
constexpr uint64_t kGpuChainBytes = uint64_t(256) << 20;
constexpr uint64_t kSmallChainBytes = uint64_t(96) << 10;
// ... in this many dispatches at least and at most.
constexpr uint32_t kMinLinks = 8, kMaxLinks = 256;
// Storage bindings start at multiples of this (WebGPU's default minStorageBufferOffsetAlignment).
constexpr uint64_t kSliceAlign = 256;

bool small(const Context& ctx, const Options& o) { return o.quick || ctx.adapter().is_cpu(); }

uint32_t iota_value(uint32_t i) { return i * 2654435761u + 7u; }  // input words, distinct per index

Tensor make_input(const Context& ctx, uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = iota_value(i);
  return make_tensor(ctx, {int64_t(n)}, DType::U32, std::as_bytes(std::span<const uint32_t>(v)));
}

// Max over i < n of |got[i] - want(i)| != 0, as the bench's error (0 or 1).
template <class F>
double mismatch(const Context& ctx, const Tensor& t, uint32_t n, F want) {
  auto got = download<uint32_t>(ctx, t);
  for (uint32_t i = 0; i < n; ++i)
    if (got[i] != want(i)) return 1;
  return 0;
}

// gpu.dispatch's buffers: the input, and the outputs (two for a chain's ping-pong, N otherwise).
struct Floor {
  Kernel chain, read_only;
  Tensor src;
  std::vector<Tensor> outs;
  uint32_t n = 0;       // elements per buffer
  uint32_t groups = 1;  // workgroups per dispatch
  uint32_t links = 1;   // dispatches per run
  Params params() const { return Params(n); }
};

// A chain: dispatch 0 reads src, dispatch k > 0 reads what dispatch k - 1 wrote.
void record_chain(Batch& b, const Floor& f) {
  for (uint32_t k = 0; k < f.links; ++k)
    b.dispatch(f.chain, {k == 0 ? f.src : f.outs[(k - 1) % 2], f.outs[k % 2]}, f.params(), {f.groups});
}

void record_independent(Batch& b, const Floor& f) {
  for (uint32_t k = 0; k < f.links; ++k) b.dispatch(f.chain, {f.src, f.outs[k]}, f.params(), {f.groups});
}

void record_read_only(Batch& b, const Floor& f) {
  for (uint32_t k = 0; k < f.links; ++k) b.dispatch(f.read_only, {f.src}, f.params(), {f.groups});
}

// Runs one run with the outputs poisoned first; 0 when they hold what the dispatches compute.
double check_floor(const Context& ctx, const Floor& f, bool chained, void (*record)(Batch&, const Floor&)) {
  for (const auto& t : f.outs) fill_u32(ctx, t, kPoisonNaN);
  Batch b(ctx);
  record(b, f);
  b.run();
  if (chained)  // the last link's buffer: the input plus one per link
    return mismatch(ctx, f.outs[(f.links - 1) % 2], f.n, [&](uint32_t i) { return iota_value(i) + f.links; });
  double err = 0;
  for (const auto& t : f.outs) err = std::max(err, mismatch(ctx, t, f.n, [](uint32_t i) { return iota_value(i) + 1; }));
  return err;
}

std::vector<Case> dispatch_cases(const Context& ctx, const Options& o) {
  const Kernel chain = compile(ctx, embedded_kernel("bench/dispatch_chain.wgsl", {{"WG", kWG}}));
  const Kernel read_only = compile(ctx, embedded_kernel("bench/dispatch_read_only.wgsl", {{"WG", kWG}}));
  const uint32_t grid = small(ctx, o) ? kSmallGridGroups : kGpuGridGroups;
  struct Version {
    const char* name;
    uint32_t groups;
    bool chained, writes;
    void (*record)(Batch&, const Floor&);
    Timing timing;
  };
  const Version versions[] = {
      {"chain-1wg", 1, true, true, record_chain, Timing::Span},
      {"chain-grid", grid, true, true, record_chain, Timing::Span},
      {"independent-1wg", 1, false, true, record_independent, Timing::Span},
      {"independent-grid", grid, false, true, record_independent, Timing::Span},
      {"read-only-grid", grid, false, false, record_read_only, Timing::Span},
      {"submit-wait", 1, true, true, record_chain, Timing::RoundTrip},
  };
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {1, 5}, {1, 3, 8}, {1, 16, 64, 256})) {
    const auto links = static_cast<uint32_t>(s);
    for (const auto& v : versions) {
      auto f = std::make_shared<Floor>();
      f->chain = chain;
      f->read_only = read_only;
      f->groups = v.groups;
      f->n = v.groups * kWG;
      f->links = links;
      f->src = make_input(ctx, f->n);
      const uint32_t n_out = !v.writes ? 0 : v.chained ? 2 : links;
      for (uint32_t k = 0; k < n_out; ++k) f->outs.push_back(make_tensor(ctx, {int64_t(f->n)}, DType::U32));
      Case c;
      c.op = "gpu.dispatch";
      c.version = v.name;
      c.size = std::to_string(links);
      c.elements = double(links);
      c.x_label = "dispatches per batch";
      c.dispatches = double(links);
      c.timing = v.timing;
      auto record = v.record;
      c.record = [f, record](Batch& b) { record(b, *f); };
      const bool chained = v.chained, writes = v.writes;
      c.check = [f, record, chained, writes, &ctx] { return writes ? check_floor(ctx, *f, chained, record) : 0.0; };
      c.tolerance = 0.5;  // the check's error is 0 (every word right) or 1
      out.push_back(std::move(c));
    }
  }
  return out;
}

// gpu.chain-read: `links` slices of `slice_bytes` in one pool; each link reads its slice and the
// previous link's per-workgroup partials, in the order of its pattern (chain_read.wgsl).
enum class ReadPattern : uint32_t { Grid = 0, Rows = 1, Block = 2 };
// rows and block: rows per workgroup (chain_read.wgsl's RPW: 8 groups of 32 lanes x 2 rows).
constexpr uint32_t kRowsPerGroup = kWG / 32 * 2;

struct ChainRead {
  Kernel kernel;
  Tensor pool, zeros;
  Tensor partials[2];
  uint64_t slice_bytes = 0;
  uint32_t links = 0, groups = 0;
  ReadPattern pattern = ReadPattern::Grid;
  uint32_t row4 = 0;           // rows, block: vec4s per row
  std::vector<uint32_t> want;  // the last link's partials

  // The workgroup that reads the slice's vec4 v.
  uint32_t group_of(uint64_t v) const {
    if (pattern == ReadPattern::Grid) return uint32_t((v % (uint64_t(groups) * kWG)) / kWG);
    return uint32_t(v / (uint64_t(kRowsPerGroup) * row4));
  }
};

void record_chain_read(Batch& b, const ChainRead& c) {
  const Params p(uint32_t(c.slice_bytes / 16), c.groups);
  for (uint32_t k = 0; k < c.links; ++k)
    b.dispatch(
        c.kernel,
        {Arg(c.pool, k * c.slice_bytes, c.slice_bytes), k == 0 ? c.zeros : c.partials[(k - 1) % 2], c.partials[k % 2]},
        p, {c.groups});
}

// Fills the pool slice by slice with a pattern and sums it as the kernel does (the wrapping u32 sum
// of workgroup g's vec4s), so no host copy of the whole pool is held.
void fill_chain_read(const Context& ctx, ChainRead& c) {
  const uint64_t words = c.slice_bytes / 4, n4 = words / 4;
  std::vector<uint32_t> slice(words);
  c.want.assign(c.groups, 0);
  for (uint32_t k = 0; k < c.links; ++k) {
    for (uint64_t j = 0; j < words; ++j) slice[j] = iota_value(uint32_t(k * words + j));
    upload(ctx, c.pool, std::as_bytes(std::span<const uint32_t>(slice)), k * c.slice_bytes);
    for (uint64_t v = 0; v < n4; ++v)
      c.want[c.group_of(v)] += slice[4 * v] + slice[4 * v + 1] + slice[4 * v + 2] + slice[4 * v + 3];
  }
}

std::vector<Case> chain_read_cases(const Context& ctx, const Options& o) {
  const bool is_small = small(ctx, o);
  // Rows of an 8B model's 4,096-column and 14,336-column F16 weights; on a CPU adapter, awkward
  // rows that take the row loop's unrolled pass and its tail.
  struct Version {
    const char* name;
    ReadPattern pattern;
    uint32_t row4, small_row4;
  };
  const Version versions[] = {
      {"chain-read", ReadPattern::Grid, 0, 0},     {"rows-8k", ReadPattern::Rows, 512, 141},
      {"block-8k", ReadPattern::Block, 512, 141},  {"rows-28k", ReadPattern::Rows, 1792, 37},
      {"block-28k", ReadPattern::Block, 1792, 37},
  };
  const uint64_t chain_bytes = is_small ? kSmallChainBytes : kGpuChainBytes;
  std::vector<double> gpu_sizes;
  for (int mb = 1; mb <= 256; mb *= 2) gpu_sizes.push_back(double(mb) * (1 << 20));
  std::vector<Case> out;
  for (const auto& v : versions) {
    const uint32_t row4 = is_small ? v.small_row4 : v.row4;
    const Kernel kernel =
        compile(ctx, embedded_kernel("bench/chain_read.wgsl",
                                     {{"WG", kWG}, {"PATTERN", uint32_t(v.pattern)}, {"ROW4", std::max(row4, 1u)}}));
    // A slice is whole workgroups' rows (rows, block) or whole multiples of 256 bytes (grid).
    const uint64_t unit = v.pattern == ReadPattern::Grid ? kSliceAlign : uint64_t(kRowsPerGroup) * row4 * 16;
    for (double s : sizes_or(o, ctx, {4000, 20000}, {4000, 20000, 60000}, gpu_sizes)) {
      auto c = std::make_shared<ChainRead>();
      c->kernel = kernel;
      c->pattern = v.pattern;
      c->row4 = row4;
      c->slice_bytes = std::max<uint64_t>(unit, (uint64_t(s) + unit - 1) / unit * unit);
      c->groups = v.pattern == ReadPattern::Grid ? (is_small ? kSmallGridGroups : kGpuGridGroups)
                                                 : uint32_t(c->slice_bytes / unit);
      c->links =
          uint32_t(std::clamp<uint64_t>((chain_bytes + c->slice_bytes - 1) / c->slice_bytes, kMinLinks, kMaxLinks));
      Case cs;
      cs.op = "gpu.chain-read";
      cs.version = v.name;
      cs.size = std::to_string(c->slice_bytes);
      cs.elements = double(c->slice_bytes);
      cs.x_label = "bytes per dispatch";
      cs.bytes = double(c->slice_bytes) * c->links;
      cs.dispatches = double(c->links);
      cs.timing = Timing::Span;
      // The pool is made and filled on first use: every case is made before any runs.
      auto ready = [c, &ctx] {
        if (c->pool) return;
        c->pool = make_tensor(ctx, {int64_t(c->slice_bytes / 4 * c->links)}, DType::U32);
        c->zeros = make_tensor(ctx, {int64_t(c->groups)}, DType::U32);
        fill_u32(ctx, c->zeros, 0);
        for (auto& t : c->partials) t = make_tensor(ctx, {int64_t(c->groups)}, DType::U32);
        fill_chain_read(ctx, *c);
      };
      cs.record = [c, ready](Batch& b) {
        ready();
        record_chain_read(b, *c);
      };
      cs.check = [c, ready, &ctx] {
        ready();
        for (auto& t : c->partials) fill_u32(ctx, t, kPoisonNaN);
        Batch b(ctx);
        record_chain_read(b, *c);
        b.run();
        return mismatch(ctx, c->partials[(c->links - 1) % 2], c->groups, [&](uint32_t g) { return c->want[g]; });
      };
      cs.tolerance = 0.5;
      out.push_back(std::move(cs));
    }
  }
  return out;
}

Register dispatch_reg("gpu.dispatch", dispatch_cases);
Register chain_read_reg("gpu.chain-read", chain_read_cases);

}  // namespace
}  // namespace wgc::bench
