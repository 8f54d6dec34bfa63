#include "io/chart.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <mutex>

namespace wgc::chart {
namespace {

// 5x7 glyphs for ASCII 32..126, 7 rows each, bit 4 = leftmost column. The descender letters
// (g p q y) are drawn two rows lower (see glyph_drop): their x-height part is rows 0-4.
constexpr uint8_t kFont[95][7] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // ' '
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04},  // !
    {0x0A, 0x0A, 0x0A, 0x00, 0x00, 0x00, 0x00},  // "
    {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A},  // #
    {0x04, 0x0F, 0x14, 0x0E, 0x05, 0x1E, 0x04},  // $
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03},  // %
    {0x0C, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0D},  // &
    {0x0C, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00},  // '
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02},  // (
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08},  // )
    {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00},  // *
    {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00},  // +
    {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08},  // ,
    {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00},  // -
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C},  // .
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00},  // /
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E},  // 0
    {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E},  // 1
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F},  // 2
    {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E},  // 3
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02},  // 4
    {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E},  // 5
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E},  // 6
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},  // 7
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E},  // 8
    {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C},  // 9
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00},  // :
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x04, 0x08},  // ;
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02},  // <
    {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00},  // =
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08},  // >
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04},  // ?
    {0x0E, 0x11, 0x01, 0x0D, 0x15, 0x15, 0x0E},  // @
    {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11},  // A
    {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E},  // B
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E},  // C
    {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C},  // D
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F},  // E
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10},  // F
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F},  // G
    {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11},  // H
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E},  // I
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C},  // J
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11},  // K
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F},  // L
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11},  // M
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11},  // N
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E},  // O
    {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10},  // P
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D},  // Q
    {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11},  // R
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E},  // S
    {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},  // T
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E},  // U
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04},  // V
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A},  // W
    {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11},  // X
    {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04},  // Y
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F},  // Z
    {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E},  // [
    {0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00},  // backslash
    {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E},  // ]
    {0x04, 0x0A, 0x11, 0x00, 0x00, 0x00, 0x00},  // ^
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F},  // _
    {0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00},  // `
    {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F},  // a
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E},  // b
    {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E},  // c
    {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F},  // d
    {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E},  // e
    {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08},  // f
    {0x0F, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // g (descender)
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11},  // h
    {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E},  // i
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C},  // j
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12},  // k
    {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E},  // l
    {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11},  // m
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11},  // n
    {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E},  // o
    {0x1E, 0x11, 0x11, 0x11, 0x1E, 0x10, 0x10},  // p (descender)
    {0x0F, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x01},  // q (descender)
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10},  // r
    {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E},  // s
    {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06},  // t
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D},  // u
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04},  // v
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A},  // w
    {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11},  // x
    {0x11, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // y (descender)
    {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F},  // z
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02},  // {
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},  // |
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08},  // }
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00},  // ~
};

constexpr Rgb kText{30, 30, 30}, kAxis{90, 90, 90}, kGrid{225, 225, 225}, kMinorGrid{243, 243, 243};

// Alpha-blends colour c into pixel (x, y); a in [0, 1]. Outside the image: nothing.
void blend(Image& img, int x, int y, Rgb c, double a) {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height || a <= 0) return;
  a = std::min(a, 1.0);
  uint8_t* p = &img.at(x, y, 0);
  auto mix = [a](uint8_t dst, uint8_t src) { return uint8_t(std::lround(dst + (src - dst) * a)); };
  p[0] = mix(p[0], c.r);
  p[1] = mix(p[1], c.g);
  p[2] = mix(p[2], c.b);
}

struct Rect {
  int x0, y0, x1, y1;  // inclusive-exclusive
};

void fill_rect(Image& img, int x0, int y0, int x1, int y1, Rgb c) {
  for (int y = std::max(y0, 0); y < std::min(y1, img.height); ++y)
    for (int x = std::max(x0, 0); x < std::min(x1, img.width); ++x) blend(img, x, y, c, 1.0);
}

