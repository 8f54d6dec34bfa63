// Text on the command line reaches each command byte for byte (CLI11 read "[abc]" as a list and
// dropped the brackets); llama.cpp's spellings of flags work or say what wgc does instead; typo
// hints prefer long flags. The built-in model runs on the CPU engine here (auto on SwiftShader).
#include "io/npy.h"
#include "llm/generate/default_model.h"
#include "test_util.h"
#include "util/json.h"

#include <csignal>
#include <fstream>
#include <sstream>

namespace wgc {
namespace {

using test::has;
using test::quote;
using test::run_cli;
namespace fs = std::filesystem;

// Texts CLI11 or a shell could change: brackets (CLI11's list syntax), commas, '=', braces, quotes,
// leading and trailing spaces, a line break, UTF-8, a leading dash after a space.
const std::vector<std::string>& tricky() {
  static const std::vector<std::string> t = {
      "[abc]",      "[INST] hi [/INST]", "[a,b,c]", "a,b",    "x=y",    "{x}", "\"q\" 'r'", "  lead and trail  ",
      "two\nlines", "日本語 🚀",          "[]",      "- item", "[1,2]=3"};
  return t;
}

// What the tokenizer gives for `text` read from stdin: no command-line parser between.
std::string ids_from_stdin(const std::string& text) {
  auto r = run_cli("tokenize -", text);
  EXPECT_EQ(r.rc, 0) << r.err;
  return r.out;
}

bool builtin_present() { return fs::exists(llm::default_model_candidates().at(0)); }

TEST(CliText, TokenizeTakesEveryArgumentAsWritten) {
  if (!builtin_present()) GTEST_SKIP() << "the built-in model is not there";
  for (const auto& text : tricky()) {
    const std::string want = ids_from_stdin(text);
    auto positional = run_cli("tokenize " + quote(text));
    EXPECT_EQ(positional.out, want) << "TEXT " << text << "\n" << positional.err;
    auto flag = run_cli("tokenize -p " + quote(text));
    EXPECT_EQ(flag.out, want) << "-p " << text << "\n" << flag.err;
    auto after_dashes = run_cli("tokenize -- " + quote(text));
    EXPECT_EQ(after_dashes.out, want) << "-- " << text << "\n" << after_dashes.err;
  }
  // Several words are joined by spaces; after --, words that look like flags are text too.
  EXPECT_EQ(run_cli("tokenize '[a' 'b]'").out, ids_from_stdin("[a b]"));
  EXPECT_EQ(run_cli("tokenize -- --json -x").out, ids_from_stdin("--json -x"));
  auto flag_like = run_cli("tokenize -x");
  EXPECT_EQ(flag_like.rc, 2);
  EXPECT_TRUE(has(flag_like.err, "unknown flag -x")) << flag_like.err;
  EXPECT_TRUE(has(flag_like.err, "after --")) << flag_like.err;
  auto both = run_cli("tokenize -p a b");
  EXPECT_EQ(both.rc, 2);
  EXPECT_TRUE(has(both.err, "not both")) << both.err;
}

TEST(CliText, DetokenizeReadsJsonArraysAndNamesBadIds) {
  if (!builtin_present()) GTEST_SKIP() << "the built-in model is not there";
  auto want = run_cli("detokenize 60 379 68");
  ASSERT_EQ(want.rc, 0) << want.err;
  EXPECT_EQ(run_cli("detokenize '[60,379,68]'").out, want.out);
  EXPECT_EQ(run_cli("detokenize '[60, 379, 68]'").out, want.out);
  EXPECT_EQ(run_cli("detokenize 60,379,68").out, want.out);
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"detokenize ''", "no token ids given"},
      {"detokenize '[]'", "no token ids given"},
      {"detokenize 99999999999999999999", "token id 99999999999999999999 is out of range (0 to 2147483647)"},
      {"detokenize -- -5", "token id -5 is out of range"},
      {"detokenize 1x", "'1x' is not a token id"},
  };
  for (const auto& c : cases) {
    auto r = run_cli(c.args, "");
    EXPECT_EQ(r.rc, 1) << c.args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, c.message)) << c.args << ": missing '" << c.message << "' in:\n" << r.err;
    EXPECT_FALSE(has(r.err, "stoll")) << r.err;
  }
}

