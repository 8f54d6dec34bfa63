// The wgc tool's command line (CLI11): help and version, suggestions for unknown flags and commands,
// values that do not parse named by their flag, conflicting flags. No GPU needed: every case fails
// or prints before a device starts.
#include "test_util.h"
#include "util/json.h"

using wgc::test::has;
using wgc::test::run_cli;

namespace {

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(WGC_CLI_PATH)) GTEST_SKIP() << WGC_CLI_PATH << " not built";
  }
};

TEST_F(Cli, NoArgumentsPrintsTheCommandsAndFails) {
  auto r = run_cli("");
  EXPECT_EQ(r.rc, 2);
  for (const char* cmd : {"generate", "bench-llm", "inspect", "tokenize", "chart"})
    EXPECT_TRUE(has(r.err, cmd)) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(Cli, HelpListsEveryFlagWithItsDefault) {
  auto r = run_cli("generate --help");
  EXPECT_EQ(r.rc, 0) << r.err;
  for (const char* part : {"Usage: wgc generate", "--prompt", "-n,--n-predict INT=128", "--backend NAME=auto",
                           "--temp FLOAT", "temperature", "--stop TEXT", "--ctx,--ctx-size INT=0"})
    EXPECT_TRUE(has(r.out, part)) << "missing '" << part << "' in:\n" << r.out;
  auto h = run_cli("help generate");
  EXPECT_EQ(h.rc, 0);
  EXPECT_EQ(h.out, r.out);
  EXPECT_EQ(run_cli("generate -h").out, r.out);
  // Every command (as `wgc help` lists them) has help, and every flag of it a description.
  auto all = run_cli("help");
  EXPECT_EQ(all.rc, 0);
  std::vector<std::string> cmds;
  std::istringstream listing(all.out.substr(all.out.find("Subcommands:")));
  for (std::string line; std::getline(listing, line);)
    if (line.starts_with("  ")) cmds.push_back(line.substr(2, line.find(' ', 2) - 2));
  for (const char* cmd : {"info", "bench", "bench-llm", "sobel", "blur", "inspect", "tokenize", "detokenize",
                          "generate", "chat", "score", "synth-model", "chart"})
    EXPECT_NE(std::find(cmds.begin(), cmds.end(), cmd), cmds.end()) << cmd << " is not listed:\n" << all.out;
  for (const auto& cmd : cmds) {
    auto c = run_cli("help " + cmd);
    EXPECT_EQ(c.rc, 0) << cmd;
    EXPECT_TRUE(has(c.out, "Usage: wgc " + cmd)) << c.out;
    std::vector<std::string> lines;
    std::istringstream in(c.out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].starts_with("  -")) {  // "  --flag TYPE=default   description" (or on the next line)
        auto gap = lines[i].find("  ", 3);
        bool here = gap != std::string::npos && lines[i].find_first_not_of(' ', gap) != std::string::npos;
        bool next = i + 1 < lines.size() && lines[i + 1].starts_with("       ") &&
                    lines[i + 1].find_first_not_of(' ') != std::string::npos;
        EXPECT_TRUE(here || next) << cmd << ": a flag without a description: " << lines[i];
      }
  }
  auto unknown = run_cli("help generat");
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_TRUE(has(unknown.err, "did you mean generate?")) << unknown.err;
}

TEST_F(Cli, VersionNamesWgcDawnAndTheRevision) {
  auto r = run_cli("--version");
  EXPECT_EQ(r.rc, 0);
  EXPECT_TRUE(has(r.out, "wgc 0.")) << r.out;
  EXPECT_TRUE(has(r.out, "(git ")) << r.out;
  EXPECT_TRUE(has(r.out, "Dawn: ")) << r.out;
}