// An anti-aliased line of the given width (pixels), drawn only inside clip.
void draw_line(Image& img, double x0, double y0, double x1, double y1, double width, Rgb c, const Rect& clip) {
  double r = width / 2 + 1;
  int bx0 = std::max(clip.x0, int(std::floor(std::min(x0, x1) - r)));
  int bx1 = std::min(clip.x1, int(std::ceil(std::max(x0, x1) + r)));
  int by0 = std::max(clip.y0, int(std::floor(std::min(y0, y1) - r)));
  int by1 = std::min(clip.y1, int(std::ceil(std::max(y0, y1) + r)));
  double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
  for (int y = by0; y < by1; ++y)
    for (int x = bx0; x < bx1; ++x) {
      double px = x + 0.5 - x0, py = y + 0.5 - y0;
      double t = len2 > 0 ? std::clamp((px * dx + py * dy) / len2, 0.0, 1.0) : 0.0;
      double ex = px - t * dx, ey = py - t * dy;
      double d = std::sqrt(ex * ex + ey * ey);
      blend(img, x, y, c, width / 2 + 0.5 - d);
    }
}

// A marker centred at (cx, cy) of radius r: shape 0 circle, 1 square, 2 triangle, 3 diamond,
// 4 inverted triangle. Anti-aliased by 4x4 supersampling.
void draw_marker(Image& img, double cx, double cy, double r, int shape, Rgb c, const Rect& clip) {
  std::function<bool(double, double)> inside;
  switch (shape % 5) {
    case 0: inside = [r](double x, double y) { return x * x + y * y <= r * r; }; break;
    case 1: inside = [r](double x, double y) { return std::fabs(x) <= r * 0.85 && std::fabs(y) <= r * 0.85; }; break;
    case 2:
      inside = [r](double x, double y) { return y <= r * 0.8 && y >= -r && std::fabs(x) <= (y + r) * 0.6; };
      break;
    case 3: inside = [r](double x, double y) { return std::fabs(x) + std::fabs(y) <= r * 1.15; }; break;
    default: inside = [r](double x, double y) { return y >= -r * 0.8 && y <= r && std::fabs(x) <= (r - y) * 0.6; };
  }
  int x0 = std::max(clip.x0, int(cx - r - 1)), x1 = std::min(clip.x1, int(cx + r + 2));
  int y0 = std::max(clip.y0, int(cy - r - 1)), y1 = std::min(clip.y1, int(cy + r + 2));
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      int n = 0;
      for (int sy = 0; sy < 4; ++sy)
        for (int sx = 0; sx < 4; ++sx) n += inside(x + (sx + 0.5) / 4 - cx, y + (sy + 0.5) / 4 - cy);
      blend(img, x, y, c, n / 16.0);
    }
}

// An axis: value range [lo, hi] mapped onto pixels [p0, p1] (p1 < p0 for y, which grows down).
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double p0 = 0, p1 = 1;
  double map(double v) const {
    double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
};

bool usable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

// Expands [lo, hi] (data bounds; lo > hi when there is no data) to tick boundaries.
void nice_range(double& lo, double& hi, bool log, int max_ticks) {
  if (lo > hi) {  // no data
    lo = log ? 1 : 0;
    hi = log ? 10 : 1;
  }
  if (log) {
    lo = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
    hi = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
    if (hi <= lo) hi = lo * 10;
    return;
  }
  if (hi == lo) {
    double d = lo == 0 ? 1 : std::fabs(lo) * 0.5;
    lo -= d;
    hi += d;
  }
  auto t = ticks(lo, hi, false, max_ticks);
  double step = t.size() > 1 ? t[1] - t[0] : (hi - lo);
  lo = std::floor(lo / step + 1e-9) * step;
  hi = std::ceil(hi / step - 1e-9) * step;
}

void check_size(const ChartOptions& o) {
  if (o.width < 200 || o.height < 150 || o.width > 16384 || o.height > 16384)
    throw Error("wgc: chart: size " + std::to_string(o.width) + "x" + std::to_string(o.height) +
                " is out of range (200x150 .. 16384x16384)");
  if (o.text_scale < 1 || o.text_scale > 8)
    throw Error("wgc: chart: text_scale must be 1..8, got " + std::to_string(o.text_scale));
}

