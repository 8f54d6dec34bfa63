// The synthetic-model tools: the Q8_0/Q4_0/F16 quantizers (hand-checked blocks, bit-exactness with the project's Q8_0,
// round trips through the dequantizer), the counter-based random numbers, and synthetic models of real shapes (layout,
// parameter counts, metadata read by config_from_gguf / open_model / load_tokenizer).
#include "cpu/llm/dequant.h"
#include "llm/formats/gguf.h"
#include "llm/formats/gguf_writer.h"
#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"
#include "llm/synth/quantize.h"
#include "llm/synth/random.h"
#include "llm/synth/synth_model.h"
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "test_util.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <map>
#include <numbers>
#include <set>

using namespace wgc;
using namespace wgc::llm;
using namespace wgc::llm::synth;
namespace fs = std::filesystem;

namespace {

std::vector<std::byte> as_bytes_vec(const void* p, size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  return {b, b + n};
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  return as_bytes_vec(v.data(), v.size() * sizeof(T));
}

std::vector<std::byte> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return as_bytes_vec(c.data(), c.size());
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("wgc-synth-test-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

uint16_t f16_at(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

}  // namespace

// --- quantizers ---------------------------------------------------------------------------------

TEST(SynthQuantize, Q8_0HandChecked) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[size_t(j)] = float(j - 16);  // max |x| = 16 at j = 0
  std::vector<std::byte> q(34);
  quantize_row_q8_0(x, q);
  EXPECT_EQ(f16_at(q.data()), f32_to_f16(16.f / 127.f));
  auto qs = [&](int j) { return int(int8_t(uint8_t(q[size_t(2 + j)]))); };
  EXPECT_EQ(qs(0), -127);  // -16 * 127/16
  EXPECT_EQ(qs(16), 0);
  EXPECT_EQ(qs(17), 8);    // 7.9375 -> 8
  EXPECT_EQ(qs(15), -8);   // -7.9375 -> -8
  EXPECT_EQ(qs(18), 16);   // 15.875 -> 16
  EXPECT_EQ(qs(31), 119);  // 15 * 7.9375 = 119.06

  // d = 1: halves round away from zero (roundf), not to even.
  std::vector<float> y(32, 0.f);
  y[0] = 127.f;
  y[1] = 0.5f;
  y[2] = -0.5f;
  y[3] = 2.5f;
  y[4] = -2.5f;
  y[5] = 1.49f;
  quantize_row_q8_0(y, q);
  EXPECT_EQ(f16_at(q.data()), 0x3C00);  // 1.0
  EXPECT_EQ(int8_t(uint8_t(q[2])), 127);
  EXPECT_EQ(int8_t(uint8_t(q[3])), 1);
  EXPECT_EQ(int8_t(uint8_t(q[4])), -1);
  EXPECT_EQ(int8_t(uint8_t(q[5])), 3);
  EXPECT_EQ(int8_t(uint8_t(q[6])), -3);
  EXPECT_EQ(int8_t(uint8_t(q[7])), 1);

  // Every quarter step from -127 to 127 with d = 1: roundf's halves away from zero.
  for (int k0 = -508; k0 <= 508; k0 += 31) {
    std::vector<float> z(32);
    z[0] = 127.f;
    for (int j = 1; j < 32; ++j) z[size_t(j)] = std::clamp(float(k0 + j) / 4.f, -127.f, 127.f);
    quantize_row_q8_0(z, q);
    for (int j = 0; j < 32; ++j)
      ASSERT_EQ(int8_t(uint8_t(q[size_t(2 + j)])), std::lround(z[size_t(j)])) << z[size_t(j)];
  }

  std::vector<float> zero(32, 0.f);
  quantize_row_q8_0(zero, q);
  for (auto b : q) EXPECT_EQ(b, std::byte{0});
  EXPECT_THROW(quantize_row_q8_0(std::span(zero).first(31), std::span(q).first(34)), Error);
  EXPECT_THROW(quantize_row_q8_0(zero, std::span(q).first(33)), Error);
}

TEST(SynthQuantize, Q4_0HandChecked) {
  // The value of largest magnitude is negative: d = -8 / -8 = 1.
  std::vector<float> x(32, 0.f);
  x[5] = -8.f;
  x[0] = 7.f;     // 15.5 -> 15
  x[1] = 7.4f;    // 15.9 -> 15
  x[2] = -0.5f;   // 8.0 -> 8
  x[3] = -0.6f;   // 7.9 -> 7 (truncation)
  x[16] = 3.f;    // 11.5 -> 11, high nibble of byte 0
  x[17] = -7.9f;  // 0.6 -> 0
  std::vector<std::byte> q(18);
  quantize_row_q4_0(x, q);
  EXPECT_EQ(f16_at(q.data()), 0x3C00);
  auto nib = [&](int j) {
    return j < 16 ? int(uint8_t(q[size_t(2 + j)]) & 15) : int(uint8_t(q[size_t(2 + j - 16)]) >> 4);
  };
  EXPECT_EQ(nib(5), 0);
  EXPECT_EQ(nib(0), 15);
  EXPECT_EQ(nib(1), 15);
  EXPECT_EQ(nib(2), 8);
  EXPECT_EQ(nib(3), 7);
  EXPECT_EQ(nib(4), 8);  // zero -> 8
  EXPECT_EQ(nib(16), 11);
  EXPECT_EQ(nib(17), 0);
  EXPECT_EQ(uint8_t(q[2]), 15 | (11 << 4));

  // The largest magnitude positive: d = 8 / -8 = -1, so x = 8 -> 0 and x = -7 -> 15 (clipped 15.5).
  std::vector<float> y(32, 0.f);
  y[0] = 8.f;
  y[1] = -7.f;
  y[2] = -8.f;  // same magnitude, later: the first one (positive) wins
  quantize_row_q4_0(y, q);
  EXPECT_EQ(f16_at(q.data()), 0xBC00);  // -1.0
  EXPECT_EQ(nib(0), 0);
  EXPECT_EQ(nib(1), 15);
  EXPECT_EQ(nib(2), 15);  // 8 + 8.5 = 16.5 -> 16, clipped to 15

  std::vector<float> zero(32, 0.f);
  quantize_row_q4_0(zero, q);
  EXPECT_EQ(f16_at(q.data()), 0x8000);  // d = 0 / -8 = -0, as ggml writes it
  for (int j = 0; j < 16; ++j) EXPECT_EQ(uint8_t(q[size_t(2 + j)]), 0x88);
}

TEST(SynthQuantize, RoundTripsThroughTheDequantizer) {
  const size_t n = 32 * 257;
  auto x = test::random_floats(n, 7, -1.f, 1.f);
  for (size_t i = 0; i < n; i += 97) x[i] *= 40.f;  // uneven block scales
  for (size_t i = 64; i < 96; ++i) x[i] = 0.f;      // an all-zero block

  // Q8_0: error at most half a step per block.
  std::vector<std::byte> q8(n / 32 * 34);
  quantize_row_q8_0(x, q8);
  auto y8 = dequantize(TensorType::Q8_0, q8, n);
  for (size_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    float d = amax / 127.f, d16 = f16_to_f32(f32_to_f16(d));
    for (size_t j = 0; j < 32; ++j) {
      size_t i = b * 32 + j;
      ASSERT_LE(std::fabs(x[i] - y8[i]), 0.5f * d16 + 127.f * std::fabs(d - d16) + 1e-7f) << i;
    }
  }

  // Q4_0: at most half a step, except values on the far side of the extreme (clipped: one step).
  std::vector<std::byte> q4(n / 32 * 18);
  quantize_row_q4_0(x, q4);
  auto y4 = dequantize(TensorType::Q4_0, q4, n);
  size_t over_half = 0;
  for (size_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    float d = amax / 8.f, d16 = std::fabs(f16_to_f32(f32_to_f16(d)));
    for (size_t j = 0; j < 32; ++j) {
      size_t i = b * 32 + j;
      float e = std::fabs(x[i] - y4[i]);
      ASSERT_LE(e, d16 + 8.f * std::fabs(d - d16) + 1e-7f) << i;
      if (e > 0.5f * d16 + 8.f * std::fabs(d - d16) + 1e-7f) ++over_half;
    }
  }
  EXPECT_LT(over_half, n / 16);  // ~1/32 of uniform values lie past +7.5 steps

  // F16: round to nearest even; relative error <= 2^-11 for normal values.
  std::vector<std::byte> h(n * 2);
  quantize(TensorType::F16, x, h);
  auto yh = dequantize(TensorType::F16, h, n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(f16_at(h.data() + 2 * i), f32_to_f16(x[i]));
    if (std::fabs(x[i]) > 1e-4f) {
      ASSERT_LE(std::fabs(x[i] - yh[i]), std::fabs(x[i]) * 0x1p-11f) << i;
    }
  }
  // convert_row_f16 is f32_to_f16 over every exponent, subnormals, inf, NaN.
  std::vector<float> sweep;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4099) sweep.push_back(std::bit_cast<float>(uint32_t(u)));
  sweep.push_back(std::bit_cast<float>(0x7F800000u));
  sweep.push_back(std::bit_cast<float>(0xFF800000u));
  std::vector<std::byte> hs(sweep.size() * 2);
  convert_row_f16(sweep, hs);
  for (size_t i = 0; i < sweep.size(); ++i)
    ASSERT_EQ(f16_at(hs.data() + 2 * i), f32_to_f16(sweep[i])) << std::bit_cast<uint32_t>(sweep[i]);

