// Dequantizers: every block type is built here from chosen scales and quants by a packer written
// from the format definition (GGML's block layouts), and each output is checked against the value
// computed from those choices; plus half-precision conversions and the fixtures' Q8_0 data.
#include "cpu/llm/dequant.h"
#include "llm/formats/gguf.h"
#include "llm/synth/quantize.h"
#include "test_util.h"

#include <bit>
#include <cstring>
#include <random>

using namespace wgc::llm;

namespace {

// A little-endian block being assembled.
struct Block {
  std::vector<std::byte> b;
  explicit Block(size_t n) : b(n) {}
  void u8(size_t at, uint8_t v) { b.at(at) = std::byte(v); }
  void or8(size_t at, uint8_t v) { b.at(at) |= std::byte(v); }
  void f16(size_t at, uint16_t h) { std::memcpy(&b.at(at), &h, 2); }
  void f32(size_t at, float v) { std::memcpy(&b.at(at), &v, 4); }
  void i16(size_t at, int16_t v) { std::memcpy(&b.at(at), &v, 2); }
};

// A scale that is exactly representable in f16 (so expected values are exact).
uint16_t h(float v) {
  uint16_t r = f32_to_f16(v);
  EXPECT_EQ(f16_to_f32(r), v) << v << " is not an f16 value";
  return r;
}

std::vector<float> run(TensorType t, const Block& blk) { return dequantize(t, blk.b, block_size(t)); }

void expect_all(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6 * std::max(1.0, std::fabs(want[i]))) << what << " element " << i;
}

}  // namespace

TEST(Half, F16RoundTripsEveryValue) {
  for (uint32_t i = 0; i < 65536; ++i) {
    uint16_t x = uint16_t(i);
    float f = f16_to_f32(x);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), x) << "f16 0x" << std::hex << i;
  }
}

TEST(Half, F16KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 0x1p-24f);  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x0400), 0x1p-14f);  // smallest normal
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
  EXPECT_EQ(f32_to_f16(65520.f), 0x7C00);              // rounds up to inf
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3C00);      // tie to even (down)
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie to even (up)
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);  // tie to even, to zero
  EXPECT_EQ(f32_to_f16(0x1.8p-25f), 0x0001);
}

TEST(Half, BF16) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie to even (down)
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie to even (up)
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  for (uint32_t i = 0; i < 65536; i += 7) {
    float f = bf16_to_f32(uint16_t(i));
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), i);
    }
  }
}

TEST(Dequant, PlainTypes) {
  std::vector<uint16_t> halfs = {0x3C00, 0xC000, 0x3800};
  auto f = dequantize(TensorType::F16, std::as_bytes(std::span(halfs)), 3);
  EXPECT_EQ(f, (std::vector<float>{1.f, -2.f, 0.5f}));
  std::vector<uint16_t> b16 = {0x3F80, 0xC040};
  EXPECT_EQ(dequantize(TensorType::BF16, std::as_bytes(std::span(b16)), 2), (std::vector<float>{1.f, -3.f}));
  std::vector<int32_t> i32 = {-5, 7};
  EXPECT_EQ(dequantize(TensorType::I32, std::as_bytes(std::span(i32)), 2), (std::vector<float>{-5.f, 7.f}));
  std::vector<int64_t> i64 = {-9, 1 << 20};
  EXPECT_EQ(dequantize(TensorType::I64, std::as_bytes(std::span(i64)), 2), (std::vector<float>{-9.f, 1048576.f}));
  std::vector<double> f64 = {0.25, -8};
  EXPECT_EQ(dequantize(TensorType::F64, std::as_bytes(std::span(f64)), 2), (std::vector<float>{0.25f, -8.f}));
}