// The prompt generate runs is the text given: its ids are the tokenizer's ids of the same bytes.
TEST(CliText, GenerateScoreAndPerplexityGetTheTextAsWritten) {
  if (!builtin_present()) GTEST_SKIP() << "the built-in model is not there";
  for (const std::string text : {"[INST] hi [/INST]", "[a,b]", "x=[y]"}) {
    auto want = json::parse(run_cli("tokenize --json -", text).out, "tokenize --json");
    auto g = run_cli("generate --prompt " + quote(text) + " -n 1 --temp 0 --json");
    ASSERT_EQ(g.rc, 0) << g.err;
    EXPECT_EQ(json::parse(g.out, "generate --json")["prompt_ids"].dump(), want.dump()) << text;
    auto p = run_cli("generate -p " + quote(text) + " -n 1 --temp 0 --json");
    EXPECT_EQ(json::parse(p.out, "generate --json")["prompt_ids"].dump(), want.dump()) << text;
    // score writes one row of logits per token of the text.
    fs::path out = test::temp_dir() / "score.npy";
    auto s = run_cli("score -p " + quote(text) + " --out " + quote(out.string()) + " --force");
    ASSERT_EQ(s.rc, 0) << s.err;
    EXPECT_EQ(npy::read(out).shape.at(0), int64_t(want.size())) << text;
    // perplexity counts the tokens of the text it was given.
    auto ppl = run_cli("perplexity -p " + quote(text) + " -c 4 --json");
    ASSERT_EQ(ppl.rc, 0) << ppl.err;
    EXPECT_EQ(json::parse(ppl.out, "perplexity --json")["tokens"].as_int(), int64_t(want.size())) << text;
  }
  // A stop string in brackets stops before itself.
  auto full = run_cli("generate --prompt 'The moon' -n 6 --temp 0 --json");
  ASSERT_EQ(full.rc, 0) << full.err;
  std::string text = json::parse(full.out, "generate --json")["text"].as_string();
  ASSERT_GE(text.size(), 4u);
  std::string stop = "[" + text.substr(2, 2) + "]";  // not in the text: nothing stops
  auto g = run_cli("generate --prompt 'The moon' -n 6 --temp 0 --json --stop " + quote(stop));
  EXPECT_EQ(json::parse(g.out, "generate --json")["text"].as_string(), text) << stop;
}

// chat's system prompt is the text given: the built-in model has no chat template, so the
// conversation is plain text (ChatSession: the system prompt, a line end, the message), whose
// tokens --timings counts.
TEST(CliText, ChatSystemPromptAsWritten) {
  if (!builtin_present()) GTEST_SKIP() << "the built-in model is not there";
  auto count = [](const std::string& system) {
    auto r = run_cli("chat --timings --temp 0 -n 1 --system " + quote(system), "Hi\n/exit\n");
    EXPECT_EQ(r.rc, 0) << r.err;
    auto at = r.err.find("prompt eval");
    EXPECT_NE(at, std::string::npos) << r.err;
    auto slash = r.err.find('/', at);
    return std::stoi(r.err.substr(slash + 1));
  };
  auto tokens = [](const std::string& text) {
    auto r = run_cli("tokenize --json -", text);
    return int(json::parse(r.out, "tokenize").size());
  };
  for (const std::string system : {"[a,b]", "[INST] be brief [/INST]", "x"})
    EXPECT_EQ(count(system), tokens(system + "\nHi")) << system;
}