  // BF16: the top 16 bits rounded to nearest even (written out here on the bits), exact back.
  std::vector<std::byte> bh(n * 2);
  quantize(TensorType::BF16, x, bh);
  auto yb = dequantize(TensorType::BF16, bh, n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = std::bit_cast<uint32_t>(x[i]);
    const uint16_t want = uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    ASSERT_EQ(f16_at(bh.data() + 2 * i), want) << i;
    ASSERT_EQ(std::bit_cast<uint32_t>(yb[i]), uint32_t(want) << 16) << i;
  }

  // F32 is a copy; other types are refused.
  std::vector<std::byte> f(n * 4);
  quantize(TensorType::F32, x, f);
  EXPECT_EQ(std::memcmp(f.data(), x.data(), f.size()), 0);
  EXPECT_FALSE(can_quantize(TensorType::Q5_K));
  EXPECT_THROW(quantize(TensorType::Q5_K, x, f), Error);
}

// The K-quants (wgc's simpler choice of scales, ggml's layouts) read back through the project's
// dequantizer within a step of their (sub-)block: Q4_K one 15th of a 32's range plus the 6-bit
// min's rounding, Q6_K one 32nd of a 16's largest magnitude plus the int8 scale's rounding (half
// a super-block step of the scale, times the 32 quants it can reach).
TEST(SynthQuantize, KQuantsRoundTripThroughTheDequantizer) {
  const size_t n = 256 * 9;
  auto x = test::random_floats(n, 9, -1.f, 1.f);
  for (size_t i = 0; i < n; i += 61) x[i] *= 20.f;  // uneven sub-block scales
  for (size_t i = 512; i < 768; ++i) x[i] = 0.f;    // an all-zero super-block
  std::vector<std::byte> q4(n / 256 * 144), q6(n / 256 * 210);
  quantize(TensorType::Q4_K, x, q4);
  quantize(TensorType::Q6_K, x, q6);
  auto y4 = dequantize(TensorType::Q4_K, q4, n), y6 = dequantize(TensorType::Q6_K, q6, n);
  double e4 = 0, e6 = 0, sum = 0;
  for (size_t sb = 0; sb < n / 256; ++sb) {
    float big = 0;  // the super-block's largest magnitude: Q6_K's scale step is big / 32 / 128
    for (size_t l = 0; l < 256; ++l) big = std::max(big, std::fabs(x[sb * 256 + l]));
    float range = 0;  // the super-block's largest sub-block range bounds the 6-bit steps
    for (size_t j = 0; j < 8; ++j) {
      float lo = 0, hi = 0;
      for (size_t l = 0; l < 32; ++l) {
        lo = std::min(lo, x[sb * 256 + 32 * j + l]);
        hi = std::max(hi, x[sb * 256 + 32 * j + l]);
      }
      range = std::max(range, hi - lo);
    }
    for (size_t j = 0; j < 8; ++j) {
      float lo = 0, hi = 0, amax = 0;
      for (size_t l = 0; l < 32; ++l) {
        lo = std::min(lo, x[sb * 256 + 32 * j + l]);
        hi = std::max(hi, x[sb * 256 + 32 * j + l]);
        amax = std::max(amax, std::fabs(x[sb * 256 + 32 * j + l]));
      }
      const float step4 = (hi - lo) / 15.f + range / 15.f / 63.f, min_err = range / 63.f;
      for (size_t l = 0; l < 32; ++l) {
        const size_t i = sb * 256 + 32 * j + l;
        ASSERT_LE(std::fabs(x[i] - y4[i]), step4 + min_err + 1e-6f) << "Q4_K " << i;
        ASSERT_LE(std::fabs(x[i] - y6[i]), amax / 32.f * 1.1f + 16.5f * big / 32.f / 128.f + 1e-6f) << "Q6_K " << i;
        e4 += std::fabs(x[i] - y4[i]);
        e6 += std::fabs(x[i] - y6[i]);
        sum += std::fabs(x[i]);
      }
    }
  }
  EXPECT_LT(e4 / sum, 0.2);  // a wrong layout would be near 1 (outliers widen half the sub-blocks)
  EXPECT_LT(e6 / sum, 0.05);
  for (size_t i = 512; i < 768; ++i) EXPECT_EQ(y4[i] + y6[i], 0.f);
}

