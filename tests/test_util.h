// Shared by the tests: one GPU context per test binary, random data, fixture paths.
#pragma once

#include "cpu/compare.h"
#include "llm/formats/safetensors.h"
#include "wgc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace wgc::test {

// One device per test binary: creating one on SwiftShader costs more than most tests.
inline Context& ctx() {
  static Context c;
  return c;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// cpu::max_rel_error of same-length vectors (a length mismatch is an infinite error).
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  return cpu::max_rel_error(std::span<const float>(a), std::span<const float>(b));
}

// A strided output (rows written at a stride, gaps between): the written elements against the
// reference within `tol`, and every gap untouched — still NaN where the output was poisoned, or
// equal to `before` where the op accumulates into what was there (`kept_old`).
inline void expect_written_and_gaps(const std::vector<float>& got, const std::vector<float>& want,
                                    const std::vector<bool>& written, const std::vector<float>& before, bool kept_old,
                                    double tol, const std::string& what) {
  std::vector<float> gw, ww;
  size_t bad_gaps = 0;
  for (size_t i = 0; i < written.size(); ++i) {
    if (written[i]) {
      gw.push_back(got[i]);
      ww.push_back(want[i]);
    } else if (kept_old ? got[i] != before[i] : !std::isnan(got[i])) {
      ++bad_gaps;
    }
  }
  EXPECT_LE(rel_error(gw, ww), tol) << what;
  EXPECT_EQ(bad_gaps, 0u) << what;
}

inline std::filesystem::path env_dir(const char* var, const char* fallback) {
  const char* v = std::getenv(var);
  return v && *v ? std::filesystem::path(v) : std::filesystem::path(fallback);
}

// Median wall-clock milliseconds of reps calls of f (for the measurements run by hand).
template <class F>
double median_ms(F&& f, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// A scratch folder for this test process (removed when it exits), or a subfolder `sub` of it.
inline std::filesystem::path temp_dir(const std::string& sub = "") {
  struct Dir {
    std::filesystem::path p = std::filesystem::temp_directory_path() / ("wgc_test_" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(p); }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
    }
  };
  static Dir dir;
  if (sub.empty()) return dir.p;
  std::filesystem::create_directories(dir.p / sub);
  return dir.p / sub;
}

// ../shared/fixtures, or $WGC_FIXTURES.
inline std::filesystem::path fixtures_dir() { return env_dir("WGC_FIXTURES", WGC_FIXTURES_DEFAULT); }
// ../shared/models, or $WGC_MODELS.
inline std::filesystem::path models_dir() { return env_dir("WGC_MODELS", WGC_MODELS_DEFAULT); }

// Whether `text` holds `part` (for checking messages).
inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A tensor of a safetensors file (the fixtures' goldens) as values of T (its bytes copied);
// wgc::Error naming it when absent.
template <class T>
std::vector<T> tensor_values(const llm::SafetensorsFile& file, const std::string& name) {
  const auto* t = file.find(name);
  if (!t) throw Error("golden tensor missing: " + name);
  std::vector<T> v(t->data.size() / sizeof(T));
  std::memcpy(v.data(), t->data.data(), v.size() * sizeof(T));
  return v;
}

// The fixtures' golden tensor name of prompt i: "p<i>.<suffix>".
inline std::string prompt_key(int i, std::string_view suffix) {
  std::string k = "p";
  k += std::to_string(i);
  k += '.';
  k += suffix;
  return k;
}

// `s` quoted for a POSIX shell.
inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliResult {
  int rc = -1;
  std::string out, err;
};

// Runs the built `wgc` (WGC_CLI_PATH) with `args` (already shell-quoted), feeding `input` on stdin;
// `env` is put before the command ("WGC_BACKEND=cpu-vulkan ").
inline CliResult run_cli(const std::string& args, const std::string& input = "", const std::string& env = "") {
  static int n = 0;
  auto dir = std::filesystem::temp_directory_path() / ("wgc_test_cli_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string k = std::to_string(n++);
  auto in = dir / ("in" + k), out = dir / ("out" + k), err = dir / ("err" + k);
  std::ofstream(in) << input;
  std::string cmd = env + quote(WGC_CLI_PATH) + " " + args + " < " + quote(in.string()) + " > " + quote(out.string()) +
                    " 2> " + quote(err.string());
  int status = std::system(cmd.c_str());
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  };
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::error_code ec;
  std::filesystem::remove(in, ec);
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  return r;
}

}  // namespace wgc::test

// Skips the test, saying why, when a fixture file is absent.
#define WGC_REQUIRE_FILE(path)                                                               \
  do {                                                                                       \
    if (!std::filesystem::exists(path))                                                      \
      GTEST_SKIP() << "fixture not found: " << (path) << " (set WGC_FIXTURES / WGC_MODELS)"; \
  } while (0)
