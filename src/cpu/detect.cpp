#include "cpu/detect.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace wgc::cpu {

float iou(const Box& a, const Box& b) {
  float area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  float w = std::max(0.f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  float h = std::max(0.f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  float inter = w * h, uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0.f;
}

std::vector<uint32_t> nms(std::span<const Box> boxes, std::span<const float> scores, float iou_threshold,
                          size_t max_keep) {
  if (boxes.size() != scores.size())
    throw Error("wgc: nms: " + std::to_string(boxes.size()) + " boxes, " + std::to_string(scores.size()) + " scores");
  std::vector<uint32_t> order(boxes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return scores[a] > scores[b]; });
  std::vector<uint32_t> keep;
  for (uint32_t i : order) {
    if (keep.size() >= max_keep) break;
    bool ok = true;
    for (uint32_t k : keep)
      if (iou(boxes[i], boxes[k]) > iou_threshold) {
        ok = false;
        break;
      }
    if (ok) keep.push_back(i);
  }
  return keep;
}

std::vector<std::array<int64_t, 3>> non_max_suppression(std::span<const float> boxes, std::span<const float> scores,
                                                        uint32_t batches, uint32_t classes, uint32_t n,
                                                        int64_t max_per_class, float iou_threshold,
                                                        float score_threshold, bool center_point_box) {
  if (boxes.size() < uint64_t(batches) * n * 4 || scores.size() < uint64_t(batches) * classes * n)
    throw Error("wgc: non_max_suppression: boxes or scores smaller than their dims");
  std::vector<std::array<int64_t, 3>> out;
  if (max_per_class <= 0) return out;
  std::vector<Box> bx(n);
  for (uint32_t b = 0; b < batches; ++b) {
    for (uint32_t i = 0; i < n; ++i) {
      const float* p = boxes.data() + (size_t(b) * n + i) * 4;
      if (center_point_box) {
        bx[i] = {p[0] - p[2] / 2, p[1] - p[3] / 2, p[0] + p[2] / 2, p[1] + p[3] / 2};
      } else {  // [y1, x1, y2, x2], corners in either order
        bx[i] = {std::min(p[1], p[3]), std::min(p[0], p[2]), std::max(p[1], p[3]), std::max(p[0], p[2])};
      }
    }
    for (uint32_t c = 0; c < classes; ++c) {
      const float* s = scores.data() + (size_t(b) * classes + c) * n;
      std::vector<Box> cand;
      std::vector<float> cs;
      std::vector<uint32_t> idx;
      for (uint32_t i = 0; i < n; ++i)
        if (s[i] > score_threshold) cand.push_back(bx[i]), cs.push_back(s[i]), idx.push_back(i);
      for (uint32_t k : nms(cand, cs, iou_threshold, size_t(max_per_class))) out.push_back({b, c, idx[k]});
    }
  }
  return out;
}

Box decode_box(const float* rel, const Box& anchor, const std::array<float, 4>& weights) {
  const double clip = std::log(1000.0 / 16);
  double w = double(anchor.x2) - anchor.x1, h = double(anchor.y2) - anchor.y1;
  double cx = anchor.x1 + 0.5 * w, cy = anchor.y1 + 0.5 * h;
  double dx = rel[0] / weights[0], dy = rel[1] / weights[1];
  double dw = std::min(double(rel[2]) / weights[2], clip), dh = std::min(double(rel[3]) / weights[3], clip);
  double pcx = dx * w + cx, pcy = dy * h + cy, pw = std::exp(dw) * w, ph = std::exp(dh) * h;
  return {float(pcx - 0.5 * pw), float(pcy - 0.5 * ph), float(pcx + 0.5 * pw), float(pcy + 0.5 * ph)};
}

}  // namespace wgc::cpu

