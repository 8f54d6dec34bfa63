// wgc synth-model and wgc bench-llm end to end on the tiny shape (SwiftShader: seconds): the file
// loads with the shape's config, the benchmark prints its table and writes valid JSON.
#include "llm/formats/model_file.h"
#include "llm/synth/synth_model.h"
#include "test_util.h"
#include "util/json.h"

#include <unistd.h>

#include <cstdio>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;

namespace {

// The tool's output (and its error output unless with_stderr is false); *status = its exit code.
std::string run_cli(const std::string& args, int* status, bool with_stderr = true) {
  auto r = test::run_cli(args);
  *status = r.rc;
  return with_stderr ? r.out + r.err : r.out;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("wgc-bench-llm-test-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(SynthModelCli, WritesALoadableFileAndRefusesToOverwrite) {
  WGC_REQUIRE_FILE(fs::path(WGC_CLI_PATH));
  TempDir dir;
  auto path = dir.path / "tiny.gguf";
  int status = -1;
  std::string out = run_cli("synth-model --shape tiny --type q4_0 --seed 3 --out " + path.string(), &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_TRUE(has(out, "wgc tiny Q4_0")) << out;
  ModelFile mf = open_model(path, {false, false});
  const auto& s = synth::find_shape("tiny");
  EXPECT_EQ(mf.config().hidden_size, s.hidden);
  EXPECT_EQ(mf.config().n_layers, s.layers);
  EXPECT_EQ(mf.config().vocab_size, s.vocab);
  EXPECT_EQ(mf.tensor("model.layers.0.self_attn.q_proj.weight").type, TensorType::Q4_0);

  out = run_cli("synth-model --shape tiny --type q4_0 --out " + path.string(), &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "exists")) << out;
  out = run_cli("synth-model --shape tiny --type q8_0 --force --out " + path.string(), &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(open_model(path, {false, false}).tensor("model.layers.0.self_attn.q_proj.weight").type, TensorType::Q8_0);

  out = run_cli("synth-model --shape nope --out " + (dir.path / "x.gguf").string(), &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "llama-3.1-8b")) << out;  // lists the known shapes
  out = run_cli("synth-model --shape tiny --type q5_k --out " + (dir.path / "x.gguf").string(), &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "q6_k")) << out;  // lists the known types
  out = run_cli("synth-model --list", &status);
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(has(out, "llama-3.2-1b")) << out;
}

TEST(BenchLlmCli, TableAndJson) {
  WGC_REQUIRE_FILE(fs::path(WGC_CLI_PATH));
  TempDir dir;
  for (const char* type : {"q8_0", "f16"}) {
    auto model = dir.path / (std::string("tiny-") + type + ".gguf");
    auto json_path = dir.path / (std::string("bench-") + type + ".json");
    int status = -1;
    std::string out =
        run_cli("synth-model --shape tiny --type " + std::string(type) + " --out " + model.string(), &status);
    ASSERT_EQ(status, 0) << out;
    // q8_0 on the GPU engine (SwiftShader here) measures the bandwidth; f16 on the CPU engine is
    // given one.
    const bool gpu = std::string(type) == "q8_0";
    std::string bw = gpu ? " --backend cpu-vulkan" : " --backend cpu --threads 2 --bandwidth 100";
    auto png = dir.path / (std::string("bench-") + type + ".png");
    out = run_cli("bench-llm --model " + model.string() + " -p 8 -n 4 -r 1 --json " + json_path.string() + " --png " +
                      png.string() + bw,
                  &status, false);
    ASSERT_EQ(status, 0) << out;
    for (const char* part : {"| model", " test ", "t/s", "GB/s", " pp8 |", " tg4 |", "| llama "})
      EXPECT_TRUE(has(out, part)) << "missing '" << part << "' in:\n" << out;
    EXPECT_TRUE(has(out, std::string(type) == "f16" ? "F16" : "Q8_0")) << out;

    EXPECT_GT(fs::file_size(png), 100u);
    auto v = json::parse_file(json_path);
    EXPECT_EQ(v["type"].as_string(), std::string(type) == "f16" ? "F16" : "Q8_0");
    EXPECT_GT(v["params"].as_int(), 0);
    EXPECT_GT(v["weight_bytes"].as_int(), 0);
    EXPECT_LE(v["bytes_per_token"].as_int(), v["weight_bytes"].as_int());
    EXPECT_EQ(v["repeats"].as_int(), 1);
    EXPECT_EQ(v["engine"].as_string(), gpu ? "gpu" : "cpu");
    EXPECT_EQ(v["threads"].as_int(), gpu ? 0 : 2);
    EXPECT_EQ(v["bandwidth_source"].as_string(), std::string(type) == "f16" ? "given" : "measured");
    EXPECT_GT(v["bandwidth_gbs"].as_double(), 0);
    const auto& rs = v["results"];
    ASSERT_EQ(rs.size(), 2u);
    EXPECT_EQ(rs[0]["test"].as_string(), "pp8");
    EXPECT_EQ(rs[0]["n_prompt"].as_int(), 8);
    EXPECT_TRUE(rs[0]["gbs"].is_null());
    EXPECT_EQ(rs[1]["test"].as_string(), "tg4");
    EXPECT_EQ(rs[1]["n_gen"].as_int(), 4);
    for (const auto& r : rs.items()) {
      EXPECT_EQ(r["tps"].size(), 1u);
      EXPECT_GT(r["tps_median"].as_double(), 0);
      EXPECT_GT(r["seconds"][0].as_double(), 0);
      EXPECT_NEAR(r["tps"][0].as_double() * r["seconds"][0].as_double(),
                  double(r["n_prompt"].as_int() + r["n_gen"].as_int()), 1e-6);
    }
    if (gpu) {
      EXPECT_GT(rs[1]["host_ms_per_token"].as_double(), 0);  // the CPU engine records nothing
    }
    EXPECT_EQ(rs[1]["host_ms_per_token"].is_null(), !gpu);
    EXPECT_TRUE(rs[0]["host_ms_per_token"].is_null());
    EXPECT_EQ(v["decode_ahead"].as_int(), 2);
    double gbs = rs[1]["gbs"].as_double();
    EXPECT_NEAR(gbs, double(v["bytes_per_token"].as_int()) * rs[1]["tps_median"].as_double() / 1e9, 1e-9 + gbs * 1e-6);
    EXPECT_NEAR(rs[1]["bandwidth_fraction"].as_double(), gbs / v["bandwidth_gbs"].as_double(), 1e-6);
  }
}

// The decode knobs and the per-kernel profile: a synchronous decode with another matvec schedule
// still runs, and the profile lists the step's kernels.
TEST(BenchLlmCli, KnobsAndProfile) {
  WGC_REQUIRE_FILE(fs::path(WGC_CLI_PATH));
  TempDir dir;
  auto model = dir.path / "tiny.gguf";
  int status = -1;
  std::string out = run_cli("synth-model --shape tiny --type q4_0 --out " + model.string(), &status);
  ASSERT_EQ(status, 0) << out;
  out =
      run_cli("bench-llm --model " + model.string() +
                  " -p 0 -n 3 -r 1 --bandwidth 0 --decode-ahead 1 --tuning mvq_wg=128,mvq_tpr=16,mvq_rows=3 --profile "
                  "--backend cpu-vulkan",
              &status, false);
  ASSERT_EQ(status, 0) << out;
  for (const char* part :
       {" tg3 |", "1 step(s) in flight", "kernel tuning: mvq_wg=128,mvq_tpr=16,mvq_rows=3", "| kernel", "embedding"})
    EXPECT_TRUE(has(out, part)) << "missing '" << part << "' in:\n" << out;
  out = run_cli("bench-llm --model " + model.string() + " -n 1 --decode-ahead 0", &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "--decode-ahead")) << out;
  out = run_cli("bench-llm --model " + model.string() + " -n 1 --tuning matvec_wg", &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "--tuning")) << out;
}

