// The serving scheduler (src/llm/serve) on the built-in default model: requests give the tokens
// and text the Generator gives (greedy, seeded sampling, stop strings, EOS), logprobs equal the
// softmax of the model's logits, prefixes are reused, and the queue, cancellation, stop_accepting,
// drain and shutdown keep their promises (every request gets on_done exactly once).
#include "llm/generate/generator.h"
#include "llm/serve/scheduler.h"
#include "test_llm_util.h"

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;
using wgc::test::ctx;

namespace {

using wgc::test::default_model;

constexpr int kCtx = 32;

struct Dict {
  ModelFile file;
  LlamaModel model;
  Tokenizer tok;
};
// The default model, once per engine: Auto (the CPU engine on SwiftShader), and the GPU engine
// for a test that keeps the scheduler's overlapped GPU path covered.
Dict* load_dict(Device device) {
  ModelFile f = open_model(default_model(), {false, false});
  EngineOptions eo;
  eo.max_ctx = kCtx;
  eo.max_batch = 32;
  eo.progress = false;
  eo.q8_activations = false;  // generate() is compared with the scheduler run with f32_options (f32 activations)
  eo.device = device;
  LlamaModel lm(ctx(), f, eo);
  Tokenizer t = *find_tokenizer(f);
  return new Dict{std::move(f), std::move(lm), std::move(t)};
}
Dict& dict(Device device = Device::Auto) {
  static Dict* automatic = load_dict(Device::Auto);
  if (device == Device::Auto) return *automatic;
  static Dict* gpu = load_dict(Device::Gpu);
  return *gpu;
}

// What one request gave.
struct Outcome {
  std::vector<TokenEvent> events;
  RequestResult result;
  int done_calls = 0;
  std::string text() const {
    std::string s;
    for (auto& e : events) s += e.text;
    return s + result.text_tail;
  }
  std::vector<int32_t> ids() const {
    std::vector<int32_t> v;
    for (auto& e : events) v.push_back(e.id);
    return v;
  }
};

// Submits and collects; wait() blocks until on_done.
struct Collector {
  Outcome out;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::function<bool(const TokenEvent&)> hook;  // extra on_token behaviour
  uint64_t submit(Scheduler& s, Request r) {
    return s.submit(
        std::move(r),
        [this](const TokenEvent& e) {
          out.events.push_back(e);
          return hook ? hook(e) : true;
        },
        [this](const RequestResult& res) {
          std::lock_guard lk(mu);
          out.result = res;
          ++out.done_calls;
          done = true;
          cv.notify_all();
        });
  }
  Outcome& wait() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return done; });
    return out;
  }
};

Request request(const std::string& prompt, int max_tokens) {
  Request r;
  r.prompt = dict().tok.encode(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  return r;
}

GenerateResult generate(const Request& r, Device device = Device::Auto) {
  auto& m = dict(device);
  Generator gen(m.model, m.tok);
  GenerateOptions o;
  o.sampling = r.sampling;
  o.max_tokens = r.max_tokens;
  o.stop = r.stop;
  o.ignore_eos = r.ignore_eos;
  return gen.generate(std::span<const int32_t>(r.prompt), o);
}

// (id, log softmax) of every logit, best first (f64).
std::vector<std::pair<int32_t, double>> token_logprobs_reference(const std::vector<float>& logits) {
  double mx = *std::max_element(logits.begin(), logits.end()), sum = 0;
  for (float v : logits) sum += std::exp(double(v) - mx);
  std::vector<std::pair<int32_t, double>> r;
  for (size_t i = 0; i < logits.size(); ++i) r.push_back({int32_t(i), double(logits[i]) - mx - std::log(sum)});
  std::stable_sort(r.begin(), r.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return r;
}

SchedulerOptions small_options() {
  SchedulerOptions o;
  o.parallel = 4;
  o.max_queue = 8;
  o.prefill_chunk = 5;  // several chunks for the longer prompts
  return o;
}

// small_options() with the scheduler's linears in f32, as generate() and logits() run here
// (load_dict: q8_activations = false), for the tests that compare the two: on a GPU engine Auto
// takes BatchedQ8 on GPUs, whose 8-bit activations round otherwise (on the H200: other tokens,
// log probabilities 0.01-0.04 apart); the CPU engine takes Auto only.
SchedulerOptions f32_options(const Dict& m) {
  SchedulerOptions o = small_options();
  if (m.model.device() == Device::Gpu) o.linear = LinearVersion::Batched;
  return o;
}

// A gate the on_token hook waits at, to hold the worker inside a request.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false, reached = false;
  void wait_here() {
    std::unique_lock lk(mu);
    reached = true;
    cv.notify_all();
    cv.wait(lk, [&] { return open; });
  }
  void wait_reached() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return reached; });
  }
  void release() {
    std::lock_guard lk(mu);
    open = true;
    cv.notify_all();
  }
};

}  // namespace

