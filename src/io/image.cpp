#include "io/image.h"

#include "util/error.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#ifdef WGC_HAVE_PNG
#include <png.h>
#endif
#ifdef WGC_HAVE_JPEG
#include <jerror.h>
#include <jpeglib.h>
#endif

namespace wgc {
namespace {

// A small file cannot claim a large image: PNG (deflate) and JPEG (at least a code per 8x8 block)
// cannot hold more pixels per byte than this, with a margin; a header that claims more is corrupt.
constexpr int64_t kMaxPixelsPerFileByte = 4096;

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

[[noreturn]] void fail(const std::filesystem::path& p, const std::string& what) {
  throw Error("wgc: image " + quoted(p) + ": " + what);
}

// The pixels a header claims, against the file that should hold them.
bool plausible_size(const std::filesystem::path& p, int64_t w, int64_t h) {
  std::error_code ec;
  auto bytes = std::filesystem::file_size(p, ec);
  if (ec) return true;  // (not a regular file: the decoder finds out)
  return w * h <= int64_t(bytes) * kMaxPixelsPerFileByte + (int64_t(1) << 20);
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_file(const std::filesystem::path& p, const char* mode) {
  File f(std::fopen(p.c_str(), mode));
  if (!f) fail(p, std::string("cannot open: ") + std::strerror(errno));
  return f;
}

std::string lower_ext(const std::filesystem::path& p) {
  std::string e = p.extension().string();
  for (auto& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return e;
}

}  // namespace

#ifdef WGC_HAVE_PNG
bool png_supported() { return true; }
#else
bool png_supported() { return false; }
#endif
#ifdef WGC_HAVE_JPEG
bool jpeg_supported() { return true; }
#else
bool jpeg_supported() { return false; }
#endif

ImageFormat format_for_extension(const std::filesystem::path& path) {
  std::string e = lower_ext(path);
  if (e == ".png") return ImageFormat::Png;
  if (e == ".jpg" || e == ".jpeg") return ImageFormat::Jpeg;
  throw Error("wgc: image " + quoted(path) + ": unknown extension '" + e + "' (use .png, .jpg or .jpeg)");
}

Image read_image(const std::filesystem::path& path) {
  File f = open_file(path, "rb");
  unsigned char magic[8] = {};
  size_t n = std::fread(magic, 1, sizeof magic, f.get());
  f.reset();
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n == 8 && std::memcmp(magic, kPng, 8) == 0) return read_png(path);
  if (n >= 3 && magic[0] == 0xff && magic[1] == 0xd8 && magic[2] == 0xff) return read_jpeg(path);
  if (n == 0) fail(path, "the file is empty");
  fail(path, "not a PNG or JPEG file (unrecognised signature)");
}

void write_image(const std::filesystem::path& path, const Image& img, int jpeg_quality, Overwrite overwrite) {
  switch (format_for_extension(path)) {
    case ImageFormat::Png: return write_png(path, img, overwrite);
    case ImageFormat::Jpeg: return write_jpeg(path, img, jpeg_quality, overwrite);
  }
}

// --- PNG, through libpng's simplified API (it keeps its own error state: no longjmp here) ------

#ifdef WGC_HAVE_PNG
Image read_png(const std::filesystem::path& path) {
  File f = open_file(path, "rb");
  png_image pi;
  std::memset(&pi, 0, sizeof pi);
  pi.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_stdio(&pi, f.get())) fail(path, std::string("not a valid PNG: ") + pi.message);
  int64_t w = pi.width, h = pi.height;
  if (w <= 0 || h <= 0 || w * h > kMaxImagePixels) {
    png_image_free(&pi);
    fail(path, "PNG size " + std::to_string(w) + "x" + std::to_string(h) + " is out of range");
  }
  if (!plausible_size(path, w, h)) {
    png_image_free(&pi);
    fail(path, "PNG size " + std::to_string(w) + "x" + std::to_string(h) + " cannot be stored in a file this small");
  }
  int c;
  if (pi.format & PNG_FORMAT_FLAG_ALPHA) {
    pi.format = PNG_FORMAT_RGBA;
    c = 4;
  } else if (pi.format & PNG_FORMAT_FLAG_COLOR) {
    pi.format = PNG_FORMAT_RGB;
    c = 3;
  } else {
    pi.format = PNG_FORMAT_GRAY;
    c = 1;
  }
  Image img(static_cast<int>(w), static_cast<int>(h), c);
  if (!png_image_finish_read(&pi, nullptr, img.data.data(), 0, nullptr))
    fail(path, std::string("corrupt or truncated PNG: ") + pi.message);
  return img;
}

void write_png(const std::filesystem::path& path, const Image& img, Overwrite overwrite) {
  check_image(img, "write_png");
  check_output(path, overwrite);  // before the encoding
  png_image pi;
  std::memset(&pi, 0, sizeof pi);
  pi.version = PNG_IMAGE_VERSION;
  pi.width = static_cast<png_uint_32>(img.width);
  pi.height = static_cast<png_uint_32>(img.height);
  pi.format = img.channels == 1 ? PNG_FORMAT_GRAY : img.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  // Encoded in memory (the size first), then written through a temporary file (util/output_file.h).
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&pi, nullptr, &size, 0, img.data.data(), 0, nullptr))
    fail(path, std::string("PNG encoding failed: ") + pi.message);
  std::vector<std::byte> bytes(size);
  if (!png_image_write_to_memory(&pi, bytes.data(), &size, 0, img.data.data(), 0, nullptr))
    fail(path, std::string("PNG encoding failed: ") + pi.message);
  bytes.resize(size);
  write_file(path, bytes, overwrite);
}
#else
Image read_png(const std::filesystem::path& path) { fail(path, "this build of wgc has no PNG support (libpng)"); }
void write_png(const std::filesystem::path& path, const Image&, Overwrite) {
  fail(path, "this build of wgc has no PNG support (libpng)");
}
#endif

