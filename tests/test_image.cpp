// Image I/O (PNG, JPEG), conversions, bad files, and the `wgc sobel` / `wgc blur` commands.
#include "io/image.h"
#include "ops/stencil.h"
#include "test_util.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace wgc;
namespace fs = std::filesystem;

namespace {

using wgc::test::temp_dir;

Image noise_image(int w, int h, int c, uint32_t seed) {
  Image img(w, h, c);
  auto v = test::random_floats(img.data.size(), seed, 0.f, 256.f);
  for (size_t i = 0; i < v.size(); ++i) img.data[i] = uint8_t(std::min(v[i], 255.f));
  return img;
}

// A smooth image (JPEG keeps it close).
Image smooth_image(int w, int h, int c) {
  Image img(w, h, c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) img.at(x, y, k) = uint8_t(60 + x * 100 / w + y * 60 / h + k * 10);
  return img;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The error message of f(), or "" if it did not throw wgc::Error.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double mean_abs_diff(const Image& a, const Image& b) {
  double d = 0;
  for (size_t i = 0; i < a.data.size(); ++i) d += std::abs(int(a.data[i]) - int(b.data[i]));
  return d / double(a.data.size());
}

}  // namespace

TEST(Image, ConstructorChecksShape) {
  EXPECT_THROW(Image(0, 5, 1), Error);
  EXPECT_THROW(Image(5, 5, 2), Error);
  EXPECT_THROW(Image(5, -1, 3), Error);
  Image img(3, 2, 4);
  EXPECT_EQ(img.data.size(), 24u);
  EXPECT_EQ(img.pixels(), 6);
}

TEST(Image, PngRoundTripsExactlyForEveryChannelCount) {
  if (!png_supported()) GTEST_SKIP() << "built without libpng";
  for (int c : {1, 3, 4})
    for (auto [w, h] : {std::pair{1, 1}, {17, 5}, {65, 33}}) {
      Image img = noise_image(w, h, c, uint32_t(w * 10 + c));
      auto p = temp_dir() / ("rt_" + std::to_string(c) + "_" + std::to_string(w) + ".png");
      write_image(p, img);
      Image back = read_image(p);
      EXPECT_EQ(back.width, w);
      EXPECT_EQ(back.height, h);
      EXPECT_EQ(back.channels, c);
      EXPECT_EQ(back.data, img.data) << c << " channels " << w << "x" << h;
    }
}

TEST(Image, JpegRoundTripsClosely) {
  if (!jpeg_supported()) GTEST_SKIP() << "built without libjpeg";
  for (int c : {1, 3}) {
    Image img = smooth_image(64, 48, c);
    auto p = temp_dir() / ("rt_" + std::to_string(c) + ".jpg");
    write_image(p, img, 95);
    Image back = read_image(p);
    ASSERT_EQ(back.width, 64);
    ASSERT_EQ(back.height, 48);
    ASSERT_EQ(back.channels, c);
    EXPECT_LT(mean_abs_diff(back, img), 3.0) << c << " channels";
  }
  // RGBA: the alpha is dropped.
  Image rgba = smooth_image(20, 10, 4);
  auto p = temp_dir() / "rgba.jpeg";
  write_jpeg(p, rgba, 90);
  Image back = read_jpeg(p);
  EXPECT_EQ(back.channels, 3);
  EXPECT_THROW(write_jpeg(p, rgba, 0), Error);
}

TEST(Image, FormatIsReadFromTheBytesNotTheName) {
  if (!png_supported()) GTEST_SKIP() << "built without libpng";
  Image img = noise_image(9, 7, 3, 3);
  auto p = temp_dir() / "png_named.dat";
  write_png(p, img);
  EXPECT_EQ(read_image(p).data, img.data);
  EXPECT_EQ(format_for_extension("a/b.PNG"), ImageFormat::Png);
  EXPECT_EQ(format_for_extension("x.JpEg"), ImageFormat::Jpeg);
  std::string e = error_of([] { format_for_extension("out.bmp"); });
  EXPECT_NE(e.find("out.bmp"), std::string::npos) << e;
  EXPECT_NE(e.find(".bmp"), std::string::npos) << e;
}

TEST(Image, BadFilesAreErrorsNamingTheFile) {
  auto missing = temp_dir() / "does_not_exist.png";
  std::string e = error_of([&] { read_image(missing); });
  EXPECT_NE(e.find(missing.string()), std::string::npos) << e;
  EXPECT_NE(e.find("No such file"), std::string::npos) << e;

  auto empty = temp_dir() / "empty.png";
  write_bytes(empty, "");
  e = error_of([&] { read_image(empty); });
  EXPECT_NE(e.find(empty.string()), std::string::npos) << e;
  EXPECT_NE(e.find("empty"), std::string::npos) << e;

  auto junk = temp_dir() / "junk.jpg";
  write_bytes(junk, "this is not an image at all, just some text");
  e = error_of([&] { read_image(junk); });
  EXPECT_NE(e.find(junk.string()), std::string::npos) << e;
  EXPECT_NE(e.find("not a PNG or JPEG"), std::string::npos) << e;

  Image img = noise_image(40, 30, 3, 9);
  if (png_supported()) {
    auto good = temp_dir() / "good.png";
    write_png(good, img);
    std::string bytes = read_bytes(good);
    auto cut = temp_dir() / "truncated.png";
    write_bytes(cut, bytes.substr(0, bytes.size() / 2));
    e = error_of([&] { read_image(cut); });
    EXPECT_NE(e.find(cut.string()), std::string::npos) << e;
    // A flipped byte in the image data: the CRC check fails.
    std::string bad = bytes;
    bad[bad.size() / 2] = char(bad[bad.size() / 2] ^ 0x5a);
    auto corrupt = temp_dir() / "corrupt.png";
    write_bytes(corrupt, bad);
    e = error_of([&] { read_image(corrupt); });
    EXPECT_NE(e.find(corrupt.string()), std::string::npos) << e;
    // Only the signature.
    auto sig = temp_dir() / "signature_only.png";
    write_bytes(sig, bytes.substr(0, 8));
    e = error_of([&] { read_image(sig); });
    EXPECT_NE(e.find(sig.string()), std::string::npos) << e;
  }
  if (jpeg_supported()) {
    auto good = temp_dir() / "good.jpg";
    write_jpeg(good, img);
    std::string bytes = read_bytes(good);
    auto cut = temp_dir() / "truncated.jpg";
    write_bytes(cut, bytes.substr(0, bytes.size() * 2 / 3));
    e = error_of([&] { read_image(cut); });
    EXPECT_NE(e.find(cut.string()), std::string::npos) << e;
    auto header_only = temp_dir() / "header_only.jpg";
    write_bytes(header_only, bytes.substr(0, 20));
    e = error_of([&] { read_image(header_only); });
    EXPECT_NE(e.find(header_only.string()), std::string::npos) << e;
  }
  // Writing where there is no such folder.
  auto nowhere = temp_dir() / "no_such_dir" / "x.png";
  e = error_of([&] { write_image(nowhere, img); });
  EXPECT_NE(e.find(nowhere.string()), std::string::npos) << e;
  // An image whose data does not match its size.
  Image broken = img;
  broken.data.pop_back();
  EXPECT_THROW(write_image(temp_dir() / "broken.png", broken), Error);
}

TEST(Image, Conversions) {
  Image rgb(2, 1, 3);
  rgb.data = {255, 0, 0, 10, 20, 30};
  auto g = to_gray(rgb);
  EXPECT_NEAR(g[0], 0.299f, 1e-6f);
  EXPECT_NEAR(g[1], (0.299f * 10 + 0.587f * 20 + 0.114f * 30) / 255.f, 1e-6f);
  auto planes = to_rgba_planes(rgb);
  ASSERT_EQ(planes.size(), 8u);
  EXPECT_FLOAT_EQ(planes[0], 1.f);             // R of pixel 0
  EXPECT_FLOAT_EQ(planes[2 + 1], 20 / 255.f);  // G of pixel 1
  EXPECT_FLOAT_EQ(planes[6], 1.f);             // absent alpha is 1
  Image gray(2, 1, 1);
  gray.data = {51, 204};
  auto gp = to_rgba_planes(gray);
  EXPECT_FLOAT_EQ(gp[0], 0.2f);
  EXPECT_FLOAT_EQ(gp[2], 0.2f);  // gray copied to G
  EXPECT_FLOAT_EQ(gp[4], 0.2f);  // and B
  Image back = from_rgba_planes(to_rgba_planes(rgb), 2, 1, 3);
  EXPECT_EQ(back.data, rgb.data);
  // to_float / from_float round-trip every level; from_float clamps and rounds, NaN -> 0.
  Image all(256, 1, 1);
  for (int i = 0; i < 256; ++i) all.data[size_t(i)] = uint8_t(i);
  EXPECT_EQ(from_float(to_float(all), 256, 1, 1).data, all.data);
  std::vector<float> odd{-1.f, 2.f, NAN, 0.5f};
  EXPECT_EQ(from_float(odd, 4, 1, 1).data, (std::vector<uint8_t>{0, 255, 0, 128}));
  EXPECT_THROW(from_float(odd, 3, 1, 1), Error);
  auto v = test::random_floats(5 * 3 * 4, 1);
  EXPECT_EQ(planes_to_interleaved(interleaved_to_planes(v, 5, 3, 4), 5, 3, 4), v);
}

// --- the commands ---------------------------------------------------------------------------

namespace {

struct CliRun {
  int rc;
  std::string out;
};

CliRun wgc_cli(const std::string& args) {
  auto log = temp_dir() / "cli.log";
  std::string cmd = std::string(WGC_CLI_PATH) + " " + args + " >" + log.string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_bytes(log)};
}

}  // namespace