// --- random numbers -----------------------------------------------------------------------------

TEST(SynthRandom, DeterministicBoundedNormalLike) {
  const uint64_t key = stream_key(42, 3);
  EXPECT_NE(key, stream_key(42, 4));
  EXPECT_NE(key, stream_key(43, 3));
  const size_t n = 1 << 20;
  std::vector<float> v(n);
  fill_normal(v, key, 0, 0.f, 0.02f);
  std::vector<float> part(100);
  fill_normal(part, key, 5000, 0.f, 0.02f);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(part[i], v[5000 + i]);
  double s = 0, ss = 0, mx = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    s += x;
    ss += double(x) * x;
    mx = std::max(mx, double(std::fabs(x)));
  }
  double mean = s / n, sd = std::sqrt(ss / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 1e-4);
  EXPECT_NEAR(sd, 0.02, 2e-4);
  EXPECT_LE(mx, 0.02 * 3.4642);
  EXPECT_GT(mx, 0.02 * 2.5);
}

// --- synthetic models ---------------------------------------------------------------------------

TEST(SynthModel, RealShapesHaveTheRealSizes) {
  struct Want {
    const char* name;
    int64_t params;  // Hugging Face parameter counts (+ rope_freqs, which llama.cpp adds)
    bool has_output;
  };
  for (Want want : {Want{"llama-3.2-1b", 1235814400 + 32, false}, Want{"llama-3.2-3b", 3212749824 + 64, false},
                    Want{"llama-3.1-8b", 8030261248 + 64, true}, Want{"qwen2.5-0.5b", 494032768, false}}) {
    const ModelShape& s = find_shape(want.name);
    SynthModel m(s, TensorType::F16);
    EXPECT_EQ(m.params(), want.params) << want.name;
    const auto& ts = m.writer().tensors();
    bool has_output = std::any_of(ts.begin(), ts.end(), [](auto& t) { return t.name == "output.weight"; });
    EXPECT_EQ(has_output, want.has_output) << want.name;
    for (const auto& t : ts) {
      bool matrix = t.ne.size() == 2;
      EXPECT_EQ(t.type, matrix ? TensorType::F16 : TensorType::F32) << t.name;
    }
    SynthModel q4(s, TensorType::Q4_0), q8(s, TensorType::Q8_0);
    EXPECT_LT(q4.file_bytes(), q8.file_bytes());
    EXPECT_LT(q8.file_bytes(), m.file_bytes());
  }
  // 8B in F16: 16.06 GB of tensors, as llama.cpp's file.
  SynthModel m8(find_shape("llama-3.1-8b"), TensorType::F16);
  EXPECT_NEAR(double(m8.file_bytes()) / 1e9, 16.07, 0.02);
  EXPECT_THROW(find_shape("llama-9"), Error);
  EXPECT_EQ(&find_shape("Llama-3.2-1B"), &find_shape("llama-3.2-1b"));
  EXPECT_THROW(parse_synth_type("q5_k"), Error);
  EXPECT_EQ(parse_synth_type("Q8_0"), TensorType::Q8_0);
  EXPECT_EQ(parse_synth_type("q4_k_m"), TensorType::Q4_K);
  EXPECT_THROW(SynthModel(find_shape("tiny"), TensorType::Q5_K), Error);
}