TEST_F(Cli, UnknownFlagsAndCommandsSuggestTheNearest) {
  auto r = run_cli("generate --promt hello");
  EXPECT_EQ(r.rc, 2);
  EXPECT_TRUE(has(r.err, "unknown flag --promt (did you mean --prompt?)")) << r.err;
  EXPECT_TRUE(has(r.err, "wgc generate --help")) << r.err;
  auto t = run_cli("generate --temprature 0.5 --prompt x");
  EXPECT_TRUE(has(t.err, "did you mean --temp")) << t.err;
  auto c = run_cli("genrate --prompt x");
  EXPECT_EQ(c.rc, 2);
  EXPECT_TRUE(has(c.err, "unknown command 'genrate' (did you mean generate?)")) << c.err;
  auto far = run_cli("info --zzzzzzzz");
  EXPECT_EQ(far.rc, 2);
  EXPECT_TRUE(has(far.err, "unknown flag --zzzzzzzz")) << far.err;
  EXPECT_FALSE(has(far.err, "did you mean")) << far.err;
  auto extra = run_cli("info extra");
  EXPECT_EQ(extra.rc, 2);
  EXPECT_TRUE(has(extra.err, "unexpected argument 'extra'")) << extra.err;
}

TEST_F(Cli, ValuesThatDoNotParseNameTheirFlag) {
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"generate --prompt x -n 1.5", "-n expects an integer, got '1.5'"},
      {"generate --prompt x -n 010x", "-n expects an integer, got '010x'"},
      {"generate --prompt x --temp 1,5", "--temp expects a number, got '1,5'"},
      {"generate --prompt x --temp nan", "--temp expects a finite number, got 'nan'"},
      {"generate --prompt x --top-p inf", "--top-p expects a finite number, got 'inf'"},
      {"generate --prompt x --seed -1", "--seed expects a non-negative integer, got '-1'"},
      {"generate --prompt x --seed 18446744073709551616", "--seed expects a non-negative integer from 0 to"},
      {"generate --prompt x --ctx 99999999999", "--ctx expects an integer from"},
      {"blur --sigma 1e39 a.png b.png", "--sigma expects a number from"},
      {"bench-llm --model m.gguf -p 8,x", "-p expects an integer, got 'x'"},
      {"generate --prompt x --backend metal", "--backend"},
      {"generate --prompt", "--prompt"},
  };
  for (const auto& c : cases) {
    auto r = run_cli(c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, c.message)) << c.args << ": missing '" << c.message << "' in:\n" << r.err;
    EXPECT_FALSE(has(r.err, "stod")) << r.err;
  }
  // --sizes takes the convolutions' presets too: a word is refused by the ops that take numbers.
  auto sizes = run_cli("bench --ops add --sizes abc");
  EXPECT_NE(sizes.rc, 0);
  EXPECT_TRUE(has(sizes.err, "--sizes: 'abc' is not a number")) << sizes.err;
}

// Values that parse but are out of range: the library's check (llm::validate) in the flags' names.
TEST_F(Cli, SamplingValuesOutOfRangeAreRefused) {
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"--top-p 1.5", "--top-p must be in (0, 1], got 1.5"},
      {"--top-p 0", "--top-p must be in (0, 1]"},
      {"--min-p -0.5", "--min-p must be in [0, 1], got -0.5"},
      {"--repeat-penalty 0", "--repeat-penalty must be > 0"},
      {"--repeat-last-n -5", "--repeat-last-n must be -1 (all tokens), 0 (off) or a token count, got -5"},
      {"-n -5", "-n must be -1 (until a stop or the end of the context) or a token count, got -5"},
      {"--stop ''", "--stop must not hold an empty string"},
      {"--ctx -1", "--ctx must be >= 0"},
      {"--temp 1e39", "--temp expects a number from"},
      {"--presence-penalty -inf", "--presence-penalty expects a finite number"},
  };
  for (const auto& c : cases)
    for (const char* cmd : {"generate --prompt x ", "chat "}) {
      auto r = run_cli(cmd + std::string(c.args));
      EXPECT_EQ(r.rc, 2) << cmd << c.args << "\n" << r.err;
      EXPECT_TRUE(has(r.err, c.message)) << cmd << c.args << ": missing '" << c.message << "' in:\n" << r.err;
    }
}

