// wgc bench-batched end to end on the built-in default model (the GPU engine on SwiftShader, and the
// CPU engine: seconds): the table has a row per count, the JSON every figure, bad flags a clear
// error.
#include "llm/generate/default_model.h"
#include "test_util.h"
#include "util/json.h"

using namespace wgc;
namespace fs = std::filesystem;

TEST(BenchBatched, TableAndJsonPerCount) {
  const fs::path model = fs::path(WGC_SOURCE_DIR) / "models" / llm::kDefaultModelFile;
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
  auto no_model = test::run_cli("bench-batched");
  EXPECT_NE(no_model.rc, 0);
  EXPECT_NE(no_model.err.find("--model"), std::string::npos) << no_model.err;
}
