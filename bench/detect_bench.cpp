// `wgc bench --ops roi-align,scatter-elements,fused-attention`: the kernels the ONNX detection and
// transformer graphs added (issue 37), each against its CPU reference, at the shapes of the
// torchvision models they serve. Sizes are counts (quick / CPU adapter: small ones):
//   roi-align         Faster R-CNN's box head: x [1, 256, 50, 68] (one FPN level of an 800 x 1088
//                     image), N rois of 7 x 7 bins, sampling ratio 2 (default N: 1000)
//   scatter-elements  data [N, 256] f32, N x 256 updates along axis 0 with reduction add, indices
//                     scattered (default N: 4096)
//   fused-attention   ViT-B/16's attention: 12 heads of 197 tokens, head size 64, batch N (default 1, 8)
#include "bench/bench.h"
#include "cpu/detect.h"
#include "cpu/fused_attention.h"
#include "cpu/index_ops.h"
#include "ops/fused_attention.h"
#include "ops/index_ops.h"

#include <memory>
#include <random>

namespace wgc::bench {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// The check every case shares: poison the output, run once, compare with the reference.
double check_run(const Context& ctx, const Tensor& out, const std::vector<float>& want,
                 const std::function<void(Batch&)>& record) {
  fill_u32(ctx, out, kPoisonNaN);
  Batch b(ctx);
  record(b);
  b.run();
  const auto got = download<float>(ctx, out);
  return cpu::max_rel_error(std::span<const float>(got), std::span<const float>(want));
}

std::vector<Case> roi_align_cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {16}, {64}, {1000})) {
    struct Data {
      RoiAlignDims d;
      std::vector<float> x, rois, want;
      std::vector<int32_t> bi;
      Tensor tx, trois, tbi, ty;
    };
    auto p = std::make_shared<Data>();
    RoiAlignDims& d = p->d;
    d.n = 1, d.c = 256, d.h = 50, d.w = 68, d.rois = uint32_t(s), d.out_h = 7, d.out_w = 7;
    d.sampling_ratio = 2, d.spatial_scale = 0.0625f, d.half_pixel = false;  // torchvision's MultiScaleRoIAlign
    p->x = random_floats(d.x_count(), 1, -1.f, 1.f);
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> pos(0.f, 1000.f), ext(16.f, 400.f);
    for (uint32_t r = 0; r < d.rois; ++r) {
      const float x1 = pos(rng), y1 = pos(rng) * 0.75f;
      p->rois.insert(p->rois.end(), {x1, y1, x1 + ext(rng), y1 + ext(rng)});
    }
    p->bi.assign(d.rois, 0);
    p->want.resize(d.out_count());
    cpu::roi_align(p->x, p->rois, {p->bi.data(), cpu::WordType::I32, p->bi.size()}, p->want, d);
    p->tx = make_tensor(ctx, {int64_t(p->x.size())}, p->x);
    p->trois = make_tensor(ctx, {int64_t(p->rois.size())}, p->rois);
    p->tbi = make_tensor(ctx, {int64_t(d.rois)}, DType::I32, std::as_bytes(std::span<const int32_t>(p->bi)));
    p->ty = make_tensor(ctx, {int64_t(d.out_count())});
    Case c;
    c.op = "roi-align";
    c.version = "bins*";
    c.size = "rois" + std::to_string(d.rois);
    c.elements = double(d.out_count());
    c.x_label = "outputs";
    // Every output reads its bin's 2 x 2 samples' four corners; the feature map at most once.
    c.bytes = double(std::min<uint64_t>(d.x_count(), d.out_count() * 16)) * 4 + double(d.out_count()) * 4;
    c.flops = double(d.out_count()) * 4 * 10;
    auto rec = [p](Batch& b) { roi_align(b, p->tx, p->trois, p->tbi, p->ty, p->d); };
    c.record = rec;
    c.check = [p, rec, &ctx] { return check_run(ctx, p->ty, p->want, rec); };
    c.tolerance = 1e-5;
    c.cpu = [p] {
      std::vector<float> y(p->want.size());
      cpu::roi_align(p->x, p->rois, {p->bi.data(), cpu::WordType::I32, p->bi.size()}, y, p->d);
    };
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Case> scatter_cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {64}, {256}, {4096})) {
    struct Data {
      ScatterElementsDims d;
      std::vector<float> data, upd, want;
      std::vector<int32_t> idx;
      Tensor tdata, tidx, tupd, ty;
    };
    auto p = std::make_shared<Data>();
    ScatterElementsDims& d = p->d;
    const uint32_t n = uint32_t(s);
    d.rank = 2, d.shape = {n, 256}, d.index_shape = {n, 256}, d.axis = 0, d.reduction = ScatterReduction::Add;
    p->data = random_floats(d.count(), 3, -1.f, 1.f);
    p->upd = random_floats(d.index_count(), 4, -1.f, 1.f);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int32_t> pick(0, int32_t(n) - 1);
    p->idx.resize(d.index_count());
    for (auto& v : p->idx) v = pick(rng);
    p->want.resize(d.count());
    cpu::scatter_elements(
        {p->data.data(), cpu::WordType::F32, p->data.size()}, {p->idx.data(), cpu::WordType::I32, p->idx.size()},
        {p->upd.data(), cpu::WordType::F32, p->upd.size()}, {p->want.data(), cpu::WordType::F32, p->want.size()}, d);
    p->tdata = make_tensor(ctx, {int64_t(p->data.size())}, p->data);
    p->tupd = make_tensor(ctx, {int64_t(p->upd.size())}, p->upd);
    p->tidx = make_tensor(ctx, {int64_t(p->idx.size())}, DType::I32, std::as_bytes(std::span<const int32_t>(p->idx)));
    p->ty = make_tensor(ctx, {int64_t(d.count())});
    auto rec = [p](Batch& b) { scatter_elements(b, p->tdata, p->tidx, p->tupd, p->ty, p->d); };
    Case c;
    c.op = "scatter-elements";
    c.version = "walk*";
    c.size = std::to_string(n) + "x256";
    c.elements = double(d.count());
    c.bytes = double(d.count()) * 8 + double(d.index_count()) * 8;  // data in, y out; indices and updates
    c.record = rec;
    c.check = [p, rec, &ctx] { return check_run(ctx, p->ty, p->want, rec); };
    c.tolerance = 1e-5;
    c.cpu = [p] {
      std::vector<float> y(p->want.size());
      cpu::scatter_elements(
          {p->data.data(), cpu::WordType::F32, p->data.size()}, {p->idx.data(), cpu::WordType::I32, p->idx.size()},
          {p->upd.data(), cpu::WordType::F32, p->upd.size()}, {y.data(), cpu::WordType::F32, y.size()}, p->d);
    };
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Case> fused_attention_cases(const Context& ctx, const Options& o) {
  std::vector<Case> out;
  for (double s : sizes_or(o, ctx, {1}, {1}, {1, 8})) {
    struct Data {
      FusedAttentionDims d;
      std::vector<float> q, k, v, want;
      Tensor tq, tk, tv, ty;
    };
    auto p = std::make_shared<Data>();
    FusedAttentionDims& d = p->d;
    const uint32_t n = uint32_t(s), heads = 12, L = 197, D = 64;
    d.rank = 2, d.batch = {n, heads}, d.lq = L, d.lk = L, d.d = D, d.dv = D;
    d.q_strides = {heads * L * D, L * D};
    d.k_strides = d.q_strides;  // K given transposed, [D][L] per head
    d.v_strides = d.q_strides;
    d.scale = 0.125f;
    p->q = random_floats(d.q_span(), 6, -1.f, 1.f);
    p->k = random_floats(d.k_span(), 7, -1.f, 1.f);
    p->v = random_floats(d.v_span(), 8, -1.f, 1.f);
    p->want.resize(d.out_count());
    cpu::fused_attention(p->q, p->k, p->v, {}, p->want, d);
    p->tq = make_tensor(ctx, {int64_t(p->q.size())}, p->q);
    p->tk = make_tensor(ctx, {int64_t(p->k.size())}, p->k);
    p->tv = make_tensor(ctx, {int64_t(p->v.size())}, p->v);
    p->ty = make_tensor(ctx, {int64_t(d.out_count())});
    auto rec = [p](Batch& b) { fused_attention(b, p->tq, p->tk, p->tv, Tensor(), p->ty, p->d); };
    Case c;
    c.op = "fused-attention";
    c.version = "row-wg*";
    c.size = "vit-b16-n" + std::to_string(n);
    c.elements = double(d.out_count());
    c.flops = d.flops();
    c.bytes = double(p->q.size() + p->k.size() + p->v.size() + d.out_count()) * 4;
    c.record = rec;
    c.check = [p, rec, &ctx] { return check_run(ctx, p->ty, p->want, rec); };
    c.tolerance = 1e-5;
    out.push_back(std::move(c));
  }
  return out;
}

Register roi_reg("roi-align", roi_align_cases);
Register scatter_reg("scatter-elements", scatter_cases);
Register attention_reg("fused-attention", fused_attention_cases);

}  // namespace
}  // namespace wgc::bench