void check_requests_equal_the_generator(Device device) {
  auto& m = dict(device);
  std::vector<Request> reqs;
  reqs.push_back(request("The moon", 9));
  reqs.push_back(request("Love is a word that means", 7));  // several prefill chunks
  Request sampled = request("The sea", 8);
  sampled.sampling = default_sampling(default_model());
  sampled.sampling.seed = 1234;
  sampled.ignore_eos = true;
  reqs.push_back(sampled);
  Request topk = sampled;
  topk.sampling.top_k = 8;  // the GPU top-k path
  topk.sampling.seed = 99;
  reqs.push_back(topk);
  std::vector<GenerateResult> want;
  for (auto& r : reqs) want.push_back(generate(r, device));

  Scheduler s(m.model, m.tok, f32_options(m));
  std::vector<std::unique_ptr<Collector>> cs;
  for (auto& r : reqs) {
    cs.push_back(std::make_unique<Collector>());
    cs.back()->submit(s, r);
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    Outcome& o = cs[i]->wait();
    EXPECT_EQ(o.done_calls, 1);
    EXPECT_TRUE(o.result.error.empty()) << o.result.error;
    EXPECT_EQ(o.ids(), want[i].ids) << "request " << i;
    EXPECT_EQ(o.text(), want[i].text) << "request " << i;
    EXPECT_EQ(o.result.stop, want[i].stop) << "request " << i;
    EXPECT_EQ(o.result.prompt_tokens, int(reqs[i].prompt.size()));
    EXPECT_EQ(o.result.completion_tokens, int(want[i].ids.size()));
    EXPECT_GE(o.result.total_ms, o.result.ttft_ms);
    EXPECT_GE(o.result.ttft_ms, o.result.queue_ms);
  }
  s.drain();
  auto st = s.stats();
  EXPECT_EQ(st.requests, reqs.size());
  EXPECT_EQ(st.queued, 0);
  EXPECT_EQ(st.running, 0);
  EXPECT_GT(st.generated_tokens, 0u);
  EXPECT_GT(st.kv_blocks_total, 0);
}

TEST(Scheduler, GreedyAndSampledRequestsEqualTheGenerator) {
  WGC_REQUIRE_FILE(default_model());
  check_requests_equal_the_generator(Device::Auto);
}

TEST(Scheduler, GreedyAndSampledRequestsEqualTheGeneratorOnTheGpuEngine) {
  WGC_REQUIRE_FILE(default_model());
  check_requests_equal_the_generator(Device::Gpu);
}

TEST(Scheduler, StopStringsAndEos) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  Request base = request("The moon", 12);
  auto full = generate(base);
  ASSERT_GT(full.text.size(), 12u) << full.text;
  Request r = base;
  r.stop = {full.text.substr(5, 4)};
  auto want = generate(r);
  ASSERT_EQ(want.stop, StopReason::StopString);

  Scheduler s(m.model, m.tok, f32_options(m));
  Collector c;
  c.submit(s, r);
  auto& o = c.wait();
  EXPECT_EQ(o.result.stop, StopReason::StopString);
  EXPECT_EQ(o.text(), want.text);
  EXPECT_EQ(o.result.text_tail, "");
  // EOS: <|end_of_text|> (1) is not handed out as a token; with ignore_eos generation goes on.
  auto ids = full.ids;
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 0);
}