namespace wgc {

void check(const RoiAlignDims& d) {
  if (d.out_h == 0 || d.out_w == 0) throw Error("wgc: roi align: output_height and output_width must be positive");
  if (d.rois && (d.n == 0 || d.h == 0 || d.w == 0)) throw Error("wgc: roi align: rois of an empty image");
  if (!(d.spatial_scale > 0) || !std::isfinite(d.spatial_scale))
    throw Error("wgc: roi align: spatial_scale " + std::to_string(d.spatial_scale) + " must be positive");
  if (d.x_count() >= (uint64_t(1) << 32) || d.out_count() >= (uint64_t(1) << 32))
    throw Error("wgc: roi align: more than 2^32 elements");
}

namespace cpu {

void roi_align(std::span<const float> x, std::span<const float> rois, const ConstWords& batch_index, std::span<float> y,
               const RoiAlignDims& d) {
  check(d);
  if (x.size() < d.x_count() || rois.size() < uint64_t(d.rois) * 4 || batch_index.n < d.rois ||
      y.size() < d.out_count())
    throw Error("wgc: roi align: buffers smaller than the dims");
  float off = d.half_pixel ? 0.5f : 0.f;
  for (uint32_t r = 0; r < d.rois; ++r) {
    const float* roi = rois.data() + size_t(r) * 4;
    int64_t b = std::clamp<int64_t>(batch_index.i(r), 0, int64_t(d.n) - 1);
    float x0 = roi[0] * d.spatial_scale - off, y0 = roi[1] * d.spatial_scale - off;
    float rw = roi[2] * d.spatial_scale - off - x0, rh = roi[3] * d.spatial_scale - off - y0;
    if (!d.half_pixel) rw = std::max(rw, 1.f), rh = std::max(rh, 1.f);
    float bh = rh / float(d.out_h), bw = rw / float(d.out_w);
    auto grid = [&](float extent) {
      if (d.sampling_ratio > 0) return std::min(d.sampling_ratio, kRoiAlignMaxGrid);
      float g = std::ceil(extent);
      return g <= 0.f ? 0u : g >= float(kRoiAlignMaxGrid) ? kRoiAlignMaxGrid : uint32_t(g);
    };
    uint32_t gh = grid(bh), gw = grid(bw);
    double count = std::max<double>(double(gh) * gw, 1.0);
    for (uint32_t c = 0; c < d.c; ++c) {
      const float* plane = x.data() + (size_t(b) * d.c + c) * d.h * d.w;
      for (uint32_t ph = 0; ph < d.out_h; ++ph)
        for (uint32_t pw = 0; pw < d.out_w; ++pw) {
          double acc = 0;
          bool first = true;
          for (uint32_t iy = 0; iy < gh; ++iy) {
            float sy = y0 + float(ph) * bh + (float(iy) + .5f) * bh / float(gh);
            for (uint32_t ix = 0; ix < gw; ++ix) {
              float sx = x0 + float(pw) * bw + (float(ix) + .5f) * bw / float(gw);
              double v[4] = {0, 0, 0, 0};
              if (!(sy < -1.f || sy > float(d.h) || sx < -1.f || sx > float(d.w))) {
                float yy = std::max(sy, 0.f), xx = std::max(sx, 0.f);
                uint32_t yl = uint32_t(yy), xl = uint32_t(xx), yh = yl + 1, xh = xl + 1;
                if (yl >= d.h - 1) yl = yh = d.h - 1, yy = float(yl);
                if (xl >= d.w - 1) xl = xh = d.w - 1, xx = float(xl);
                float ly = yy - float(yl), lx = xx - float(xl), hy = 1.f - ly, hx = 1.f - lx;
                v[0] = double(hy * hx) * plane[size_t(yl) * d.w + xl];
                v[1] = double(hy * lx) * plane[size_t(yl) * d.w + xh];
                v[2] = double(ly * hx) * plane[size_t(yh) * d.w + xl];
                v[3] = double(ly * lx) * plane[size_t(yh) * d.w + xh];
              }
              if (d.max) {
                double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                acc = first ? m : std::max(acc, m);
                first = false;
              } else {
                acc += v[0] + v[1] + v[2] + v[3];
              }
            }
          }
          y[((size_t(r) * d.c + c) * d.out_h + ph) * d.out_w + pw] = float(d.max ? acc : acc / count);
        }
    }
  }
}

}  // namespace cpu
}  // namespace wgc
