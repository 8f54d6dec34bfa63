// Charts for benchmark sweeps, drawn into an RGB raster with a built-in 5x7 bitmap font and
// written as PNG: line charts of several named series (linear or log axes) and grouped bar charts.
#pragma once

#include "io/image.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::chart {

// One line: points (x[i], y[i]). Points that are not finite, or not positive on a log axis, are
// left out (the line breaks there).
struct Series {
  std::string name;
  std::vector<double> x, y;
};

// One bar per category (values[i] belongs to categories[i]); NaN leaves the bar out.
struct BarSeries {
  std::string name;
  std::vector<double> values;
};

struct ChartOptions {
  int width = 1000, height = 620;  // pixels
  bool log_x = false, log_y = false;
  bool markers = true;  // line charts: a marker at each point (shape per series)
  int text_scale = 2;   // font pixel size (the 5x7 glyphs are drawn scale x scale)
};

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

// The first series' colours, in order (Tableau 10).
const std::vector<Rgb>& palette();
// Series i's colour: palette() for the first ten, then Tableau 20's light tones, then hues spaced
// by the golden angle at three lightnesses: every series of a chart has a colour of its own.
Rgb series_color(size_t i);

// Renders into a width x height RGB image. Throws wgc::Error for a size under 200x150, a series
// whose x and y differ in length, or bar values not matching the categories.
Image render_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                        const std::vector<Series>& series, const ChartOptions& o = {});
Image render_bar_chart(const std::string& title, const std::string& y_label, const std::vector<std::string>& categories,
                       const std::vector<BarSeries>& series, const ChartOptions& o = {});

// The same, written as a PNG file (errors name the file; util/output_file.h's rule).
void write_line_chart(const std::filesystem::path& path, const std::string& title, const std::string& x_label,
                      const std::string& y_label, const std::vector<Series>& series, const ChartOptions& o = {},
                      Overwrite overwrite = Overwrite::Yes);
void write_bar_chart(const std::filesystem::path& path, const std::string& title, const std::string& y_label,
                     const std::vector<std::string>& categories, const std::vector<BarSeries>& series,
                     const ChartOptions& o = {}, Overwrite overwrite = Overwrite::Yes);

// --- the pieces, for other drawings -------------------------------------------------------
// The 5x7 glyph of an ASCII character (32..126; others draw as '?'): 7 rows, bit 4 the leftmost column.
const uint8_t* glyph(char c);
// Rows the glyph is drawn below the top of its cell: 2 for the descenders g, p, q, y; else 0.
int glyph_drop(char c);
// Text is drawn in 6 x 9 cells per scale unit (5x7 glyph, 1 column and 2 rows of spacing).
int text_width(std::string_view s, int scale);
int text_height(int scale);
// Draws s with its top-left corner at (x, y); vertical: rotated 90 degrees counter-clockwise
// (reading upwards), (x, y) then is the bottom-left corner. Pixels outside the image are skipped.
void draw_text(Image& img, int x, int y, std::string_view s, Rgb color, int scale = 1, bool vertical = false);
// Tick positions covering [lo, hi]: 1-2-5 steps on a linear axis, powers of ten (with 2 and 5
// between when that stays within max_ticks + 1) on a log axis.
std::vector<double> ticks(double lo, double hi, bool log, int max_ticks = 8);
// A short label for a tick value: "0", "0.25", "4096", "1e6", "2.5e-5".
std::string tick_label(double v);

}  // namespace wgc::chart