TEST(Scheduler, LogprobsAreTheSoftmaxOfTheLogits) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  Request r = request("The moon", 3);
  r.top_logprobs = 5;
  // The reference: the model's logits after the prompt.
  m.model.rewind(0);
  auto logits = m.model.logits(r.prompt);
  auto want = token_logprobs_reference(logits);
  Scheduler s(m.model, m.tok, f32_options(m));
  Collector c;
  c.submit(s, r);
  auto& o = c.wait();
  ASSERT_EQ(o.events.size(), 3u);
  const TokenEvent& e = o.events[0];
  ASSERT_EQ(e.top.size(), 5u);
  EXPECT_EQ(e.id, e.top[0].first);  // greedy takes the best
  EXPECT_FLOAT_EQ(e.logprob, e.top[0].second);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(e.top[i].first, want[i].first) << i;
    EXPECT_NEAR(e.top[i].second, want[i].second, 1e-4) << i;
    if (i) {
      EXPECT_GE(e.top[i - 1].second, e.top[i].second);
    }
  }
  Request chosen_only = request("The moon", 2);
  chosen_only.top_logprobs = 0;
  Collector c2;
  c2.submit(s, chosen_only);
  auto& o2 = c2.wait();
  ASSERT_EQ(o2.events.size(), 2u);
  EXPECT_TRUE(o2.events[0].top.empty());
  EXPECT_NEAR(o2.events[0].logprob, want[0].second, 1e-4);
  EXPECT_LE(o2.events[1].logprob, 0.f);
}

// Full KV blocks of a prompt already cached (the same system prompt, a chat's earlier turns) are
// shared instead of run again, and the tokens stay the same.
TEST(Scheduler, ReusesTheCachedPrefix) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  SchedulerOptions so = f32_options(m);
  so.kv_block_tokens = 4;
  Scheduler s(m.model, m.tok, so);
  Request r = request("Love is a word that means", 4);
  const int P = int(r.prompt.size());
  Collector a, b;
  a.submit(s, r);
  auto& first = a.wait();
  EXPECT_EQ(first.result.cached_tokens, 0);
  b.submit(s, r);
  auto& second = b.wait();
  EXPECT_EQ(second.ids(), first.ids());
  EXPECT_EQ(second.result.cached_tokens, (P - 1) / 4 * 4);  // whole blocks, and the last token runs
  // The next turn: the prompt, the reply (its last token was never fed) and more.
  Request next = r;
  const auto reply = first.ids();
  next.prompt.insert(next.prompt.end(), reply.begin(), reply.end());
  auto more = m.tok.encode(". The moon", false);
  next.prompt.insert(next.prompt.end(), more.begin(), more.end());
  Collector c;
  c.submit(s, next);
  auto& third = c.wait();
  EXPECT_EQ(third.result.cached_tokens, (P + 3) / 4 * 4);
  EXPECT_EQ(third.ids(), generate(next).ids);
  s.drain();
  EXPECT_EQ(s.stats().cached_prompt_tokens, uint64_t(second.result.cached_tokens + third.result.cached_tokens));
}

