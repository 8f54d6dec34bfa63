#include "ops/index_ops.h"

#include "ops/dense_common.h"

#include <bit>

namespace wgc {

namespace {

// Six values right-aligned into two vec4s (the kernels' uniform arrays), leading entries `fill`.
template <class T, class A>
void push6(Params& p, uint32_t rank, const A& v, T fill) {
  uint32_t lead = kMaxRank - rank;
  for (uint32_t i = 0; i < kMaxRank; ++i) p.push(i < lead ? fill : T(v[i - lead]));
  p.push(T(0)).push(T(0));
}

}  // namespace

void pad(Batch& batch, const Tensor& x, const Tensor& y, const PadDims& d) {
  const Context& ctx = batch.context();
  try {
    check(d);
  } catch (const Error& e) {
    throw Error(std::string("wgc: pad: ") + e.what());
  }
  uint64_t n = d.out_count();
  detail::check_words(x, d.in_count(), "x", "pad");
  detail::check_words(y, n, "y", "pad");
  if (n == 0) return;
  if (d.in_count() == 0 && d.mode != PadMode::Constant) throw Error("wgc: pad: an empty input");
  Dims in_strides{};
  uint32_t acc = 1;
  for (uint32_t i = d.rank; i-- > 0;) {
    in_strides[i] = acc;
    acc *= d.in_shape[i];
  }
  uint32_t bits = d.ints ? uint32_t(cpu::narrow_int(int64_t(d.value))) : std::bit_cast<uint32_t>(float(d.value));
  Params p(uint32_t(n), bits, 0u, 0u);
  push6<uint32_t>(p, d.rank, d.out_shape, 1u);
  push6<uint32_t>(p, d.rank, d.in_shape, 1u);
  push6<uint32_t>(p, d.rank, in_strides, 0u);
  push6<int32_t>(p, d.rank, d.begin, 0);
  push6<uint32_t>(p, d.rank, d.stride, 1u);
  Kernel k =
      detail::dense_kernel(ctx, "pad/pad.wgsl", {{"MODE", double(int(d.mode))}, {"WG", detail::kDenseWorkgroup}});
  batch.dispatch(k, {x.bytes() ? x : y, y}, p, detail::dense_groups(ctx, n));
}

void gather(Batch& batch, const Tensor& x, const Tensor& index, const Tensor& y, const GatherDims& d) {
  const Context& ctx = batch.context();
  uint64_t n = d.out_count();
  detail::check_index_range(n, "gather");
  detail::check_words(x, uint64_t(d.pre) * d.len * d.post, "x", "gather");
  detail::check_words(index, d.count, "the indices", "gather");
  detail::check_words(y, n, "y", "gather");
  if (n == 0) return;
  if (d.len == 0) throw Error("wgc: gather: from an empty axis");
  Params p(uint32_t(n), d.len, d.post, d.count);
  batch.dispatch(detail::dense_kernel(ctx, "gather/gather.wgsl", {{"WG", detail::kDenseWorkgroup}}), {x, index, y}, p,
                 detail::dense_groups(ctx, n));
}

void gather_elements(Batch& batch, const Tensor& x, const Tensor& index, const Tensor& y, const GatherElementsDims& d) {
  const Context& ctx = batch.context();
  uint64_t n = d.count();
  detail::check_index_range(n, "gather elements");
  if (d.rank > kMaxRank || (n && d.axis >= d.rank)) throw Error("wgc: gather elements: bad rank or axis");
  int64_t hi = 0;
  for (uint32_t i = 0; i < d.rank; ++i) {
    if (d.x_strides[i] < 0) throw Error("wgc: gather elements: a negative stride");
    hi += d.x_strides[i] * int64_t((i == d.axis ? d.axis_len : d.shape[i]) - 1);
  }
  detail::check_words(x, n ? uint64_t(hi) + 1 : 0, "x", "gather elements");
  detail::check_words(index, n, "the indices", "gather elements");
  detail::check_words(y, n, "y", "gather elements");
  if (n == 0) return;
  if (d.axis_len == 0) throw Error("wgc: gather elements: from an empty axis");
  Params p(uint32_t(n), d.axis + (kMaxRank - d.rank), d.axis_len, 0u);
  push6<uint32_t>(p, d.rank, d.shape, 1u);
  push6<uint32_t>(p, d.rank, d.x_strides, 0u);
  batch.dispatch(detail::dense_kernel(ctx, "gather/elements.wgsl", {{"WG", detail::kDenseWorkgroup}}), {x, index, y}, p,
                 detail::dense_groups(ctx, n));
}

void arg_reduce(Batch& batch, const Tensor& x, const Tensor& y, const ArgReduceDims& d) {
  const Context& ctx = batch.context();
  const AxisDims& a = d.axis;
  uint64_t rows = uint64_t(a.outer) * a.inner;
  detail::check_index_range(a.count(), "arg reduce");
  detail::check_words(x, a.count(), "x", "arg reduce");
  detail::check_words(y, rows, "y", "arg reduce");
  if (rows == 0) return;
  if (a.len == 0) throw Error("wgc: arg reduce: an empty axis");
  Params p(a.outer, a.len, a.inner, 0u);
  Kernel k = detail::dense_kernel(
      ctx, "arg_reduce/naive.wgsl",
      {{"MAX", d.max ? 1.0 : 0.0}, {"LAST", d.select_last ? 1.0 : 0.0}, {"WG", detail::kDenseWorkgroup}});
  batch.dispatch(k, {x, y}, p, detail::dense_groups(ctx, rows));
}

void topk(Batch& batch, const Tensor& x, const Tensor& y, const TopKDims& d, bool indices) {
  const Context& ctx = batch.context();
  const AxisDims& a = d.axis;
  if (d.k > a.len) throw Error("wgc: topk: k " + std::to_string(d.k) + " > " + std::to_string(a.len));
  detail::check_index_range(a.count(), "topk");
  detail::check_words(x, a.count(), "x", "topk");
  detail::check_words(y, uint64_t(a.outer) * d.k * a.inner, "y", "topk");
  if (a.count() == 0 || d.k == 0) return;
  Params p(a.outer, a.len, a.inner, d.k);
  Kernel k = detail::dense_kernel(
      ctx, "topk/rank.wgsl",
      {{"LARGEST", d.largest ? 1.0 : 0.0}, {"INDICES", indices ? 1.0 : 0.0}, {"WG", detail::kDenseWorkgroup}});
  batch.dispatch(k, {x, y}, p, detail::dense_groups(ctx, a.count()));
}

void cumsum(Batch& batch, const Tensor& x, const Tensor& y, const CumSumDims& d, bool ints) {
  const Context& ctx = batch.context();
  const AxisDims& a = d.axis;
  uint64_t lines = uint64_t(a.outer) * a.inner;
  detail::check_index_range(a.count(), "cumsum");
  detail::check_words(x, a.count(), "x", "cumsum");
  detail::check_words(y, a.count(), "y", "cumsum");
  if (a.count() == 0) return;
  Params p(a.outer, a.len, a.inner, 0u);
  Kernel k = detail::dense_kernel(ctx, "cumsum/scan.wgsl",
                                  {{"INTS", ints ? 1.0 : 0.0},
                                   {"EXCLUSIVE", d.exclusive ? 1.0 : 0.0},
                                   {"REVERSE", d.reverse ? 1.0 : 0.0},
                                   {"WG", detail::kDenseWorkgroup}});
  batch.dispatch(k, {x, y}, p, detail::dense_groups(ctx, lines));
}

void scatter_elements(Batch& batch, const Tensor& data, const Tensor& index, const Tensor& updates, const Tensor& y,
                      const ScatterElementsDims& d) {
  const Context& ctx = batch.context();
  try {
    check(d);
  } catch (const Error& e) {
    throw Error(std::string("wgc: ") + e.what());
  }
  uint64_t n = d.count(), m = d.index_count();
  detail::check_index_range(n, "scatter elements");
  detail::check_words(data, n, "data", "scatter elements");
  detail::check_words(index, m, "the indices", "scatter elements");
  detail::check_words(updates, m, "the updates", "scatter elements");
  detail::check_words(y, n, "y", "scatter elements");
  if (n == 0) return;
  Params p(uint32_t(n), d.axis + (kMaxRank - d.rank), 0u, 0u);
  push6<uint32_t>(p, d.rank, d.shape, 1u);
  push6<uint32_t>(p, d.rank, d.index_shape, 1u);
  // An empty index tensor binds the data in its place (a binding cannot be empty).
  const Tensor& idx = m ? index : data;
  const Tensor& upd = m ? updates : data;
  batch.dispatch(detail::dense_kernel(
                     ctx, "gather/scatter_elements.wgsl",
                     {{"WG", detail::kDenseWorkgroup}, {"RED", double(int(d.reduction))}, {"INT", d.ints ? 1.0 : 0.0}}),
                 {data, idx, upd, y}, p, detail::dense_groups(ctx, n));
}

void roi_align(Batch& batch, const Tensor& x, const Tensor& rois, const Tensor& batch_index, const Tensor& y,
               const RoiAlignDims& d) {
  const Context& ctx = batch.context();
  try {
    check(d);
  } catch (const Error& e) {
    throw Error(std::string("wgc: ") + e.what());
  }
  uint64_t n = d.out_count();
  detail::check_index_range(n, "roi align");
  detail::check_words(x, d.x_count(), "x", "roi align");
  detail::check_words(rois, uint64_t(d.rois) * 4, "the rois", "roi align");
  detail::check_words(batch_index, d.rois, "the batch indices", "roi align");
  detail::check_words(y, n, "y", "roi align");
  if (n == 0) return;
  Params p(uint32_t(n), d.n, d.c, d.h, d.w, d.out_h, d.out_w, d.sampling_ratio, d.spatial_scale,
           d.half_pixel ? 0.5f : 0.f, 0u, 0u);
  batch.dispatch(
      detail::dense_kernel(
          ctx, "roi_align/roi_align.wgsl",
          {{"WG", detail::kDenseWorkgroup}, {"MAX", d.max ? 1.0 : 0.0}, {"MAX_GRID", double(kRoiAlignMaxGrid)}}),
      {x, rois, batch_index, y}, p, detail::dense_groups(ctx, n));
}

}  // namespace wgc
