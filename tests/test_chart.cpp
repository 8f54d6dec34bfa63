// Chart rendering: the font, ticks, and PNG line and bar charts of the right size with the
// series actually drawn.
#include "io/chart.h"
#include "io/image.h"
#include "test_util.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

using namespace wgc;
namespace fs = std::filesystem;

namespace {

fs::path temp_path(const std::string& name) {
  auto d = fs::temp_directory_path() / ("wgc_test_chart_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

size_t count_color(const Image& img, chart::Rgb c, int tol = 0) {
  size_t n = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      if (std::abs(img.at(x, y, 0) - c.r) <= tol && std::abs(img.at(x, y, 1) - c.g) <= tol &&
          std::abs(img.at(x, y, 2) - c.b) <= tol)
        ++n;
  return n;
}

size_t dark_pixels(const Image& img, int x0, int y0, int x1, int y1) {
  size_t n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      if (img.at(x, y, 0) < 100 && img.at(x, y, 1) < 100 && img.at(x, y, 2) < 100) ++n;
  return n;
}

std::vector<chart::Series> sweep() {
  std::vector<chart::Series> s(3);
  const char* names[] = {"naive", "tiled", "tiled_vec4"};
  for (int k = 0; k < 3; ++k) {
    s[size_t(k)].name = names[k];
    for (int i = 0; i < 8; ++i) {
      double n = std::pow(2.0, 8 + 2 * i);
      s[size_t(k)].x.push_back(n);
      s[size_t(k)].y.push_back(n / (1e3 + n) * 100 * (k + 1));
    }
  }
  return s;
}

}  // namespace

TEST(Chart, FontCoversPrintableAsciiWithDistinctGlyphs) {
  std::set<std::vector<uint8_t>> seen;
  for (int c = 33; c <= 126; ++c) {
    const uint8_t* g = chart::glyph(char(c));
    std::vector<uint8_t> rows(g, g + 7);
    int bits = 0;
    for (auto r : rows) {
      EXPECT_EQ(r & ~0x1f, 0) << "glyph " << char(c) << " uses more than 5 columns";
      bits += __builtin_popcount(r);
    }
    EXPECT_GT(bits, 0) << "glyph " << char(c) << " is empty";
    EXPECT_TRUE(seen.insert(rows).second) << "glyph " << char(c) << " repeats another";
  }
  for (int r = 0; r < 7; ++r) EXPECT_EQ(chart::glyph(' ')[r], 0);
  EXPECT_EQ(chart::glyph('\x01'), chart::glyph('?'));
  EXPECT_EQ(chart::text_width("abc", 2), (3 * 6 - 1) * 2);
}

TEST(Chart, TextIsDrawnWhereAsked) {
  Image img(60, 20, 3);
  chart::draw_text(img, 2, 3, "Hi", {255, 255, 255}, 2);
  // 'H' column 0 is set on every row: pixels (2..3, 3..16) are white.
  EXPECT_EQ(img.at(2, 3, 0), 255);
  EXPECT_EQ(img.at(3, 16, 1), 255);
  EXPECT_EQ(img.at(4, 3, 0), 0);  // H's second column is empty on row 0
  Image v(20, 60, 3);
  chart::draw_text(v, 3, 50, "H", {255, 0, 0}, 1, true);       // reads upwards from (3, 50)
  EXPECT_EQ(v.at(3, 50, 0), 255);                              // H's top-left pixel, rotated
  EXPECT_EQ(v.at(9, 50, 0), 255);                              // H's bottom-left pixel
  chart::draw_text(v, -100, -100, "clipped", {255, 0, 0}, 3);  // off the image: no crash
}

TEST(Chart, TicksAndLabels) {
  auto t = chart::ticks(0, 1, false, 5);
  ASSERT_GE(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t.front(), 0);
  EXPECT_DOUBLE_EQ(t.back(), 1);
  auto l = chart::ticks(1, 1e6, true, 8);
  EXPECT_EQ(l, (std::vector<double>{1, 10, 100, 1e3, 1e4, 1e5, 1e6}));
  auto l2 = chart::ticks(10, 100, true, 8);  // one decade: 1-2-5 inside
  EXPECT_EQ(l2, (std::vector<double>{10, 20, 50, 100}));
  auto many = chart::ticks(1e-10, 1e20, true, 6);
  EXPECT_LE(many.size(), 7u);
  EXPECT_EQ(chart::tick_label(0), "0");
  EXPECT_EQ(chart::tick_label(0.25), "0.25");
  EXPECT_EQ(chart::tick_label(4096), "4096");
  EXPECT_EQ(chart::tick_label(1e6), "1e6");
  EXPECT_EQ(chart::tick_label(2.5e-5), "2.5e-5");
  EXPECT_EQ(chart::tick_label(-3e7), "-3e7");
}

TEST(Chart, LineChartPngHasTheRightSizeAndDrawsEverySeries) {
  auto path = temp_path("line.png");
  chart::ChartOptions o;
  o.width = 900;
  o.height = 500;
  o.log_x = o.log_y = true;
  chart::write_line_chart(path, "stencil sweep (log-log)", "pixels", "GB/s", sweep(), o);
  Image img = read_image(path);
  ASSERT_EQ(img.width, 900);
  ASSERT_EQ(img.height, 500);
  ASSERT_EQ(img.channels, 3);
  for (size_t k = 0; k < 3; ++k) EXPECT_GT(count_color(img, chart::palette()[k]), 100u) << "series " << k;
  EXPECT_EQ(count_color(img, chart::palette()[3]), 0u);                 // no fourth series
  EXPECT_GT(dark_pixels(img, 0, 0, 900, 40), 50u);                      // a title
  EXPECT_GT(dark_pixels(img, 0, 0, 40, 500), 50u);                      // a y label
  EXPECT_GT(dark_pixels(img, 0, 460, 900, 500), 50u);                   // an x label
  EXPECT_GT(count_color(img, {255, 255, 255}), size_t(900 * 500 / 2));  // mostly background
}

TEST(Chart, LinearAxesAndGapsAndEmptyCharts) {
  std::vector<chart::Series> s{{"a", {0, 1, 2, 3, 4}, {1, -2, NAN, 4, 3}}, {"b", {1, 2}, {5, 5}}};
  Image img = chart::render_line_chart("linear", "x", "y", s);
  EXPECT_EQ(img.width, 1000);
  EXPECT_GT(count_color(img, chart::palette()[0]), 50u);
  EXPECT_GT(count_color(img, chart::palette()[1]), 50u);
  // Nothing to draw still gives axes; log axes skip non-positive values.
  Image empty = chart::render_line_chart("", "", "", {});
  EXPECT_EQ(empty.height, 620);
  chart::ChartOptions lg;
  lg.log_y = true;
  Image skip = chart::render_line_chart("t", "x", "y", {{"neg", {1, 2, 3}, {-1, 0, -5}}}, lg);
  EXPECT_EQ(count_color(skip, chart::palette()[0]), count_color(skip, chart::palette()[0]));
}

TEST(Chart, BarChartDrawsGroupedBars) {
  auto path = temp_path("bars.png");
  std::vector<std::string> cats{"sobel", "blur", "sum", "matmul"};
  std::vector<chart::BarSeries> s{{"GPU", {120, 80, 300, 25}}, {"CPU", {2, 1.5, 8, 0.3}}};
  chart::write_bar_chart(path, "GB/s by op", "GB/s", cats, s);
  Image img = read_image(path);
  EXPECT_EQ(img.width, 1000);
  EXPECT_EQ(img.height, 620);
  EXPECT_GT(count_color(img, chart::palette()[0]), 2000u);
  EXPECT_GT(count_color(img, chart::palette()[1]), 20u);
  chart::ChartOptions lg;
  lg.log_y = true;
  Image l = chart::render_bar_chart("log", "GB/s", cats, s, lg);
  EXPECT_GT(count_color(l, chart::palette()[1]), 1000u);  // on a log axis the small bars are tall
}

// Past ten series every one keeps a colour of its own, and every legend entry is drawn inside
// the image (columns when one does not fit the height). The bars are NaN: the only pixels of a
// series' colour are its legend swatch.
TEST(Chart, ManySeriesKeepDistinctColoursAndTheirLegend) {
  const size_t n = 60;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < i; ++j) {
      chart::Rgb a = chart::series_color(i), b = chart::series_color(j);
      const int d = std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b);
      EXPECT_GE(d, 30) << "series " << i << " and " << j << " look alike";
    }
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(chart::series_color(i).r, chart::palette()[i].r);
  for (size_t count : {size_t(12), size_t(25), size_t(60)}) {
    std::vector<chart::BarSeries> s;
    for (size_t i = 0; i < count; ++i) s.push_back({"series number " + std::to_string(i), {NAN, NAN}});
    for (int scale : {1, 2}) {
      chart::ChartOptions o;
      o.text_scale = scale;
      Image img = chart::render_bar_chart("many", "y", {"a", "b"}, s, o);
      for (size_t i = 0; i < count; ++i)
        EXPECT_GT(count_color(img, chart::series_color(i)), 4u)
            << count << " series, scale " << scale << ": legend " << i << " is missing";
    }
  }
  // A line chart with 25 series: the legend's names stay inside the image (no text in the
  // last columns of pixels).
  std::vector<chart::Series> lines;
  for (int i = 0; i < 25; ++i)
    lines.push_back({"a long series name number " + std::to_string(i), {1, 2}, {1.0 * i, 2.0}});
  Image img = chart::render_line_chart("lines", "x", "y", lines);
  EXPECT_EQ(dark_pixels(img, img.width - 3, 0, img.width, img.height), 0u);
  for (int i = 0; i < 25; ++i) EXPECT_GT(count_color(img, chart::series_color(size_t(i)), 8), 10u) << i;
}