// File names are free text too: classify opens "[1,2].png", not "1" and "2.png".
TEST(CliText, ImageFileNamesInBrackets) {
  fs::path model = test::fixtures_dir() / "mobilenet_v2_035" / "mobilenet_v2_035.onnx";
  WGC_REQUIRE_FILE(model);
  fs::path img = test::temp_dir("brackets") / "[1,2].png";
  fs::copy_file(fs::path(WGC_SOURCE_DIR) / "docs" / "images" / "hills.png", img, fs::copy_options::overwrite_existing);
  auto r = run_cli("classify --device cpu --top 1 --json -m " + quote(model.string()) + " " + quote(img.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = json::parse(r.out, "classify --json");
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["image"].as_string(), img.string());
  EXPECT_EQ(j[0]["top"].size(), 1u);
  EXPECT_GT(j[0]["top"][0]["score"].as_double(), 0.0);
}

// llama.cpp's spellings: -c/--ctx-size, -t/--threads, -m everywhere, -p on score and tokenize,
// -ngl (not needed, said so; 0: the CPU engine), -np; help names wgc's own first.
TEST(CliText, LlamaCppFlagSpellings) {
  if (!builtin_present()) GTEST_SKIP() << "the built-in model is not there";
  for (const char* ctx : {"-c 8", "--ctx-size 8", "--ctx 8", "-ctx-size 8"}) {
    auto r = run_cli(std::string("generate --prompt 'The moon' --temp 0 -n 100 --ignore-eos --json ") + ctx);
    ASSERT_EQ(r.rc, 0) << ctx << "\n" << r.err;
    EXPECT_EQ(json::parse(r.out, "generate")["stop"].as_string(), "context") << ctx;
    EXPECT_TRUE(has(r.err, "--ctx (-c)")) << "the context-full warning names the flag:\n" << r.err;
  }
  for (const char* t : {"-t 1", "--threads 1"}) {
    auto r = run_cli(std::string("generate --backend cpu -p x -n 1 -v ") + t);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(has(r.err, "1 threads")) << t << "\n" << r.err;
  }
  auto bad_threads = run_cli("generate -p x -t -1");
  EXPECT_EQ(bad_threads.rc, 2);
  // -temp is llama.cpp's one-dash --temp, not -t "emp".
  auto temp = run_cli("generate -p x -n 1 -temp 0 --json");
  EXPECT_EQ(temp.rc, 0) << temp.err;
  EXPECT_TRUE(has(temp.out, "\"sampling\":\"greedy")) << temp.out;
  auto ngl = run_cli("generate -p x -n 1 -ngl 99");
  EXPECT_EQ(ngl.rc, 0) << ngl.err;
  EXPECT_TRUE(has(ngl.err, "-ngl is not needed: wgc runs every layer on the GPU")) << ngl.err;
  auto ngl0 = run_cli("generate -p x -n 1 -ngl 0 -v");
  EXPECT_EQ(ngl0.rc, 0) << ngl0.err;
  EXPECT_TRUE(has(ngl0.err, "-ngl 0: the CPU engine (wgc's spelling: --backend cpu)")) << ngl0.err;
  EXPECT_TRUE(has(ngl0.err, "on CPU engine")) << ngl0.err;
  EXPECT_TRUE(has(run_cli("serve -np 0").err, "--parallel expects an integer in [1, 1024], got 0"));
  // -m on inspect; -p on tokenize and score (above).
  auto inspect = run_cli("inspect -m " + quote(llm::default_model_candidates().at(0).string()));
  EXPECT_EQ(inspect.rc, 0) << inspect.err;
  EXPECT_TRUE(has(inspect.out, "architecture")) << inspect.out;
  auto help = run_cli("help generate");
  EXPECT_TRUE(has(help.out, "-c,--ctx,--ctx-size INT=0")) << help.out;
  EXPECT_TRUE(has(help.out, "llama.cpp's spellings")) << help.out;
  EXPECT_TRUE(has(help.out, "-t,--threads INT=0")) << help.out;
}

// Typo hints: a long flag rather than another letter.
TEST(CliText, TypoHintsPreferLongFlags) {
  auto promt = run_cli("generate --promt x");
  EXPECT_TRUE(has(promt.err, "unknown flag --promt (did you mean --prompt?)")) << promt.err;
  auto seeed = run_cli("generate -seeed 1 -p x");
  EXPECT_TRUE(has(seeed.err, "did you mean --seed?")) << seeed.err;
  auto letter = run_cli("generate -x -p x");
  EXPECT_TRUE(has(letter.err, "unknown flag -x")) << letter.err;
  EXPECT_FALSE(has(letter.err, "did you mean -")) << letter.err;  // not "-h"
  auto dashes = run_cli("detokenize --");
  EXPECT_FALSE(has(dashes.err, "did you mean -h")) << dashes.err;
}

// One line of at most 80 columns when auto picks the CPU engine; the reason with --verbose.
TEST(CliText, CpuEngineNoticeFitsOneLine) {
  if (!builtin_present()) GTEST_SKIP() << "the built-in model is not there";
  auto r = run_cli("generate -p x -n 1");
  ASSERT_EQ(r.rc, 0) << r.err;
  if (!has(r.err, "CPU engine")) GTEST_SKIP() << "auto chose the GPU engine here";
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (has(line, "CPU engine")) {
      EXPECT_LE(line.size(), 80u) << line;
    }
  }
  auto v = run_cli("generate -p x -n 1 -v");
  EXPECT_TRUE(has(v.err, "--backend gpu or cpu-vulkan keeps the GPU engine")) << v.err;
}