// --type q4_k is llama.cpp's Q4_K_M mix: Q6_K for the output projection (the embeddings when
// tied) and for attn_v / ffn_down of the first and last eighth of the layers and every third
// between (use_more_bits), Q4_K elsewhere; 8B's file is about llama.cpp's 4.92 GB.
TEST(SynthModel, Q4KIsLlamaCppsQ4KMMix) {
  SynthModel m(find_shape("llama-3.1-8b"), TensorType::Q4_K);
  std::map<std::string, TensorType> type;
  for (const auto& t : m.writer().tensors()) type[t.name] = t.type;
  EXPECT_EQ(type["output.weight"], TensorType::Q6_K);
  EXPECT_EQ(type["token_embd.weight"], TensorType::Q4_K);
  EXPECT_EQ(type["blk.0.attn_q.weight"], TensorType::Q4_K);
  for (int l : {0, 3, 6, 9, 28, 31}) {
    EXPECT_EQ(type["blk." + std::to_string(l) + ".attn_v.weight"], TensorType::Q6_K) << l;
    EXPECT_EQ(type["blk." + std::to_string(l) + ".ffn_down.weight"], TensorType::Q6_K) << l;
  }
  for (int l : {4, 5, 7, 8}) EXPECT_EQ(type["blk." + std::to_string(l) + ".attn_v.weight"], TensorType::Q4_K) << l;
  EXPECT_NEAR(double(m.file_bytes()) / 1e9, 4.92, 0.1);
  SynthModel tied(find_shape("llama-3.2-1b"), TensorType::Q4_K);
  for (const auto& t : tied.writer().tensors()) {
    if (t.name == "token_embd.weight") {
      EXPECT_EQ(t.type, TensorType::Q6_K);
    }
  }
  SynthModel q6(find_shape("llama-3.2-1b"), TensorType::Q6_K);
  for (const auto& t : q6.writer().tensors()) {
    if (t.ne.size() == 2) {
      EXPECT_EQ(t.type, TensorType::Q6_K) << t.name;
    }
  }
}