// wgc chart: a PNG from numbers, no overwrite without --force, clear errors.
TEST(ChartCli, WritesAPngAndRefusesToOverwrite) {
  WGC_REQUIRE_FILE(fs::path(WGC_CLI_PATH));
  TempDir dir;
  auto png = dir.path / "c.png";
  int status = -1;
  std::string args = "chart --out " + png.string() + " --categories a,b,c --series 'x=1,2,3' --series 'y=3,-,1'";
  std::string out = run_cli(args, &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_GT(fs::file_size(png), 100u);
  out = run_cli(args, &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "--force")) << out;
  out = run_cli(args + " --force", &status);
  EXPECT_EQ(status, 0) << out;
  out = run_cli("chart --out " + png.string() + " --force --categories a,b --series 'x=1'", &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "1 values for 2 categories")) << out;
  out = run_cli("chart --out " + png.string() + " --force --categories a --series 'x=one'", &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "'one' is not a number")) << out;
}

TEST(BenchLlmCli, ClearErrors) {
  WGC_REQUIRE_FILE(fs::path(WGC_CLI_PATH));
  int status = -1;
  std::string out = run_cli("bench-llm -p 8", &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "--model")) << out;
  out = run_cli("bench-llm --model /nonexistent.gguf -p 8 -n 0 --bandwidth 0", &status);
  EXPECT_NE(status, 0);
  EXPECT_TRUE(has(out, "nonexistent")) << out;
}