// generate: --echo prints the prompt first; the text ends with a line end; Ctrl-C still prints
// the timings (and the exit status says it was interrupted).
TEST(CliText, GenerateEchoNewlineAndInterrupt) {
  if (!builtin_present()) GTEST_SKIP() << "the built-in model is not there";
  auto plain = run_cli("generate -p 'The moon' -n 4 --temp 0 -q");
  auto echo = run_cli("generate -p 'The moon' -n 4 --temp 0 -q --echo");
  ASSERT_EQ(echo.rc, 0) << echo.err;
  EXPECT_EQ(echo.out, "The moon" + plain.out);
  EXPECT_TRUE(plain.out.ends_with("\n")) << plain.out;
  // A real SIGINT once the text streams (greedy, no end): the timings and the stop reason follow.
  fs::path out = test::temp_dir() / "gen.out", err = test::temp_dir() / "gen.err";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGINT, SIG_DFL);  // as from a terminal, not a script's `cmd &` (SIGINT ignored)
    std::freopen(out.c_str(), "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    ::execl(WGC_CLI_PATH, "wgc", "generate", "-p", "The moon", "-n", "-1", "--ignore-eos", "--temp", "0", "--ctx",
            "4096", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto size = [](const fs::path& p) {
    std::error_code ec;
    auto n = fs::file_size(p, ec);
    return ec ? uintmax_t(0) : n;
  };
  for (int i = 0; i < 600 && size(out) < 20; ++i) ::usleep(100000);  // some text is out
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by a signal: the timings were lost";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::ifstream e(err);
  std::string text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(text, "generation  =")) << text;
  EXPECT_TRUE(has(text, "stopped: cancelled")) << text;
}

// chat's /help lists the chat commands (it is not sent to the model); a mistyped command is
// not sent either.
TEST(CliText, ChatHelpListsItsCommands) {
  if (!builtin_present()) GTEST_SKIP() << "the built-in model is not there";
  auto r = run_cli("chat --timings -n 1", "/help\n/exti\n/exit\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* part : {"/reset", "/exit", "Ctrl-C", "unknown command /exti"})
    EXPECT_TRUE(has(r.err, part)) << "missing '" << part << "' in:\n" << r.err;
  EXPECT_FALSE(has(r.err, "prompt eval")) << "a command reached the model:\n" << r.err;
}

// bench-cnn picks its device as classify and infer do (auto), and says what it is doing with an
// estimate once the warm-up run is timed.
TEST(CliText, BenchCnnDefaultDeviceAndProgress) {
  fs::path model = test::fixtures_dir() / "mobilenet_v2_035" / "mobilenet_v2_035.onnx";
  for (const char* cmd : {"bench-cnn", "classify", "infer"})
    EXPECT_TRUE(has(run_cli(std::string("help ") + cmd).out, "--device TEXT=auto")) << cmd;
  WGC_REQUIRE_FILE(model);
  auto r = run_cli("bench-cnn --device cpu -r 1 --batch 1,2 -m " + quote(model.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(has(r.err, "wgc bench-cnn: batch 1 on the CPU: warm-up run...")) << r.err;
  EXPECT_TRUE(has(r.err, "wgc bench-cnn: batch 2: 2 more runs, about")) << r.err;
}

TEST(CliText, BlurSigmaZeroAndSobelSigmaAreRefused) {
  fs::path in = fs::path(WGC_SOURCE_DIR) / "docs" / "images" / "hills.png";
  WGC_REQUIRE_FILE(in);
  fs::path out = test::temp_dir() / "out.png";
  auto zero = run_cli("blur --sigma 0 " + quote(in.string()) + " " + quote(out.string()));
  EXPECT_EQ(zero.rc, 2);
  EXPECT_TRUE(has(zero.err, "--sigma must be above 0")) << zero.err;
  EXPECT_FALSE(fs::exists(out));
  auto sobel = run_cli("sobel --sigma 1 " + quote(in.string()) + " " + quote(out.string()));
  EXPECT_EQ(sobel.rc, 2);
  EXPECT_TRUE(has(sobel.err, "sobel takes no --sigma")) << sobel.err;
}

}  // namespace
}  // namespace wgc