TEST(Dequant, SizeMismatchThrows) {
  std::vector<std::byte> b(34);
  EXPECT_THROW(dequantize(TensorType::Q8_0, b, 31), wgc::Error);  // not a whole block
  EXPECT_THROW(dequantize(TensorType::Q8_0, b, 64), wgc::Error);  // too few bytes
  EXPECT_THROW(dequantize(TensorType::F32, b, 4), wgc::Error);    // 16 != 34
  EXPECT_NO_THROW(dequantize(TensorType::Q8_0, b, 32));
}

TEST(Dequant, TypeTraits) {
  EXPECT_EQ(block_bytes(TensorType::Q4_0), 18u);
  EXPECT_EQ(block_bytes(TensorType::Q4_1), 20u);
  EXPECT_EQ(block_bytes(TensorType::Q5_0), 22u);
  EXPECT_EQ(block_bytes(TensorType::Q5_1), 24u);
  EXPECT_EQ(block_bytes(TensorType::Q8_0), 34u);
  EXPECT_EQ(block_bytes(TensorType::Q4_K), 144u);
  EXPECT_EQ(block_bytes(TensorType::Q5_K), 176u);
  EXPECT_EQ(block_bytes(TensorType::Q6_K), 210u);
  EXPECT_EQ(block_bytes(TensorType::Q8_K), 292u);
  EXPECT_EQ(block_size(TensorType::Q4_K), 256u);
  EXPECT_EQ(block_size(TensorType::BF16), 1u);
  EXPECT_EQ(*row_bytes(TensorType::Q4_0, 64), 36u);
  EXPECT_FALSE(row_bytes(TensorType::Q4_0, 48));
  EXPECT_EQ(*type_from_name("Q6_K"), TensorType::Q6_K);
  EXPECT_FALSE(type_from_ggml(16));  // IQ2_XXS
  std::vector<int64_t> huge = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_FALSE(tensor_bytes(TensorType::F32, huge, huge[0]));  // overflow
}

// Q4_0: 32 quants q in [0, 16): element j < 16 in the low nibble of qs[j], element j + 16 in its
// high nibble; value (q - 8) * d.
TEST(Dequant, Q4_0) {
  std::mt19937 rng(1);
  Block blk(18);
  float d = 0.375f;
  blk.f16(0, h(d));
  std::vector<int> q(32);
  for (auto& x : q) x = int(rng() % 16);
  q[0] = 0, q[1] = 15;
  for (int j = 0; j < 16; ++j) blk.u8(2 + j, uint8_t(q[j] | (q[j + 16] << 4)));
  std::vector<double> want(32);
  for (int j = 0; j < 32; ++j) want[j] = double(q[j] - 8) * d;
  expect_all(run(TensorType::Q4_0, blk), want, "Q4_0");
}

// Q4_1: as Q4_0 with value q * d + m.
TEST(Dequant, Q4_1) {
  std::mt19937 rng(2);
  Block blk(20);
  float d = 0.125f, m = -1.5f;
  blk.f16(0, h(d));
  blk.f16(2, h(m));
  std::vector<int> q(32);
  for (auto& x : q) x = int(rng() % 16);
  for (int j = 0; j < 16; ++j) blk.u8(4 + j, uint8_t(q[j] | (q[j + 16] << 4)));
  std::vector<double> want(32);
  for (int j = 0; j < 32; ++j) want[j] = q[j] * double(d) + m;
  expect_all(run(TensorType::Q4_1, blk), want, "Q4_1");
}

// Q5_0: 5-bit quants in [0, 32): low 4 bits as Q4_0, bit 4 of element j in bit j of the 32-bit qh;
// value (q - 16) * d.
TEST(Dequant, Q5_0) {
  std::mt19937 rng(3);
  Block blk(22);
  float d = -0.25f;
  blk.f16(0, h(d));
  std::vector<int> q(32);
  for (auto& x : q) x = int(rng() % 32);
  q[3] = 31, q[20] = 16, q[31] = 0;
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t(q[j] >> 4) << j;
  std::memcpy(&blk.b[2], &qh, 4);
  for (int j = 0; j < 16; ++j) blk.u8(6 + j, uint8_t((q[j] & 15) | ((q[j + 16] & 15) << 4)));
  std::vector<double> want(32);
  for (int j = 0; j < 32; ++j) want[j] = double(q[j] - 16) * d;
  expect_all(run(TensorType::Q5_0, blk), want, "Q5_0");
}