// A request's tokens do not depend on what else runs: the same requests one at a time and all
// together (prompts chunked differently, prefills interleaved with decodes, shared prefixes)
// give the same tokens, greedy and seeded.
TEST(Scheduler, TokensDoNotDependOnTheBatch) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  std::vector<Request> reqs;
  for (const char* p : {"The moon", "Love is a word that means", "The sea is", "Love is a word"}) {
    Request r = request(p, 10);
    r.ignore_eos = true;
    reqs.push_back(r);
  }
  reqs[1].sampling = default_sampling(default_model());
  reqs[1].sampling.seed = 7;
  reqs[3].sampling = reqs[1].sampling;
  reqs[3].sampling.top_k = 5;
  reqs[3].top_logprobs = 2;
  auto run = [&](SchedulerOptions so, bool together) {
    Scheduler s(m.model, m.tok, so);
    std::vector<std::unique_ptr<Collector>> cs;
    for (auto& r : reqs) {
      cs.push_back(std::make_unique<Collector>());
      cs.back()->submit(s, r);
      if (!together) cs.back()->wait();
    }
    std::vector<std::vector<TokenEvent>> out;
    for (auto& c : cs) out.push_back(c->wait().events);
    return out;
  };
  SchedulerOptions one = small_options();
  one.parallel = 1;
  one.prefill_chunk = 64;
  auto alone = run(one, false);
  SchedulerOptions many = small_options();
  many.kv_block_tokens = 4;
  many.prefill_chunk = 3;
  auto together = run(many, true);
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(alone[i].size(), together[i].size()) << i;
    for (size_t t = 0; t < alone[i].size(); ++t) {
      EXPECT_EQ(alone[i][t].id, together[i][t].id) << "request " << i << " token " << t;
      EXPECT_EQ(alone[i][t].logprob, together[i][t].logprob) << "request " << i << " token " << t;
      EXPECT_EQ(alone[i][t].top, together[i][t].top) << "request " << i << " token " << t;
    }
  }
}

TEST(Scheduler, BadRequestsAreRefusedAtSubmit) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  Scheduler s(m.model, m.tok, small_options());
  auto nothing = [](const TokenEvent&) { return true; };
  auto done = [](const RequestResult&) {};
  Request empty;
  EXPECT_THROW(s.submit(empty, nothing, done), Error);
  Request bad_id = request("x", 1);
  bad_id.prompt.push_back(int32_t(m.model.config().vocab_size));
  EXPECT_THROW(s.submit(bad_id, nothing, done), Error);
  Request long_prompt = request("x", 1);
  long_prompt.prompt.assign(kCtx + 1, 5);
  try {
    s.submit(long_prompt, nothing, done);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(kCtx + 1)), std::string::npos) << e.what();
  }
  Request bad_lp = request("x", 1);
  bad_lp.top_logprobs = 21;
  EXPECT_THROW(s.submit(bad_lp, nothing, done), Error);
  Request bad_sampling = request("x", 1);
  bad_sampling.sampling.top_p = 0;
  EXPECT_THROW(s.submit(bad_sampling, nothing, done), Error);
  s.drain();
  EXPECT_EQ(s.stats().requests, 0u);
}

TEST(Scheduler, QueueFullCancelAndContextEnd) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  SchedulerOptions so = small_options();
  so.max_queue = 2;
  Scheduler s(m.model, m.tok, so);
  Gate gate;
  Collector held;
  held.hook = [&](const TokenEvent&) {
    gate.wait_here();
    return true;
  };
  Request long_run = request("The moon", -1);  // until the context ends
  long_run.ignore_eos = true;
  held.submit(s, long_run);
  gate.wait_reached();  // the worker is inside the first request
  Collector q1, q2;
  uint64_t id1 = q1.submit(s, request("The sea", 3));
  q2.submit(s, request("The sea", 3));
  EXPECT_EQ(s.stats().queued, 2);
  EXPECT_EQ(s.stats().running, 1);
  EXPECT_THROW(s.submit(request("x", 1), nullptr, nullptr), QueueFull);
  s.cancel(id1);  // cancelled while waiting
  gate.release();
  auto& h = held.wait();
  EXPECT_EQ(h.result.stop, StopReason::ContextFull);
  EXPECT_EQ(int(h.result.prompt_tokens + h.result.completion_tokens), kCtx + 1);  // the last one is not fed
  auto& c1 = q1.wait();
  EXPECT_EQ(c1.result.stop, StopReason::Cancelled);
  EXPECT_TRUE(c1.events.empty());
  auto& c2 = q2.wait();
  EXPECT_EQ(c2.result.stop, StopReason::MaxTokens);
  EXPECT_EQ(c2.events.size(), 3u);

  // on_token returning false cancels; so does cancel() while running.
  Collector stop_early;
  stop_early.hook = [&](const TokenEvent&) { return stop_early.out.events.size() < 2; };
  stop_early.submit(s, request("The moon", 10));
  auto& se = stop_early.wait();
  EXPECT_EQ(se.result.stop, StopReason::Cancelled);
  EXPECT_EQ(se.events.size(), 2u);
  Collector running;
  uint64_t rid = 0;
  running.hook = [&](const TokenEvent&) {
    if (running.out.events.size() == 3) s.cancel(rid);
    return true;
  };
  Request sampled = request("The moon", 20);
  sampled.sampling.temperature = 0.8f;
  sampled.ignore_eos = true;
  rid = running.submit(s, sampled);
  auto& ru = running.wait();
  EXPECT_EQ(ru.result.stop, StopReason::Cancelled);
  EXPECT_LE(ru.events.size(), 4u);
}