TEST(SynthModel, VocabulariesOfTheRealSize) {
  auto v = synth_vocab(find_shape("llama-3.2-1b"));
  ASSERT_EQ(v.tokens.size(), 128256u);
  EXPECT_EQ(v.types.size(), 128256u);
  EXPECT_EQ(v.merges.size(), 128000u - 256);
  EXPECT_EQ(v.tokens[0], "!");
  EXPECT_EQ(v.tokens[188], "\xC4\x80");  // byte 0 -> U+0100
  EXPECT_EQ(v.tokens[size_t(v.bos)], "<|begin_of_text|>");
  EXPECT_EQ(v.bos, 128000);
  EXPECT_EQ(v.eos, 128009);
  EXPECT_EQ(v.tokens[size_t(v.eos)], "<|eot_id|>");
  EXPECT_EQ(v.tokens.back(), "<|reserved_special_token_247|>");
  std::set<std::string> unique(v.tokens.begin(), v.tokens.end());
  EXPECT_EQ(unique.size(), v.tokens.size());
  auto q = synth_vocab(find_shape("qwen2.5-0.5b"));
  ASSERT_EQ(q.tokens.size(), 151936u);
  EXPECT_EQ(q.tokens[151643], "<|endoftext|>");
  EXPECT_EQ(q.tokens[151645], "<|im_end|>");
  EXPECT_EQ(q.eos, 151645);
  EXPECT_FALSE(q.add_bos);
}