// Q5_1: as Q5_0 with value q * d + m.
TEST(Dequant, Q5_1) {
  std::mt19937 rng(4);
  Block blk(24);
  float d = 0.0625f, m = 0.75f;
  blk.f16(0, h(d));
  blk.f16(2, h(m));
  std::vector<int> q(32);
  for (auto& x : q) x = int(rng() % 32);
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t(q[j] >> 4) << j;
  std::memcpy(&blk.b[4], &qh, 4);
  for (int j = 0; j < 16; ++j) blk.u8(8 + j, uint8_t((q[j] & 15) | ((q[j + 16] & 15) << 4)));
  std::vector<double> want(32);
  for (int j = 0; j < 32; ++j) want[j] = q[j] * double(d) + m;
  expect_all(run(TensorType::Q5_1, blk), want, "Q5_1");
}

// Q8_0: 32 signed bytes; value q * d.
TEST(Dequant, Q8_0) {
  std::mt19937 rng(5);
  Block blk(34);
  float d = 0.01171875f;  // 3/256
  blk.f16(0, h(d));
  std::vector<int> q(32);
  for (auto& x : q) x = int(rng() % 255) - 127;
  q[0] = -128, q[1] = 127;
  for (int j = 0; j < 32; ++j) blk.u8(2 + j, uint8_t(int8_t(q[j])));
  std::vector<double> want(32);
  for (int j = 0; j < 32; ++j) want[j] = q[j] * double(d);
  expect_all(run(TensorType::Q8_0, blk), want, "Q8_0");
}

// Q8_0 quantization: round trip within half a step, and the largest magnitude hits +-127.
TEST(Dequant, Q8_0Quantize) {
  auto x = wgc::test::random_floats(96, 7, -3.f, 3.f);
  std::vector<std::byte> q(3 * 34);
  synth::quantize_row_q8_0(x, q);
  auto y = dequantize(TensorType::Q8_0, q, 96);
  for (size_t b = 0; b < 3; ++b) {
    uint16_t dh;
    std::memcpy(&dh, &q[b * 34], 2);
    float d = f16_to_f32(dh);
    int maxq = 0;
    for (int j = 0; j < 32; ++j) {
      // Half a step, plus the scale's rounding to f16 (relative 2^-11) times |q| <= 127.
      EXPECT_LE(std::fabs(y[b * 32 + j] - x[b * 32 + j]), d * (0.5f + 127 * 0x1p-11f) * 1.001f);
      maxq = std::max(maxq, std::abs(int(int8_t(std::to_integer<uint8_t>(q[b * 34 + 2 + j])))));
    }
    EXPECT_EQ(maxq, 127);
  }
}

// K-quant scales: 8 sub-blocks with a 6-bit scale and a 6-bit min each, 12 bytes: for s < 4,
// scale in the low 6 bits of byte s and min in the low 6 bits of byte s + 4; for s >= 4, the low 4
// bits of scale and min in the low/high nibble of byte s + 4, the top 2 bits of the scale in bits
// 6-7 of byte s - 4 and of the min in bits 6-7 of byte s.
void pack_k_scales(Block& blk, size_t at, const std::vector<int>& sc, const std::vector<int>& mn) {
  for (int s = 0; s < 8; ++s) {
    if (s < 4) {
      blk.or8(at + s, uint8_t(sc[s]));
      blk.or8(at + s + 4, uint8_t(mn[s]));
    } else {
      blk.or8(at + s + 4, uint8_t((sc[s] & 15) | ((mn[s] & 15) << 4)));
      blk.or8(at + s - 4, uint8_t((sc[s] >> 4) << 6));
      blk.or8(at + s, uint8_t((mn[s] >> 4) << 6));
    }
  }
}

