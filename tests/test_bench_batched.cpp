// wgc bench-batched end to end on the built-in default model (the GPU engine on SwiftShader, and the
// CPU engine: seconds): the table has a row per count, the JSON every figure, bad flags a clear
// error.
#include "test_llm_util.h"
#include "util/json.h"

using namespace wgc;
namespace fs = std::filesystem;

TEST(BenchBatched, TableAndJsonPerCount) {
  const fs::path model = test::default_model();
  WGC_REQUIRE_FILE(model);
  for (const char* engine : {"--backend cpu-vulkan --kernel batched", "--backend cpu"}) {
    const bool cpu = std::string(engine) == "--backend cpu";
    const fs::path json = test::temp_dir("bench-batched") / (cpu ? "cpu.json" : "gpu.json");
    auto r = test::run_cli("bench-batched --model " + test::quote(model.string()) +
                           " --parallel 1,3 -p 5 -n 2 --block 4 --no-warmup --json " + test::quote(json.string()) +
                           " " + engine);
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("S_TG t/s"), std::string::npos) << r.out;
    auto doc = json::parse_file(json);
    EXPECT_EQ(doc["engine"].as_string(), cpu ? "cpu" : "gpu");
    const auto& rows = doc["results"].items();
    ASSERT_EQ(rows.size(), 2u);
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i]["parallel"].as_int(), i == 0 ? 1 : 3);
      EXPECT_EQ(rows[i]["n_prompt"].as_int(), 5);
      EXPECT_EQ(rows[i]["n_gen"].as_int(), 2);
      EXPECT_GT(rows[i]["pp_tps"].as_double(), 0);
      EXPECT_GT(rows[i]["tg_tps"].as_double(), 0);
    }
  }
  auto bad = test::run_cli("bench-batched --model " + test::quote(model.string()) + " --parallel 0");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("--parallel"), std::string::npos) << bad.err;
  auto bad_tuning = test::run_cli("bench-batched --model " + test::quote(model.string()) + " --tuning batched_kl");
  EXPECT_NE(bad_tuning.rc, 0);
  EXPECT_NE(bad_tuning.err.find("--tuning"), std::string::npos) << bad_tuning.err;
  auto bad_split = test::run_cli("bench-batched --model " + test::quote(model.string()) + " --tuning split=20");
  EXPECT_NE(bad_split.rc, 0);
  EXPECT_NE(bad_split.err.find("split expects"), std::string::npos) << bad_split.err;
  auto no_model = test::run_cli("bench-batched");
  EXPECT_NE(no_model.rc, 0);
  EXPECT_NE(no_model.err.find("--model"), std::string::npos) << no_model.err;
}

// --tuning with several sets: the first makes the table, each other one a line per count.
TEST(BenchBatched, SweepsTuningsOnOneModel) {
  const fs::path model = test::default_model();
  WGC_REQUIRE_FILE(model);
  auto r = test::run_cli("bench-batched --model " + test::quote(model.string()) +
                         " --backend cpu-vulkan --parallel 1,2 -p 3 -n 2 --block 4 --no-warmup --kernel batched-q8 "
                         "--tuning \"batched_kl=8,batched_tt=8;batched_kl=4,split=32\"");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("S_TG t/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tuning: batched_kl=8,batched_tt=8"), std::string::npos) << r.out;
  // One line per set after the first and count.
  // (Two sets: each compiles its own pipelines, the test's whole cost on SwiftShader.)
  for (const char* name : {"batched_kl=4,split=32 "}) {
    int lines = 0;
    for (size_t at = r.out.find(name); at != std::string::npos; at = r.out.find(name, at + 1)) ++lines;
    EXPECT_EQ(lines, 2) << name << "\n" << r.out;
  }
}

// --json -: the JSON alone on stdout, the table on stderr (every bench command's rule:
// cli/command.h's OutputFlags).
TEST(BenchBatched, JsonToStdout) {
  const fs::path model = test::default_model();
  WGC_REQUIRE_FILE(model);
  auto r = test::run_cli("bench-batched --model " + test::quote(model.string()) +
                         " --backend cpu --parallel 1 -p 3 -n 2 --block 4 --no-warmup --json -");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  auto doc = json::parse(r.out);
  EXPECT_EQ(doc["results"].items().size(), 1u) << r.out;
  EXPECT_NE(r.err.find("S_TG t/s"), std::string::npos) << r.err;
}

// --no-prefill: decode steps only (over positions never computed), no PP figures.
TEST(BenchBatched, NoPrefillMeasuresDecodeOnly) {
  const fs::path model = test::default_model();
  WGC_REQUIRE_FILE(model);
  auto r = test::run_cli("bench-batched --model " + test::quote(model.string()) +
                         " --backend cpu --parallel 2 -p 9 -n 3 --block 4 --no-warmup --no-prefill --json -");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  auto doc = json::parse(r.out);
  EXPECT_TRUE(doc["no_prefill"].as_bool());
  const auto& rows = doc["results"].items();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["pp_tps"].as_double(), 0);
  EXPECT_GT(rows[0]["tg_tps"].as_double(), 0);
  EXPECT_NE(r.err.find("--no-prefill: no PP"), std::string::npos) << r.err;
}