TEST(SynthModel, RopeFactorsGiveTheHfLlama3Frequencies) {
  for (const char* name : {"llama-3.2-1b", "llama-3.1-8b"}) {
    const ModelShape& s = find_shape(name);
    auto f = llama3_rope_factors(s);
    ASSERT_EQ(f.size(), size_t(s.head_dim / 2));
    EXPECT_EQ(f.front(), 1.f);
    EXPECT_EQ(f.back(), float(s.rope_factor));
    for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
    // transformers' _compute_llama3_parameters, in double.
    const double lw = double(s.rope_original_context) / s.rope_low_freq;
    const double hw = double(s.rope_original_context) / s.rope_high_freq;
    for (size_t i = 0; i < f.size(); ++i) {
      double inv = 1.0 / std::pow(s.rope_theta, double(2 * i) / double(s.head_dim));
      double wl = 2 * std::numbers::pi / inv, want = inv;
      if (wl > lw) {
        want = inv / s.rope_factor;
      } else if (wl >= hw) {
        double sm = (double(s.rope_original_context) / wl - s.rope_low_freq) / (s.rope_high_freq - s.rope_low_freq);
        want = (1 - sm) * inv / s.rope_factor + sm * inv;
      }
      EXPECT_NEAR(inv / f[i], want, want * 2e-6) << name << " " << i;
    }
  }
  EXPECT_TRUE(llama3_rope_factors(find_shape("qwen2.5-0.5b")).empty());
}