TEST(ImageCli, SobelAndBlurWriteFilesAndRefuseToOverwrite) {
  if (!fs::exists(WGC_CLI_PATH)) GTEST_SKIP() << "the wgc tool is not built: " << WGC_CLI_PATH;
  if (!png_supported() || !jpeg_supported()) GTEST_SKIP() << "built without libpng/libjpeg";
  auto in = temp_dir() / "cli_in.png";
  Image img = smooth_image(33, 21, 3);
  write_png(in, img);
  auto out = temp_dir() / "cli_sobel.png";
  fs::remove(out);
  CliRun r = wgc_cli("sobel " + in.string() + " " + out.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  Image s = read_image(out);
  EXPECT_EQ(s.width, 33);
  EXPECT_EQ(s.height, 21);
  EXPECT_EQ(s.channels, 1);
  EXPECT_EQ(s.data, sobel_on_cpu(img).data);

  auto before = read_bytes(out);
  r = wgc_cli("blur " + in.string() + " " + out.string());
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--force"), std::string::npos) << r.out;
  EXPECT_EQ(read_bytes(out), before);  // untouched

  // --force, on the GPU path (--cpu-below 0), to JPEG.
  auto jpg = temp_dir() / "cli_blur.jpg";
  write_bytes(jpg, "old");
  r = wgc_cli("blur --sigma 1.5 --cpu-below 0 --force " + in.string() + " " + jpg.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("gpu"), std::string::npos) << r.out;
  Image b = read_image(jpg);
  EXPECT_EQ(b.channels, 3);
  EXPECT_LT(mean_abs_diff(b, gaussian_blur_on_cpu(img, 1.5f)), 3.0);
}

TEST(ImageCli, BadArgumentsFailWithAReason) {
  if (!fs::exists(WGC_CLI_PATH)) GTEST_SKIP() << "the wgc tool is not built: " << WGC_CLI_PATH;
  auto in = temp_dir() / "cli_bad_in.png";
  if (png_supported()) write_png(in, smooth_image(8, 8, 1));
  CliRun r = wgc_cli("sobel " + (temp_dir() / "missing.png").string() + " " + (temp_dir() / "o.png").string());
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("missing.png"), std::string::npos) << r.out;
  r = wgc_cli("blur " + in.string() + " " + (temp_dir() / "o.gif").string());
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find(".gif"), std::string::npos) << r.out;
  r = wgc_cli("blur --sigma -2 " + in.string() + " " + (temp_dir() / "o.png").string());
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("sigma"), std::string::npos) << r.out;
  r = wgc_cli("sobel " + in.string());
  EXPECT_NE(r.rc, 0);
  r = wgc_cli("blur --version fastest " + in.string() + " " + (temp_dir() / "o.png").string());
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("fastest"), std::string::npos) << r.out;
}