TEST(Chart, BadInputIsAnError) {
  EXPECT_THROW(chart::render_line_chart("t", "x", "y", {{"bad", {1, 2}, {1}}}), Error);
  EXPECT_THROW(chart::render_bar_chart("t", "y", {"a", "b"}, {{"bad", {1}}}), Error);
  chart::ChartOptions tiny;
  tiny.width = 10;
  EXPECT_THROW(chart::render_line_chart("t", "x", "y", {}, tiny), Error);
  EXPECT_THROW(chart::write_line_chart("/nonexistent-dir/x.png", "t", "x", "y", sweep()), Error);
}

// Writes the sample charts next to the test binary's temp folder for a look: set WGC_CHART_OUT.
TEST(Chart, SamplesForALook) {
  const char* out = std::getenv("WGC_CHART_OUT");
  if (!out) GTEST_SKIP() << "set WGC_CHART_OUT=dir to write sample charts";
  chart::ChartOptions o;
  o.log_x = o.log_y = true;
  chart::write_line_chart(fs::path(out) / "line.png", "Gaussian blur (sigma 2) on H200", "image pixels", "GB/s",
                          sweep(), o);
  chart::write_bar_chart(fs::path(out) / "bars.png", "GPU vs CPU", "GB/s", {"sobel", "blur", "sum", "matmul-f32"},
                         {{"GPU", {120, 80, 300, 25}}, {"CPU", {2, 1.5, 8, 0.3}}, {"BLAS", {NAN, NAN, NAN, 5}}});
}