TEST(SynthModel, TinyFileLoadsWithTheShapesConfig) {
  const ModelShape& s = find_shape("tiny");
  TempDir dir;
  for (TensorType type : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_0}) {
    SynthModel m(s, type, 5);
    auto bytes = m.to_bytes();
    EXPECT_EQ(bytes, SynthModel(s, type, 5).to_bytes());  // deterministic
    EXPECT_NE(bytes, SynthModel(s, type, 6).to_bytes());

    auto path = dir.path / ("tiny-" + std::string(to_string(type)) + ".gguf");
    SynthOptions opt;
    opt.seed = 5;
    opt.write.threads = 2;
    opt.write.chunk_bytes = 1000;
    opt.write.progress = false;
    write_synth_model(path, s, type, opt);
    EXPECT_EQ(read_file(path), bytes);  // streamed in chunks on threads == in memory
    try {
      write_synth_model(path, s, type, opt);
      FAIL() << "overwrote without force";
    } catch (const FileExistsError& e) {
      EXPECT_EQ(e.path, path);
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_file(path), bytes);  // the refused write left the file as it was
    opt.overwrite = Overwrite::Yes;
    opt.seed = 9;
    write_synth_model(path, s, type, opt);
    EXPECT_EQ(read_file(path), SynthModel(s, type, 9).to_bytes());

    ModelFile mf = open_model(path, {false, false});
    const ModelConfig& c = mf.config();
    EXPECT_EQ(c.architecture, Architecture::Llama);
    EXPECT_EQ(c.vocab_size, s.vocab);
    EXPECT_EQ(c.hidden_size, s.hidden);
    EXPECT_EQ(c.n_layers, s.layers);
    EXPECT_EQ(c.n_heads, s.heads);
    EXPECT_EQ(c.n_kv_heads, s.kv_heads);
    EXPECT_EQ(c.head_dim, s.head_dim);
    EXPECT_EQ(c.ffn_size, s.ffn);
    EXPECT_EQ(c.rope_theta, s.rope_theta);
    EXPECT_EQ(c.max_position_embeddings, s.context);
    EXPECT_EQ(c.tie_word_embeddings, s.tied);
    EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Llama3);
    EXPECT_EQ(c.rope_freq_factors, llama3_rope_factors(s));
    EXPECT_EQ(c.bos_token_id, s.vocab - 16);
    EXPECT_TRUE(c.notes.empty());
    EXPECT_EQ(mf.tensor("model.layers.1.mlp.down_proj.weight").type, type);
    EXPECT_EQ(mf.tensor("lm_head.weight").type, type);
    EXPECT_EQ(mf.tensor("model.norm.weight").type, TensorType::F32);
    // Values: finite, of the intended scale (norms near 1).
    auto w = to_f32(mf.tensor("model.layers.0.mlp.gate_proj.weight"));
    double ss = 0;
    for (float x : w) {
      ASSERT_TRUE(std::isfinite(x));
      ss += double(x) * x;
    }
    EXPECT_NEAR(std::sqrt(ss / double(w.size())), 0.02, 0.003);
    for (float x : to_f32(mf.tensor("model.layers.0.input_layernorm.weight"))) ASSERT_NEAR(x, 1.f, 0.07f);
    EXPECT_EQ(mf.gguf()->get_string("general.architecture"), "llama");
    EXPECT_EQ(mf.gguf()->get_u32("general.file_type"), llama_file_type(type));
    EXPECT_EQ(mf.gguf()->get_u64("wgc.synthetic.seed"), 9u);

    // The tokenizer loads and round-trips text.
    Tokenizer tok = load_tokenizer(path);
    EXPECT_EQ(tok.vocab_size(), size_t(s.vocab));
    std::string text = "Hello, world! 123 ünïcödé\n";
    auto ids = tok.encode(text);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], s.vocab - 16);  // BOS
    EXPECT_EQ(tok.decode(ids, true), text);
    EXPECT_EQ(tok.encode("!!!!", false), (std::vector<int32_t>{256, 256}));  // the first merge is "! !"
  }
}

TEST(SynthModel, QwenConfigFromGguf) {
  // The real shape with one layer and a small vocabulary (the metadata keys are the same).
  ModelShape s = find_shape("qwen2.5-0.5b");
  s.layers = 1;
  s.vocab = 1024;
  SynthModel m(s, TensorType::Q8_0);
  auto bytes = m.to_bytes();
  GgufFile f = GgufFile::parse(bytes, "qwen");
  ModelConfig c = config_from_gguf(f);
  EXPECT_EQ(c.architecture, Architecture::Qwen2);
  EXPECT_EQ(c.vocab_size, 1024);
  EXPECT_EQ(c.hidden_size, 896);
  EXPECT_EQ(c.n_layers, 1);
  EXPECT_EQ(c.n_heads, 14);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.ffn_size, 4864);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_NEAR(c.rms_norm_eps, 1e-6, 1e-12);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_TRUE(c.rope_freq_factors.empty());
  EXPECT_EQ(f.find_tensor("blk.0.attn_k.bias")->ne, std::vector<int64_t>{128});
  EXPECT_EQ(f.find_tensor("blk.0.attn_k.bias")->type, TensorType::F32);
  auto spec = spec_from_gguf(f);
  EXPECT_EQ(spec.vocab.size(), 1024u);
  EXPECT_EQ(spec.vocab[1024 - 16], "<|endoftext|>");
}