// Q4_K: f16 d, f16 dmin, 12 scale bytes, 128 quant bytes: sub-blocks 2i and 2i+1 (32 elements
// each) share qs[32i .. 32i+31], 2i in the low nibbles; value d * scale_s * q - dmin * min_s.
TEST(Dequant, Q4_K) {
  std::mt19937 rng(6);
  Block blk(144);
  float d = 0.03125f, dmin = 0.0078125f;
  blk.f16(0, h(d));
  blk.f16(2, h(dmin));
  std::vector<int> sc(8), mn(8), q(256);
  for (int s = 0; s < 8; ++s) sc[s] = int(rng() % 64), mn[s] = int(rng() % 64);
  sc[0] = 63, mn[7] = 63, sc[5] = 48, mn[4] = 33;  // exercise the high bits
  for (auto& x : q) x = int(rng() % 16);
  pack_k_scales(blk, 4, sc, mn);
  for (int i = 0; i < 4; ++i)
    for (int l = 0; l < 32; ++l) blk.u8(16 + 32 * i + l, uint8_t(q[64 * i + l] | (q[64 * i + 32 + l] << 4)));
  std::vector<double> want(256);
  for (int j = 0; j < 256; ++j) want[j] = double(d) * sc[j / 32] * q[j] - double(dmin) * mn[j / 32];
  expect_all(run(TensorType::Q4_K, blk), want, "Q4_K");
}

// Q5_K: f16 d, f16 dmin, 12 scale bytes, 32 high-bit bytes, 128 low-nibble bytes: as Q4_K with a
// 5th bit, element l of sub-block s taking bit s of qh[l].
TEST(Dequant, Q5_K) {
  std::mt19937 rng(7);
  Block blk(176);
  float d = 0.015625f, dmin = 0.001953125f;
  blk.f16(0, h(d));
  blk.f16(2, h(dmin));
  std::vector<int> sc(8), mn(8), q(256);
  for (int s = 0; s < 8; ++s) sc[s] = int(rng() % 64), mn[s] = int(rng() % 64);
  for (auto& x : q) x = int(rng() % 32);
  q[255] = 31, q[0] = 31;
  pack_k_scales(blk, 4, sc, mn);
  for (int j = 0; j < 256; ++j) {
    int s = j / 32, l = j % 32;
    blk.or8(16 + l, uint8_t((q[j] >> 4) << s));
    blk.or8(48 + 32 * (s / 2) + l, uint8_t((q[j] & 15) << (s % 2 ? 4 : 0)));
  }
  std::vector<double> want(256);
  for (int j = 0; j < 256; ++j) want[j] = double(d) * sc[j / 32] * q[j] - double(dmin) * mn[j / 32];
  expect_all(run(TensorType::Q5_K, blk), want, "Q5_K");
}

// Q6_K: 128 low-nibble bytes ql, 64 high-bit bytes qh, 16 signed scales, f16 d. Per half (128
// elements, n = 0/1): elements l, l+32, l+64, l+96 (l < 32) take the low nibble of ql[64n+l],
// ql[64n+l+32], the high nibble of ql[64n+l], ql[64n+l+32], and bits 0-1, 2-3, 4-5, 6-7 of
// qh[32n+l]; sub-block of 16 elements k uses scale k; value d * scale * (q - 32).
TEST(Dequant, Q6_K) {
  std::mt19937 rng(8);
  Block blk(210);
  float d = 0.0009765625f;
  blk.f16(208, h(d));
  std::vector<int> sc(16), q(256);
  for (auto& s : sc) s = int(rng() % 256) - 128;
  sc[0] = -128, sc[15] = 127;
  for (auto& x : q) x = int(rng() % 64);
  q[0] = 0, q[255] = 63;
  for (int k = 0; k < 16; ++k) blk.u8(192 + k, uint8_t(int8_t(sc[k])));
  for (int j = 0; j < 256; ++j) {
    int n = j / 128, r = j % 128, group = r / 32, l = r % 32;
    size_t ql = size_t(64 * n + l + (group % 2 ? 32 : 0));
    blk.or8(ql, uint8_t((q[j] & 15) << (group >= 2 ? 4 : 0)));
    blk.or8(size_t(128 + 32 * n + l), uint8_t((q[j] >> 4) << (2 * group)));
  }
  std::vector<double> want(256);
  for (int j = 0; j < 256; ++j) want[j] = double(d) * sc[j / 16] * (q[j] - 32);
  expect_all(run(TensorType::Q6_K, blk), want, "Q6_K");
}

