// Image files: PNG (libpng) and JPEG (libjpeg). The Image type and its float forms: util/image.h.
#pragma once

#include "util/image.h"
#include "util/output_file.h"

#include <filesystem>

namespace wgc {

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

}  // namespace wgc