TEST(Scheduler, StopAcceptingDrainAndShutdown) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  std::vector<std::unique_ptr<Collector>> cs;
  Gate gate;
  {
    Scheduler s(m.model, m.tok, small_options());
    for (int i = 0; i < 3; ++i) {
      cs.push_back(std::make_unique<Collector>());
      if (i == 0)
        cs[0]->hook = [&](const TokenEvent&) {
          gate.wait_here();
          return true;
        };
      cs.back()->submit(s, request("The moon", 4));
    }
    gate.wait_reached();
    s.stop_accepting();
    EXPECT_THROW(s.submit(request("x", 1), nullptr, nullptr), NotAccepting);
    gate.release();
    s.drain();
    for (auto& c : cs) EXPECT_EQ(c->wait().result.stop, StopReason::MaxTokens);
    // Shutdown with work queued and running: everything ends, cancelled.
  }
  cs.clear();
  Gate gate2;
  std::thread opener;
  {
    Scheduler s(m.model, m.tok, small_options());
    for (int i = 0; i < 3; ++i) {
      cs.push_back(std::make_unique<Collector>());
      if (i == 0)
        cs[0]->hook = [&](const TokenEvent&) {
          gate2.wait_here();
          return true;
        };
      cs.back()->submit(s, request("The moon", 30));
    }
    gate2.wait_reached();
    s.cancel(0);  // unknown ids are ignored
    opener = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      gate2.release();
    });
    // ~Scheduler cancels what runs and waits, then joins the worker (which the gate holds).
  }
  opener.join();
  for (auto& c : cs) {
    EXPECT_EQ(c->out.done_calls, 1);
    EXPECT_EQ(c->out.result.stop, StopReason::Cancelled);
  }
}

// A request the KV pool could never hold fails with a clear error; requests that fit only one
// after another wait for blocks and then run.
TEST(Scheduler, KvPoolLimits) {
  WGC_REQUIRE_FILE(default_model());
  auto& m = dict();
  SchedulerOptions so = small_options();
  so.kv_block_tokens = 4;
  so.kv_blocks = 5;  // 20 positions
  Scheduler s(m.model, m.tok, so);
  Request huge = request("The moon", -1);  // up to the 32-token context: 8 blocks
  Collector h;
  h.submit(s, huge);
  auto& hr = h.wait();
  EXPECT_NE(hr.result.error.find("KV blocks"), std::string::npos) << hr.result.error;
  EXPECT_TRUE(hr.events.empty());
  std::vector<std::unique_ptr<Collector>> cs;
  int most_running = 0;
  for (int i = 0; i < 3; ++i) {  // 3 + 12 - 1 = 14 positions: 4 blocks each, one at a time
    cs.push_back(std::make_unique<Collector>());
    cs.back()->hook = [&](const TokenEvent&) {
      most_running = std::max(most_running, s.stats().running);
      return true;
    };
    Request r = request("The moon", 12);
    r.ignore_eos = true;
    cs.back()->submit(s, r);
  }
  for (auto& c : cs) {
    auto& o = c->wait();
    EXPECT_TRUE(o.result.error.empty()) << o.result.error;
    EXPECT_EQ(o.events.size(), 12u);
    EXPECT_EQ(o.ids(), cs[0]->out.ids());
  }
  EXPECT_EQ(most_running, 1);
  s.drain();
  EXPECT_LE(s.stats().kv_blocks_used, 0);
  EXPECT_EQ(s.stats().kv_blocks_total, 5);
}