Image blank(const ChartOptions& o) {
  Image img(o.width, o.height, 3);
  std::fill(img.data.begin(), img.data.end(), uint8_t(255));
  return img;
}

// Shortens s with ".." until it fits max_w pixels.
std::string fit(std::string s, int max_w, int scale) {
  if (text_width(s, scale) <= max_w) return s;
  while (!s.empty() && text_width(s + "..", scale) > max_w) s.pop_back();
  return s + "..";
}

struct Frame {
  Rect plot;
  int legend_x;
};

// Where the legend's entries go: columns of `rows` entries, each `col_w` pixels wide, drawn at
// `scale`; enough columns (and a smaller scale when needed) that every entry is inside the image.
struct LegendLayout {
  int rows = 0, columns = 0, col_w = 0, scale = 1;
  int width() const { return columns * col_w; }
};

int legend_row_height(int scale) { return text_height(scale) + 3 * scale; }

LegendLayout legend_layout(const ChartOptions& o, const std::vector<std::string>& names, int top) {
  LegendLayout l;
  if (names.empty()) return l;
  int longest = 0;
  for (const auto& n : names) longest = std::max(longest, int(n.size()));
  const int max_w = o.width * 2 / 5;
  for (int scale = o.text_scale; scale >= 1; --scale) {
    l.scale = scale;
    l.rows = std::max(1, (o.height - top - 4 * scale) / legend_row_height(scale));
    l.columns = int((names.size() + size_t(l.rows) - 1) / size_t(l.rows));
    const int swatch = 14 * scale, min_text = text_width("abcdef..", scale);
    l.col_w = std::min(swatch + text_width(std::string(size_t(longest), 'x'), scale) + 3 * scale,
                       std::max(swatch + min_text, max_w / std::max(1, l.columns)));
    if (l.width() <= max_w || scale == 1) break;
  }
  return l;
}