// Q8_K: f32 d, 256 signed bytes, 16 i16 block sums (not used for values); value d * q.
TEST(Dequant, Q8_K) {
  std::mt19937 rng(9);
  Block blk(292);
  float d = 0.0123f;  // any f32
  blk.f32(0, d);
  std::vector<int> q(256);
  for (auto& x : q) x = int(rng() % 256) - 128;
  for (int j = 0; j < 256; ++j) blk.u8(4 + j, uint8_t(int8_t(q[j])));
  for (int k = 0; k < 16; ++k) {
    int sum = 0;
    for (int j = 0; j < 16; ++j) sum += q[16 * k + j];
    blk.i16(260 + 2 * k, int16_t(sum));
  }
  std::vector<double> want(256);
  for (int j = 0; j < 256; ++j) want[j] = double(float(d * float(q[j])));
  expect_all(run(TensorType::Q8_K, blk), want, "Q8_K");
}

// Several blocks in a row go to consecutive outputs.
TEST(Dequant, ManyBlocks) {
  auto x = wgc::test::random_floats(32 * 5, 11);
  std::vector<std::byte> q(5 * 34);
  synth::quantize_row_q8_0(x, q);
  auto all = dequantize(TensorType::Q8_0, q, x.size());
  for (size_t b = 0; b < 5; ++b) {
    float one[32];
    dequantize_block_q8_0(&q[b * 34], one);
    for (int j = 0; j < 32; ++j) ASSERT_EQ(all[b * 32 + j], one[j]);
  }
}

// The real Q8_0 data of wgc-tiny-dict (written by llama.cpp): llama.cpp's quantizer gives d =
// max|x|/127, so every block with d != 0 has a quant of magnitude 127, and quantizing our
// dequantized values again reproduces the file's bytes exactly.
TEST(Dequant, Q8_0FixtureRequantizes) {
  auto path = wgc::test::models_dir() / "wgc-tiny-dict" / "wgc-tiny-dict-q8_0.gguf";
  WGC_REQUIRE_FILE(path);
  auto f = GgufFile::open(path);
  size_t n_q8 = 0;
  for (const auto& t : f.tensors()) {
    if (t.type != TensorType::Q8_0) continue;
    ++n_q8;
    auto bytes = f.tensor_data(t);
    auto y = dequantize(t.type, bytes, size_t(t.numel()));
    std::vector<std::byte> again(bytes.size());
    synth::quantize_row_q8_0(y, again);
    size_t blocks = bytes.size() / 34, mismatched = 0;
    for (size_t b = 0; b < blocks; ++b) {
      if (std::memcmp(&bytes[b * 34], &again[b * 34], 34) != 0) ++mismatched;
      uint16_t dh;
      std::memcpy(&dh, &bytes[b * 34], 2);
      if (dh == 0) continue;
      int maxq = 0;
      for (int j = 0; j < 32; ++j)
        maxq = std::max(maxq, std::abs(int(int8_t(std::to_integer<uint8_t>(bytes[b * 34 + 2 + j])))));
      ASSERT_EQ(maxq, 127) << t.name << " block " << b;
    }
    // d is rounded to f16 after computing 1/d from the f32 scale, so a rare value that sat on a
    // rounding boundary may re-quantize one step away; demand (almost) all blocks match.
    EXPECT_LE(mismatched, blocks / 100) << t.name;
  }
  EXPECT_EQ(n_q8, 29u);
}
