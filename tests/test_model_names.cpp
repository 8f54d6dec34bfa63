// Models by name: `wgc list` shows the built-in model and what a temporary cache holds (sizes,
// type, architecture), --model NAME finds a pulled file by its name or stem, a model folder by its
// repository's name and the built-in model by its own; ambiguous names list the candidates;
// `wgc rm` empties the cache. No network: the cache is laid out here as `wgc pull` leaves it.
#include "llm/generate/default_model.h"
#include "llm/hub/hub.h"
#include "test_util.h"
#include "util/json.h"

#include <fstream>

namespace wgc {
namespace {

using test::has;
using test::quote;
using test::run_cli;
namespace fs = std::filesystem;

class ModelNames : public ::testing::Test {
 protected:
  void SetUp() override {
    builtin_ = llm::default_model_candidates().at(0);
    if (!fs::exists(builtin_)) GTEST_SKIP() << "the built-in model is not there";
    cache_ = test::temp_dir("cache_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(cache_ / "models");
    env_ = "WGC_CACHE=" + quote(cache_.string()) + " WGC_HF_ENDPOINT=http://127.0.0.1:9 ";
  }
  // A GGUF file pulled as owner/repo/file.
  fs::path put_file(const std::string& ref) {
    fs::path p = cache_ / "models" / ref;
    fs::create_directories(p.parent_path());
    fs::copy_file(builtin_, p, fs::copy_options::overwrite_existing);
    return p;
  }
  test::CliResult wgc(const std::string& args) { return run_cli(args, "", env_); }

  fs::path builtin_, cache_;
  std::string env_;
};

TEST_F(ModelNames, ListShowsTheCacheAndTheBuiltInModel) {
  put_file("someone/Tiny-GGUF/tiny-q8_0.gguf");
  // A model folder (config, weights) with the marker a completed folder pull writes.
  const fs::path fixture = test::fixtures_dir() / "tiny-llama2-f32";
  const bool folder = fs::exists(fixture / "model.safetensors");
  if (folder) {
    fs::path dir = cache_ / "models" / "hf-owner" / "tiny-llama2";
    fs::create_directories(dir);
    for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(fixture / f, dir / f);
    std::ofstream(dir / ".wgc-pulled.json")
        << R"({"repo": "hf-owner/tiny-llama2", "files": ["config.json", "model.safetensors"]})";
  }
  // An interrupted pull.
  std::ofstream(cache_ / "models" / "someone" / "Tiny-GGUF" / "big-f16.gguf.part") << "partial";

  auto r = wgc("list");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.out, "NAME")) << r.out;
  EXPECT_TRUE(has(r.out, "wgc-tiny-dict")) << r.out;
  EXPECT_TRUE(has(r.out, "built-in")) << r.out;
  EXPECT_TRUE(has(r.out, "someone/Tiny-GGUF/tiny-q8_0.gguf")) << r.out;
  EXPECT_TRUE(has(r.out, "interrupted pull")) << r.out;
  auto j = wgc("list --json");
  ASSERT_EQ(j.rc, 0) << j.err;
  auto doc = json::parse(j.out, "wgc list --json");
  std::map<std::string, const json::Value*> by_model;
  for (const auto& m : doc.items()) by_model[m["model"].as_string()] = &m;
  ASSERT_TRUE(by_model.count("someone/Tiny-GGUF/tiny-q8_0.gguf")) << j.out;
  const auto& gguf = *by_model["someone/Tiny-GGUF/tiny-q8_0.gguf"];
  EXPECT_EQ(gguf["name"].as_string(), "tiny-q8_0");
  EXPECT_EQ(gguf["type"].as_string(), "Q8_0");
  EXPECT_EQ(gguf["architecture"].as_string(), "llama");
  EXPECT_EQ(uint64_t(gguf["bytes"].as_int()), fs::file_size(builtin_));
  EXPECT_EQ((*by_model["built-in"])["name"].as_string(), "wgc-tiny-dict");
  EXPECT_FALSE((*by_model["someone/Tiny-GGUF/big-f16.gguf"])["complete"].as_bool());
  if (folder) {
    const auto& st = *by_model["hf-owner/tiny-llama2"];
    EXPECT_EQ(st["name"].as_string(), "tiny-llama2");
    EXPECT_EQ(st["type"].as_string(), "F32");
    EXPECT_EQ(uint64_t(st["bytes"].as_int()),
              fs::file_size(fixture / "config.json") + fs::file_size(fixture / "model.safetensors"));
  }
}

// --model NAME: a pulled file by its stem or file name, the built-in model by its names; the
// same model answers as by its path.
TEST_F(ModelNames, ModelFlagFindsNames) {
  fs::path pulled = put_file("someone/Tiny-GGUF/tiny-q8_0.gguf");
  auto by_path = wgc("generate --tokens 1,2,3 -n 2 --temp 0 --json -m " + quote(pulled.string()));
  ASSERT_EQ(by_path.rc, 0) << by_path.err;
  const std::string want = json::parse(by_path.out, "generate")["ids"].dump();
  for (const char* name : {"tiny-q8_0", "tiny-q8_0.gguf", "someone/Tiny-GGUF/tiny-q8_0.gguf"}) {
    auto r = wgc(std::string("generate --tokens 1,2,3 -n 2 --temp 0 --json -m ") + name);
    ASSERT_EQ(r.rc, 0) << name << "\n" << r.err;
    auto j = json::parse(r.out, "generate");
    EXPECT_EQ(j["model"].as_string(), pulled.string()) << name;
    EXPECT_EQ(j["ids"].dump(), want) << name;
  }
  // The built-in model by the id `wgc serve` gives it, and by its short name.
  for (const char* name : {"wgc-tiny-dict-q8_0", "wgc-tiny-dict"}) {
    auto r = wgc(std::string("tokenize --json -m ") + name + " hello");
    EXPECT_EQ(r.rc, 0) << name << "\n" << r.err;
    auto i = wgc(std::string("inspect -m ") + name);
    EXPECT_TRUE(has(i.out, "wgc-tiny-dict-q8_0.gguf")) << i.out << i.err;
  }
  // The same name in two repositories: both are listed, nothing runs.
  put_file("other/Tiny-GGUF/tiny-q8_0.gguf");
  auto two = wgc("generate --tokens 1 -n 1 -m tiny-q8_0");
  EXPECT_EQ(two.rc, 1);
  EXPECT_TRUE(has(two.err, "fits several pulled models")) << two.err;
  EXPECT_TRUE(has(two.err, "someone/Tiny-GGUF/tiny-q8_0.gguf") && has(two.err, "other/Tiny-GGUF/tiny-q8_0.gguf"))
      << two.err;
  // A name nothing has: said, with where to look.
  auto none = wgc("generate --tokens 1 -n 1 -m no-such-model");
  EXPECT_EQ(none.rc, 1);
  EXPECT_TRUE(has(none.err, "no pulled model of that name (`wgc list` shows them)")) << none.err;
}

TEST_F(ModelNames, RmRemovesFromTheCacheOnly) {
  fs::path a = put_file("someone/Tiny-GGUF/tiny-q8_0.gguf");
  fs::path b = put_file("someone/Tiny-GGUF/tiny-f16.gguf");
  put_file("other/Model-GGUF/model.gguf");
  std::ofstream(a.string() + ".part") << "partial";
  auto r = wgc("rm tiny-q8_0");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.err, "removed someone/Tiny-GGUF/tiny-q8_0.gguf")) << r.err;
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(fs::exists(a.string() + ".part"));
  EXPECT_TRUE(fs::exists(b));
  // A repository: its folder goes, and the owner's folder when it is left empty.
  EXPECT_EQ(wgc("rm other/Model-GGUF").rc, 0);
  EXPECT_FALSE(fs::exists(cache_ / "models" / "other"));
  // Every name is checked before anything is removed.
  auto bad = wgc("rm tiny-f16 no-such-model");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(has(bad.err, "no pulled model is named no-such-model")) << bad.err;
  EXPECT_TRUE(fs::exists(b));
  auto builtin = wgc("rm wgc-tiny-dict");
  EXPECT_EQ(builtin.rc, 1);
  EXPECT_TRUE(has(builtin.err, "is the built-in model")) << builtin.err;
  EXPECT_TRUE(fs::exists(builtin_));
  auto missing = wgc("rm someone/Nothing-Here");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_TRUE(has(missing.err, "is not in the cache")) << missing.err;
  EXPECT_EQ(wgc("rm").rc, 2);
  EXPECT_EQ(wgc("rm tiny-f16").rc, 0);
  EXPECT_FALSE(fs::exists(cache_ / "models" / "someone"));
  EXPECT_FALSE(has(wgc("list").out, "someone/"));
}

// Offline: the error names the host, the network, WGC_HF_ENDPOINT and --revision (port 9 of
// 127.0.0.1: nothing listens, the connection is refused at once).
TEST_F(ModelNames, PullOfflineSaysWhatToCheck) {
  auto r = wgc("pull someone/Tiny-GGUF/tiny-q8_0.gguf");
  EXPECT_EQ(r.rc, 1);
  for (const char* part :
       {"cannot connect to http://127.0.0.1:9", "network may be unreachable", "WGC_HF_ENDPOINT", "--revision"})
    EXPECT_TRUE(has(r.err, part)) << "missing '" << part << "' in:\n" << r.err;
}

}  // namespace
}  // namespace wgc