// Lays out title, axis labels, tick labels and the legend around the plot area, and draws the
// title, the frame, the grid, the ticks and their labels, and the axis labels.
Frame draw_frame(Image& img, const ChartOptions& o, const std::string& title, const std::string& x_label,
                 const std::string& y_label, Axis& xa, const std::vector<double>& xt,
                 const std::vector<std::string>& xt_labels, Axis& ya, const std::vector<double>& yt,
                 const std::vector<std::string>& legend_names, bool x_grid) {
  const int s = o.text_scale, th = text_height(s), pad = 4 * s;
  int title_h = title.empty() ? pad : text_height(s + 1) + 2 * pad;
  int ylab_w = 0;
  for (double v : yt) ylab_w = std::max(ylab_w, text_width(tick_label(v), s));
  int left = pad + (y_label.empty() ? 0 : th + pad) + ylab_w + pad + 3 * s;
  int bottom = pad + th + pad + (x_label.empty() ? 0 : th + pad) + 3 * s;
  const LegendLayout legend = legend_layout(o, legend_names, title_h);
  int legend_w = legend_names.empty() ? 0 : legend.width() + pad;
  int right = pad * 2 + legend_w;
  Rect plot{left, title_h, o.width - right, o.height - bottom};
  if (plot.x1 - plot.x0 < 40 || plot.y1 - plot.y0 < 40) throw Error("wgc: chart: too small for its labels");

  xa.p0 = plot.x0;
  xa.p1 = plot.x1 - 1;
  ya.p0 = plot.y1 - 1;
  ya.p1 = plot.y0;

  if (!title.empty()) {
    std::string t = fit(title, o.width - 2 * pad, s + 1);
    draw_text(img, (o.width - text_width(t, s + 1)) / 2, pad, t, kText, s + 1);
  }
  // grid: minor lines at 2..9 x 10^k on log axes ticked by whole decades, then the ticks
  auto minor = [](const Axis& a, const std::vector<double>& t) {
    std::vector<double> m;
    double decades = std::log10(a.hi / a.lo);
    if (!a.log || decades > 8 || t.size() != size_t(std::lround(decades)) + 1) return m;
    for (double d = a.lo; d < a.hi * (1 - 1e-9); d *= 10)
      for (int k = 2; k <= 9; ++k) m.push_back(d * k);
    return m;
  };
  for (double v : minor(ya, yt)) {
    int y = int(std::lround(ya.map(v)));
    fill_rect(img, plot.x0, y, plot.x1, y + 1, kMinorGrid);
  }
  if (x_grid)
    for (double v : minor(xa, xt)) {
      int x = int(std::lround(xa.map(v)));
      fill_rect(img, x, plot.y0, x + 1, plot.y1, kMinorGrid);
    }
  for (double v : yt) {
    int y = int(std::lround(ya.map(v)));
    fill_rect(img, plot.x0, y, plot.x1, y + 1, kGrid);
    fill_rect(img, plot.x0 - 3 * s, y, plot.x0, y + 1, kAxis);
    std::string l = tick_label(v);
    draw_text(img, plot.x0 - 3 * s - pad / 2 - text_width(l, s), y - 7 * s / 2, l, kText, s);
  }
  for (size_t i = 0; i < xt.size(); ++i) {
    int x = int(std::lround(xa.map(xt[i])));
    if (x_grid) fill_rect(img, x, plot.y0, x + 1, plot.y1, kGrid);
    fill_rect(img, x, plot.y1, x + 1, plot.y1 + 3 * s, kAxis);
    const std::string& l = xt_labels[i];
    draw_text(img, x - text_width(l, s) / 2, plot.y1 + 3 * s + pad, l, kText, s);
  }
  // frame
  fill_rect(img, plot.x0, plot.y0, plot.x1, plot.y0 + 1, kAxis);
  fill_rect(img, plot.x0, plot.y1 - 1, plot.x1, plot.y1, kAxis);
  fill_rect(img, plot.x0, plot.y0, plot.x0 + 1, plot.y1, kAxis);
  fill_rect(img, plot.x1 - 1, plot.y0, plot.x1, plot.y1, kAxis);
  if (!x_label.empty()) {
    std::string l = fit(x_label, plot.x1 - plot.x0, s);
    draw_text(img, (plot.x0 + plot.x1 - text_width(l, s)) / 2, o.height - pad - th, l, kText, s);
  }
  if (!y_label.empty()) {
    std::string l = fit(y_label, plot.y1 - plot.y0, s);
    draw_text(img, pad, (plot.y0 + plot.y1 + text_width(l, s)) / 2, l, kText, s, true);
  }
  return {plot, plot.x1 + 2 * pad};
}

void draw_legend(Image& img, const ChartOptions& o, const Frame& f, const std::vector<std::string>& names, bool lines) {
  const LegendLayout l = legend_layout(o, names, f.plot.y0);
  const int s = l.scale, row = legend_row_height(s);
  Rect all{0, 0, img.width, img.height};
  for (size_t i = 0; i < names.size(); ++i) {
    const int x = f.legend_x + int(i / size_t(l.rows)) * l.col_w, y = f.plot.y0 + 2 * s + int(i % size_t(l.rows)) * row;
    Rgb c = series_color(i);
    int cy = y + 7 * s / 2;
    if (lines) {
      draw_line(img, x, cy + 0.5, x + 10 * s, cy + 0.5, std::max(2.0, s * 1.0), c, all);
      if (o.markers) draw_marker(img, x + 5 * s, cy + 0.5, 2.0 * s, int(i), c, all);
    } else {
      fill_rect(img, x + 2 * s, y, x + 9 * s, y + 7 * s, c);
    }
    const int text_x = x + 12 * s, room = std::min(l.col_w - 12 * s - s, img.width - text_x - 2 * s);
    draw_text(img, text_x, y, fit(names[i], room, s), kText, s);
  }
}

}  // namespace