TEST_F(Cli, ConflictingAndMissingFlagsAreNamed) {
  auto both = run_cli("generate --prompt hi --tokens 1,2");
  EXPECT_EQ(both.rc, 2);
  EXPECT_TRUE(has(both.err, "--prompt and --tokens were both given")) << both.err;
  auto neither = run_cli("generate");
  EXPECT_EQ(neither.rc, 2);
  EXPECT_TRUE(has(neither.err, "give --prompt TEXT, -f FILE (- for stdin) or --tokens")) << neither.err;
  auto score = run_cli("score --prompt hi --tokens 1 --out x.npy");
  EXPECT_TRUE(has(score.err, "--prompt and --tokens were both given")) << score.err;
  auto in_out = run_cli("sobel only-one.png");
  EXPECT_EQ(in_out.rc, 2);
  EXPECT_TRUE(has(in_out.err, "OUT")) << in_out.err;
}

// One rule for files wgc writes: an existing file is refused (naming it, before any work) unless
// --force is given.
TEST_F(Cli, OutputFilesAreRefusedUnlessForced) {
  auto dir = wgc::test::temp_dir("cli_outputs");
  auto existing = dir / "existing.png";
  std::ofstream(existing) << "keep me";
  for (std::string args : {"bench-llm --model /nonexistent.gguf --json ", "bench-llm --model /nonexistent.gguf --png ",
                           "bench --quick --ops add --json ", "bench --quick --ops add --png ",
                           "score --tokens 1,2 --out ", "chart --categories a --series x=1 --out ",
                           "synth-model --shape tiny --out ", "sobel /nonexistent.png ", "blur /nonexistent.png "}) {
    auto r = run_cli(args + wgc::test::quote(existing.string()));
    EXPECT_EQ(r.rc, 1) << args << r.err;
    EXPECT_TRUE(has(r.err, existing.string() + " exists; give --force to overwrite it")) << args << r.err;
  }
  std::ifstream f(existing);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep me");
}

// --json - : the JSON alone on stdout (the table on stderr), versions without the table's marks.
TEST_F(Cli, BenchJsonOnStdoutIsPlainJson) {
  auto r = run_cli("bench --quick --ops add --json -");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto v = wgc::json::parse(r.out, "bench --json -");
  int defaults = 0;
  for (const auto& x : v["results"].items()) {
    EXPECT_EQ(x["version"].as_string().find('*'), std::string::npos) << x["version"].as_string();
    defaults += x["default"].as_bool();
  }
  EXPECT_EQ(defaults, 2);  // one version Auto runs at each of the two quick sizes
  EXPECT_TRUE(has(r.err, "*: the version Auto runs")) << r.err;
  EXPECT_TRUE(has(r.err, "*")) << r.err;
}

// WGC_BACKEND=cpu-vulkan and --backend cpu-vulkan give the CPU adapter (SwiftShader).
TEST_F(Cli, CpuVulkanBackendFromTheFlagAndTheEnvironment) {
  for (const char* args : {"info --json --backend cpu-vulkan", "info --json"}) {
    std::string env = std::string(args) == "info --json" ? "WGC_BACKEND=cpu-vulkan " : "";
    auto r = run_cli(args, "", env);
    ASSERT_EQ(r.rc, 0) << args << "\n" << r.err;
    EXPECT_TRUE(has(r.out, "\"adapter_type\":\"cpu\"")) << r.out;
  }
}

// WGC_DAWN_TOGGLES reaches Dawn (dump_shaders logs every compiled shader's SPIR-V to stderr); an
// unknown toggle name does not stop wgc.
TEST_F(Cli, DawnTogglesFromTheEnvironment) {
  const std::string args = "bench --ops gpu.chain-read --quick --versions rows-8k";
  auto dumped = run_cli(args, "", "WGC_DAWN_TOGGLES=dump_shaders,-no_such_toggle ");
  ASSERT_EQ(dumped.rc, 0) << dumped.err;
  EXPECT_TRUE(has(dumped.err, "[dawn]")) << dumped.err;
  EXPECT_TRUE(has(dumped.err, "OpEntryPoint")) << dumped.err;
  auto plain = run_cli(args);
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_FALSE(has(plain.err, "OpEntryPoint"));
}

}  // namespace
