// Images on the host: 8-bit interleaved pixels, PNG (libpng) and JPEG (libjpeg) files, and the
// float forms the stencil ops take (grayscale, interleaved channels, RGBA planes).
#pragma once

#include "util/output_file.h"

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace wgc {

// width x height pixels of `channels` bytes each (1: gray, 3: RGB, 4: RGBA), rows top to bottom,
// channels interleaved: data[(y * width + x) * channels + c].
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> data;

  Image() = default;
  Image(int w, int h, int c);  // zero-filled; throws wgc::Error on a bad size or channel count
  int64_t pixels() const { return int64_t(width) * height; }
  uint8_t& at(int x, int y, int c) {
    return data[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
  uint8_t at(int x, int y, int c) const {
    return data[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
};

enum class ImageFormat { Png, Jpeg };

// Whether this build was linked with libpng / libjpeg (the others throw when they are absent).
bool png_supported();
bool jpeg_supported();

// Reads a PNG or JPEG, told apart by the file's first bytes (not its name). PNG gives 1, 3 or 4
// channels (gray+alpha becomes RGBA, palettes and 16-bit samples become 8-bit); JPEG gives 1 or 3.
// Throws wgc::Error naming the file when it is missing, unreadable, truncated or not an image.
Image read_image(const std::filesystem::path& path);
Image read_png(const std::filesystem::path& path);
Image read_jpeg(const std::filesystem::path& path);

// Writes by the extension (.png; .jpg/.jpeg), replacing an existing file. JPEG has no alpha: a
// 4-channel image loses it. quality: JPEG quality 1..100.
void write_image(const std::filesystem::path& path, const Image& img, int jpeg_quality = 92,
                 Overwrite overwrite = Overwrite::Yes);
void write_png(const std::filesystem::path& path, const Image& img, Overwrite overwrite = Overwrite::Yes);
void write_jpeg(const std::filesystem::path& path, const Image& img, int quality = 92,
                Overwrite overwrite = Overwrite::Yes);
// The format write_image would use for this path; throws for other extensions.
ImageFormat format_for_extension(const std::filesystem::path& path);

// Conversions to and from floats in [0, 1]. to_float keeps the channel layout (interleaved);
// to_gray uses Rec. 601 luma (0.299 R + 0.587 G + 0.114 B; alpha ignored); to_rgba_planes gives
// four planes of width*height values each (R, G, B, A; gray is copied to R, G, B, absent alpha is 1).
std::vector<float> to_float(const Image& img);
std::vector<float> to_gray(const Image& img);
std::vector<float> to_rgba_planes(const Image& img);
// Back to 8 bits: clamps to [0, 1] and rounds to the nearest level (NaN becomes 0).
Image from_float(std::span<const float> v, int width, int height, int channels);
Image from_rgba_planes(std::span<const float> planes, int width, int height, int channels = 4);
// Interleaved <-> planar floats of the same channel count.
std::vector<float> interleaved_to_planes(std::span<const float> v, int width, int height, int channels);
std::vector<float> planes_to_interleaved(std::span<const float> planes, int width, int height, int channels);

}  // namespace wgc