// --- JPEG, through libjpeg: errors longjmp back to the function that set the jump ------------

#ifdef WGC_HAVE_JPEG
namespace {

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  e->mgr.format_message(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings are ignored except a premature end of data, which libjpeg would otherwise paper over
// with gray pixels: a truncated file is an error.
void jpeg_emit_message(j_common_ptr cinfo, int level) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  if (level == -1 && e->mgr.msg_code == JWRN_JPEG_EOF) {
    e->mgr.format_message(cinfo, e->message);
    std::longjmp(e->jump, 1);
  }
  if (level == -1) e->mgr.num_warnings++;
}

void install(JpegError& e) {
  jpeg_std_error(&e.mgr);
  e.mgr.error_exit = jpeg_error_exit;
  e.mgr.emit_message = jpeg_emit_message;
  e.message[0] = 0;
}

}  // namespace

Image read_jpeg(const std::filesystem::path& path) {
  File f = open_file(path, "rb");
  Image img;  // declared before setjmp; its heap storage is released normally on either path
  jpeg_decompress_struct cinfo;
  JpegError err;
  install(err);
  cinfo.err = &err.mgr;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    fail(path, std::string("corrupt or truncated JPEG: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_stdio_src(&cinfo, f.get());
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    std::snprintf(err.message, sizeof err.message, "CMYK JPEG is not supported");
    std::longjmp(err.jump, 1);
  }
  cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  // The size is checked from the header, before jpeg_start_decompress: for a progressive JPEG that
  // allocates and clears coefficients for the whole image (gigabytes for a forged header).
  int64_t w = cinfo.image_width, h = cinfo.image_height;
  if (w <= 0 || h <= 0 || w * h > kMaxImagePixels || !plausible_size(path, w, h)) {
    std::snprintf(err.message, sizeof err.message, "size %lldx%lld is out of range%s", static_cast<long long>(w),
                  static_cast<long long>(h), w * h > kMaxImagePixels ? "" : " for a file this small");
    std::longjmp(err.jump, 1);
  }
  jpeg_start_decompress(&cinfo);
  if (int64_t(cinfo.output_width) != w || int64_t(cinfo.output_height) != h) {  // no scaling is asked for
    std::snprintf(err.message, sizeof err.message, "decoder gives %ux%u for a %lldx%lld image", cinfo.output_width,
                  cinfo.output_height, static_cast<long long>(w), static_cast<long long>(h));
    std::longjmp(err.jump, 1);
  }
  img.width = static_cast<int>(w);
  img.height = static_cast<int>(h);
  img.channels = cinfo.output_components;
  img.data.resize(size_t(w) * size_t(h) * size_t(img.channels));
  size_t stride = size_t(w) * size_t(img.channels);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img.data.data() + size_t(cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return img;
}

void write_jpeg(const std::filesystem::path& path, const Image& img, int quality, Overwrite overwrite) {
  check_image(img, "write_jpeg");
  check_output(path, overwrite);  // before the encoding
  if (quality < 1 || quality > 100) fail(path, "JPEG quality must be 1..100, got " + std::to_string(quality));
  // JPEG has no alpha: drop it.
  std::vector<uint8_t> rgb;
  const uint8_t* src = img.data.data();
  int c = img.channels;
  if (c == 4) {
    rgb.resize(size_t(img.pixels()) * 3);
    for (size_t i = 0; i < size_t(img.pixels()); ++i)
      for (size_t k = 0; k < 3; ++k) rgb[i * 3 + k] = img.data[i * 4 + k];
    src = rgb.data();
    c = 3;
  }
  // Encoded in memory, then written through a temporary file (util/output_file.h).
  unsigned char* mem = nullptr;
  unsigned long mem_size = 0;
  struct Free {
    unsigned char*& p;
    ~Free() { std::free(p); }
  } free_mem{mem};
  jpeg_compress_struct cinfo;
  JpegError err;
  install(err);
  cinfo.err = &err.mgr;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    fail(path, std::string("JPEG write failed: ") + err.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &mem, &mem_size);
  cinfo.image_width = static_cast<JDIMENSION>(img.width);
  cinfo.image_height = static_cast<JDIMENSION>(img.height);
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  size_t stride = size_t(img.width) * size_t(c);
  while (cinfo.next_scanline < cinfo.image_height) {
    auto row = const_cast<JSAMPROW>(src + size_t(cinfo.next_scanline) * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  write_file(path, std::as_bytes(std::span(mem, size_t(mem_size))), overwrite);
}
#else
Image read_jpeg(const std::filesystem::path& path) { fail(path, "this build of wgc has no JPEG support (libjpeg)"); }
void write_jpeg(const std::filesystem::path& path, const Image&, int, Overwrite) {
  fail(path, "this build of wgc has no JPEG support (libjpeg)");
}
#endif

}  // namespace wgc
