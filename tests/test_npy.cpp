// NumPy .npy: write/read round trips, the exact 1.0 header, files as NumPy writes them (1.0 and 2.0
// headers, other dtypes), and clear errors on bad input.
#include "io/npy.h"
#include "wgc.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;
using namespace wgc;

namespace {

fs::path tmp(const std::string& name) { return fs::temp_directory_path() / ("wgc_test_npy_" + name); }

std::vector<std::byte> bytes(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

}  // namespace

TEST(Npy, HeaderIsVersion1Padded) {
  std::vector<int64_t> shape = {2, 3};
  std::string h = npy::header("<f4", shape);
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(size_t(uint8_t(h[8])) | size_t(uint8_t(h[9])) << 8, h.size() - 10);
  std::string dict = h.substr(10);
  EXPECT_EQ(dict.substr(0, dict.find('}') + 1), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(dict.back(), '\n');
  // Python tuples: (5,) for one dimension, () for a scalar.
  std::vector<int64_t> one = {5}, none = {};
  EXPECT_NE(npy::header("<i4", one).find("'shape': (5,), }"), std::string::npos);
  EXPECT_NE(npy::header("<i4", none).find("'shape': (), }"), std::string::npos);
}

TEST(Npy, FloatRoundTrip) {
  std::vector<float> v(3 * 1001);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.25f - 7.0f;
  v[5] = -0.0f;
  v[6] = INFINITY;
  auto p = tmp("f32.npy");
  npy::write(p, v, {3, 1001});
  EXPECT_EQ(fs::file_size(p) % 4, 0u);
  auto a = npy::read(p);
  EXPECT_EQ(a.dtype, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 1001}));
  EXPECT_FALSE(a.fortran_order);
  auto back = a.to_f32();
  ASSERT_EQ(back.size(), v.size());
  EXPECT_EQ(std::memcmp(back.data(), v.data(), v.size() * 4), 0);
  fs::remove(p);
}

TEST(Npy, IntRoundTripAndConversions) {
  std::vector<int32_t> v = {0, -1, 2147483647, -2147483647 - 1, 42};
  auto p = tmp("i32.npy");
  npy::write(p, v, {5});
  auto a = npy::read(p);
  EXPECT_EQ(a.dtype, "<i4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(a.to_i32(), v);
  EXPECT_EQ(a.to_f32()[4], 42.0f);
  fs::remove(p);
}

TEST(Npy, ReadsNumPyWrittenFiles) {
  // As numpy.save writes np.arange(6, dtype='<f8').reshape(2, 3) (1.0 header padded to 128 bytes).
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  dict.append(128 - 10 - dict.size() - 1, ' ');
  dict += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size() & 0xff) + char(dict.size() >> 8) + dict;
  for (int i = 0; i < 6; ++i) {
    double d = i;
    file.append(reinterpret_cast<const char*>(&d), 8);
  }
  auto a = npy::parse(bytes(file));
  EXPECT_EQ(a.dtype, "<f8");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.to_f32(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_THROW(a.to_i32(), Error);  // not an integer type

  // A 2.0 header (4-byte length), int64 and uint8.
  std::string d2 = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  d2.append(128 - 12 - d2.size() - 1, ' ');
  d2 += '\n';
  std::string f2 = std::string("\x93NUMPY\x02\x00", 8) + char(d2.size()) + std::string(3, '\0') + d2;
  for (int64_t x : {int64_t(-5), int64_t(7), int64_t(1) << 40}) f2.append(reinterpret_cast<const char*>(&x), 8);
  auto b = npy::parse(bytes(f2));
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(b.to_f32()[2], float(int64_t(1) << 40));
  EXPECT_THROW(b.to_i32(), Error);  // 2^40 does not fit

  std::string d3 = "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }\n";
  std::string f3 = std::string("\x93NUMPY\x01\x00", 8) + char(d3.size()) + '\0' + d3 + "\xff\x01";
  EXPECT_EQ(npy::parse(bytes(f3)).to_i32(), (std::vector<int32_t>{255, 1}));
}

TEST(Npy, ErrorsNameTheProblem) {
  auto expect_error = [](const std::string& file, const std::string& what) {
    try {
      npy::parse(bytes(file), "x.npy");
      FAIL() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("x.npy"), std::string::npos) << e.what();
    }
  };
  expect_error("PK\x03\x04 not numpy", "magic");
  std::string good = npy::header("<f4", std::vector<int64_t>{2}) + std::string(8, '\0');
  expect_error(good.substr(0, good.size() - 1), "bytes of data");
  std::string v9 = good;
  v9[6] = 9;
  expect_error(v9, "version 9");
  std::string big = good;
  big.replace(big.find("<f4"), 3, ">f4");
  expect_error(big, "little-endian");
  std::string obj = good;
  obj.replace(obj.find("<f4"), 3, "|O8");
  expect_error(obj, "not supported");
  EXPECT_THROW(npy::read("/nonexistent/x.npy"), Error);
  std::vector<float> three(3);
  EXPECT_THROW(npy::write(tmp("bad.npy"), three, {2, 2}), Error);
}