const std::vector<Rgb>& palette() {
  static const std::vector<Rgb> p{{31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
                                  {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  return p;
}

namespace {

// A hue spaced by the golden angle from the last; three lightnesses and two saturations take turns.
Rgb golden_angle_color(size_t k) {
  const double h = std::fmod(double(k) * 137.50776405, 360.0) / 60.0;
  const double l = k % 3 == 0 ? 0.42 : k % 3 == 1 ? 0.58 : 0.30, sat = k % 2 == 0 ? 0.75 : 0.55;
  const double c = (1 - std::fabs(2 * l - 1)) * sat, x = c * (1 - std::fabs(std::fmod(h, 2.0) - 1)), m = l - c / 2;
  double r = 0, g = 0, b = 0;
  switch (int(h)) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x;
  }
  auto byte = [m](double v) { return uint8_t(std::lround(std::clamp(v + m, 0.0, 1.0) * 255)); };
  return {byte(r), byte(g), byte(b)};
}

int distance(Rgb a, Rgb b) { return std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b); }

}  // namespace

Rgb series_color(size_t i) {
  static std::mutex mu;
  static std::vector<Rgb> colors;
  static size_t next_k = 0;
  std::lock_guard lock(mu);
  if (colors.empty()) {
    colors = palette();
    for (Rgb c : {Rgb{174, 199, 232}, Rgb{255, 187, 120}, Rgb{152, 223, 138}, Rgb{255, 152, 150}, Rgb{197, 176, 213},
                  Rgb{196, 156, 148}, Rgb{247, 182, 210}, Rgb{199, 199, 199}, Rgb{219, 219, 141}, Rgb{158, 218, 229}})
      colors.push_back(c);  // Tableau 20's light tones
  }
  // Past those, golden-angle colours that keep a visible distance from every earlier one (the
  // distance asked for shrinks only when a long run of candidates finds none).
  int min_distance = 60, misses = 0;
  while (colors.size() <= i && colors.size() < 100000) {
    Rgb c = golden_angle_color(next_k++);
    bool far = true;
    for (Rgb o : colors) far = far && distance(c, o) >= min_distance;
    if (far) {
      colors.push_back(c);
      misses = 0;
    } else if (++misses > 200) {
      min_distance = std::max(1, min_distance * 3 / 4);
      misses = 0;
    }
  }
  return colors[std::min(i, colors.size() - 1)];
}

const uint8_t* glyph(char c) {
  int i = static_cast<unsigned char>(c);
  if (i < 32 || i > 126) i = '?';
  return kFont[i - 32];
}

int glyph_drop(char c) { return c == 'g' || c == 'p' || c == 'q' || c == 'y' ? 2 : 0; }

int text_width(std::string_view s, int scale) { return s.empty() ? 0 : int(s.size() * 6 - 1) * scale; }
int text_height(int scale) { return 9 * scale; }

void draw_text(Image& img, int x, int y, std::string_view s, Rgb color, int scale, bool vertical) {
  for (size_t i = 0; i < s.size(); ++i) {
    const uint8_t* g = glyph(s[i]);
    int cell = int(i) * 6 * scale, drop = glyph_drop(s[i]);
    for (int row = 0; row < 7; ++row)
      for (int col = 0; col < 5; ++col) {
        if (!(g[row] & (0x10 >> col))) continue;
        for (int dy = 0; dy < scale; ++dy)
          for (int dx = 0; dx < scale; ++dx) {
            int u = cell + col * scale + dx, v = (row + drop) * scale + dy;  // position in the unrotated text
            if (vertical)
              blend(img, x + v, y - u, color, 1.0);
            else
              blend(img, x + u, y + v, color, 1.0);
          }
      }
  }
}

std::vector<double> ticks(double lo, double hi, bool log, int max_ticks) {
  std::vector<double> t;
  if (!(hi > lo) || max_ticks < 2) return {lo};
  if (log) {
    int d0 = int(std::floor(std::log10(lo) + 1e-9)), d1 = int(std::ceil(std::log10(hi) - 1e-9));
    int decades = d1 - d0;
    if (decades * 3 <= max_ticks + 1) {
      for (int d = d0; d <= d1; ++d)
        for (double m : {1.0, 2.0, 5.0}) {
          double v = m * std::pow(10.0, d);
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
        }
      return t;
    }
    int stride = (decades + max_ticks - 1) / max_ticks;
    for (int d = d0; d <= d1; d += stride) t.push_back(std::pow(10.0, d));
    return t;
  }
  double raw = (hi - lo) / max_ticks, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

std::string tick_label(double v) {
  char buf[32];
  double a = std::fabs(v);
  if (v == 0) return "0";
  if (a >= 1e5 || a < 1e-3) {
    int e = int(std::floor(std::log10(a)));
    double m = v / std::pow(10.0, e);
    if (std::fabs(m) >= 9.995) {  // rounding carried into the next power
      m /= 10;
      ++e;
    }
    std::snprintf(buf, sizeof buf, "%.3g", m);
    return std::string(buf) + "e" + std::to_string(e);
  }
  if (a >= 1 && v == std::round(v))
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

Image render_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                        const std::vector<Series>& series, const ChartOptions& o) {
  check_size(o);
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (auto& se : series) {
    if (se.x.size() != se.y.size())
      throw Error("wgc: chart: series '" + se.name + "' has " + std::to_string(se.x.size()) + " x values and " +
                  std::to_string(se.y.size()) + " y values");
    for (size_t i = 0; i < se.x.size(); ++i)
      if (usable(se.x[i], o.log_x) && usable(se.y[i], o.log_y)) {
        xlo = std::min(xlo, se.x[i]);
        xhi = std::max(xhi, se.x[i]);
        ylo = std::min(ylo, se.y[i]);
        yhi = std::max(yhi, se.y[i]);
      }
  }
  const int max_xt = std::max(2, o.width / (40 * o.text_scale)), max_yt = std::max(2, o.height / (30 * o.text_scale));
  nice_range(xlo, xhi, o.log_x, max_xt);
  nice_range(ylo, yhi, o.log_y, max_yt);
  Axis xa{xlo, xhi, o.log_x}, ya{ylo, yhi, o.log_y};
  auto xt = ticks(xlo, xhi, o.log_x, max_xt), yt = ticks(ylo, yhi, o.log_y, max_yt);
  std::vector<std::string> xl, names;
  for (double v : xt) xl.push_back(tick_label(v));
  for (auto& se : series) names.push_back(se.name);

  Image img = blank(o);
  Frame f = draw_frame(img, o, title, x_label, y_label, xa, xt, xl, ya, yt, names, true);
  Rect clip{f.plot.x0 + 1, f.plot.y0 + 1, f.plot.x1 - 1, f.plot.y1 - 1};
  const double lw = std::max(2.0, 1.0 * o.text_scale), mr = 2.0 * o.text_scale + 0.5;
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& se = series[k];
    Rgb c = series_color(k);
    bool have_prev = false;
    double px = 0, py = 0;
    for (size_t i = 0; i < se.x.size(); ++i) {
      if (!usable(se.x[i], o.log_x) || !usable(se.y[i], o.log_y)) {
        have_prev = false;
        continue;
      }
      double x = xa.map(se.x[i]) + 0.5, y = ya.map(se.y[i]) + 0.5;
      if (have_prev) draw_line(img, px, py, x, y, lw, c, clip);
      px = x;
      py = y;
      have_prev = true;
    }
    if (o.markers)
      for (size_t i = 0; i < se.x.size(); ++i)
        if (usable(se.x[i], o.log_x) && usable(se.y[i], o.log_y))
          draw_marker(img, xa.map(se.x[i]) + 0.5, ya.map(se.y[i]) + 0.5, mr, int(k), c, clip);
  }
  draw_legend(img, o, f, names, true);
  return img;
}

Image render_bar_chart(const std::string& title, const std::string& y_label, const std::vector<std::string>& categories,
                       const std::vector<BarSeries>& series, const ChartOptions& o) {
  check_size(o);
  double ylo = INFINITY, yhi = -INFINITY;
  for (auto& se : series) {
    if (se.values.size() != categories.size())
      throw Error("wgc: chart: bar series '" + se.name + "' has " + std::to_string(se.values.size()) + " values for " +
                  std::to_string(categories.size()) + " categories");
    for (double v : se.values)
      if (usable(v, o.log_y)) {
        ylo = std::min(ylo, v);
        yhi = std::max(yhi, v);
      }
  }
  if (!o.log_y && ylo <= yhi) {  // bars grow from zero
    ylo = std::min(ylo, 0.0);
    yhi = std::max(yhi, 0.0);
  }
  const int max_yt = std::max(2, o.height / (30 * o.text_scale));
  nice_range(ylo, yhi, o.log_y, max_yt);
  Axis xa{0, double(std::max<size_t>(categories.size(), 1)), false}, ya{ylo, yhi, o.log_y};
  auto yt = ticks(ylo, yhi, o.log_y, max_yt);
  std::vector<double> xt;
  std::vector<std::string> xl, names;
  for (auto& se : series) names.push_back(se.name);

  // Category labels sit under the group centres; measure the plot width first to fit them.
  Image img = blank(o);
  Frame probe = draw_frame(img, o, title, "", y_label, xa, xt, xl, ya, yt, names, false);
  double group_w = double(probe.plot.x1 - probe.plot.x0) / double(std::max<size_t>(categories.size(), 1));
  int s = o.text_scale;
  int label_scale = s;
  for (auto& cat : categories)
    if (text_width(cat, label_scale) > group_w - 2 * s) label_scale = std::max(1, s - 1);
  img = blank(o);
  Frame f = draw_frame(img, o, title, "", y_label, xa, xt, xl, ya, yt, names, false);
  for (size_t i = 0; i < categories.size(); ++i) {
    double cx = xa.map(double(i) + 0.5);
    std::string l = fit(categories[i], int(group_w) - 2 * s, label_scale);
    draw_text(img, int(cx) - text_width(l, label_scale) / 2, f.plot.y1 + 3 * s + 2 * s, l, kText, label_scale);
    if (i > 0) fill_rect(img, int(xa.map(double(i))), f.plot.y1, int(xa.map(double(i))) + 1, f.plot.y1 + 3 * s, kAxis);
  }
  double base = o.log_y ? ylo : 0.0;
  size_t m = std::max<size_t>(series.size(), 1);
  double inner = group_w * 0.8, bar_w = inner / double(m);
  for (size_t i = 0; i < categories.size(); ++i)
    for (size_t k = 0; k < series.size(); ++k) {
      double v = series[k].values[i];
      if (!usable(v, o.log_y)) continue;
      double x0 = xa.map(double(i)) + group_w * 0.1 + bar_w * double(k);
      int bx0 = int(std::lround(x0)), bx1 = std::max(bx0 + 1, int(std::lround(x0 + bar_w)) - (bar_w > 4 ? 1 : 0));
      int yv = int(std::lround(ya.map(std::clamp(v, ylo, yhi)))), yb = int(std::lround(ya.map(base)));
      fill_rect(img, bx0, std::min(yv, yb), bx1, std::max(yv, yb) + 1, series_color(k));
    }
  // The frame again on top of bars that touch it.
  fill_rect(img, f.plot.x0, f.plot.y1 - 1, f.plot.x1, f.plot.y1, kAxis);
  draw_legend(img, o, f, names, false);
  return img;
}

void write_line_chart(const std::filesystem::path& path, const std::string& title, const std::string& x_label,
                      const std::string& y_label, const std::vector<Series>& series, const ChartOptions& o,
                      Overwrite overwrite) {
  write_png(path, render_line_chart(title, x_label, y_label, series, o), overwrite);
}

void write_bar_chart(const std::filesystem::path& path, const std::string& title, const std::string& y_label,
                     const std::vector<std::string>& categories, const std::vector<BarSeries>& series,
                     const ChartOptions& o, Overwrite overwrite) {
  write_png(path, render_bar_chart(title, y_label, categories, series, o), overwrite);
}

}  // namespace wgc::chart
