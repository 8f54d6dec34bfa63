// A lost GPU device (issue 32), forced with Dawn's wgpuDeviceForceLoss on SwiftShader: the context
// learns it (lost()), every later call on it or on what was made on it throws the typed, retryable
// DeviceLost (no hang, no other error), a new Context works; generation on a lost device throws
// DeviceLost; the serving scheduler with a ServedModel rebuilds the model and serves again, the
// requests that had no token yet run again with the same tokens, the others end retryable; the
// command line exits 75 (EX_TEMPFAIL) with the error. The server over HTTP under a multi-stream
// load: tests/serve/recovery.test.mjs.
#include "gpu/context_state.h"
#include "llm/generate/generator.h"
#include "llm/serve/scheduler.h"
#include "llm/serve/served_model.h"
#include "test_llm_util.h"

#include <condition_variable>
#include <mutex>

using namespace wgc;
using namespace wgc::llm;

namespace {

// The built-in model on the GPU engine (SwiftShader here), a small context.
EngineOptions gpu_engine() {
  EngineOptions o;
  o.max_ctx = 64;
  o.progress = false;
  o.device = Device::Gpu;
  return o;
}

template <class F>
std::string lost_message(F&& f) {
  try {
    f();
  } catch (const DeviceLost& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not DeviceLost: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error on a lost device";
  return {};
}

}  // namespace

TEST(DeviceLoss, EveryCallThrowsDeviceLostAndANewContextWorks) {
  Context c;
  std::vector<float> x = {1, 2, 3, 4, 5};
  Tensor t = make_tensor(c, {5}, x);
  EXPECT_EQ(download<float>(c, t), x);
  EXPECT_FALSE(c.lost());
  detail::force_device_loss(c.state(), "test");
  EXPECT_TRUE(c.lost());
  std::string m = lost_message([&] { download<float>(c, t); });
  EXPECT_NE(m.find("was lost"), std::string::npos) << m;
  EXPECT_NE(m.find("test"), std::string::npos) << m;  // Dawn's reason
  lost_message([&] { make_tensor(c, {5}, x); });
  lost_message([&] { upload(c, t, std::as_bytes(std::span(x))); });
  lost_message([&] { c.check(); });
  lost_message([&] { c.wait_idle(); });
  lost_message([&] { map(c, t, t, "x + y"); });
  // The failure is the device's: the same work on a new context succeeds.
  Context fresh;
  Tensor u = make_tensor(fresh, {5}, x);
  EXPECT_EQ(download<float>(fresh, map(fresh, u, u, "x + y")), (std::vector<float>{2, 4, 6, 8, 10}));
}

TEST(DeviceLoss, GenerationThrowsDeviceLost) {
  WGC_REQUIRE_FILE(test::default_model());
  Context c;
  ModelFile f = open_model(test::default_model(), {false, false});
  LlamaModel m(c, f, gpu_engine());
  ASSERT_EQ(m.device(), Device::Gpu);
  Generator gen(m, find_tokenizer(f));
  GenerateOptions o;
  o.max_tokens = 3;
  o.sampling.temperature = 0;
  auto before = gen.generate("The moon", o);
  EXPECT_EQ(before.ids.size(), 3u);
  detail::force_device_loss(c.state(), "test");
  gen.reset();
  lost_message([&] { gen.generate("The moon", o); });
}

TEST(DeviceLoss, SchedulerRebuildsTheModelAndServesAgain) {
  WGC_REQUIRE_FILE(test::default_model());
  ModelFile f = open_model(test::default_model(), {false, false});
  Tokenizer tok = *find_tokenizer(f);
  ServedModel served(f, Context(), gpu_engine());
  std::vector<std::string> log;
  std::mutex mu;
  std::condition_variable cv;
  Scheduler s(served.model(), tok, {.parallel = 4, .max_ctx = 64}, served.recovery([&](const std::string& line) {
    std::lock_guard lock(mu);
    log.push_back(line);
  }));

  // Greedy requests; each one's result (tokens, error, retryable).
  struct Out {
    std::vector<int32_t> ids;
    RequestResult result;
    bool done = false;
  };
  auto run = [&](std::vector<Out>& outs, const std::function<void(size_t)>& after_first_token) {
    for (size_t i = 0; i < outs.size(); ++i) {
      Request r;
      r.prompt = tok.encode(i % 2 ? "The moon" : "Bread is", true);
      r.max_tokens = 6 + int(i);
      r.ignore_eos = true;
      r.sampling.temperature = 0;
      s.submit(
          std::move(r),
          [&, i](const TokenEvent& e) {
            std::lock_guard lock(mu);
            outs[i].ids.push_back(e.id);
            if (outs[i].ids.size() == 1 && after_first_token) after_first_token(i);
            return true;
          },
          [&, i](const RequestResult& res) {
            std::lock_guard lock(mu);
            outs[i].result = res;
            outs[i].done = true;
            cv.notify_all();
          });
    }
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return std::all_of(outs.begin(), outs.end(), [](const Out& o) { return o.done; }); });
  };

  std::vector<Out> ref(6);
  run(ref, {});
  for (const auto& o : ref) ASSERT_TRUE(o.result.error.empty()) << o.result.error;

  // The device is lost as soon as the first request has its first token: it (and any other with a
  // token) ends retryable; the rest run again on the rebuilt model and give the reference tokens.
  std::vector<Out> got(6);
  auto ctx = served.context();
  run(got, [&](size_t) {
    if (!ctx->lost()) detail::force_device_loss(ctx->state(), "test");
  });
  int replayed = 0, retryable = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const Out& o = got[i];
    if (o.result.error.empty()) {
      EXPECT_EQ(o.ids, ref[i].ids) << "request " << i;
      ++replayed;
    } else {
      EXPECT_TRUE(o.result.retryable) << o.result.error;
      EXPECT_NE(o.result.error.find("was lost"), std::string::npos) << o.result.error;
      EXPECT_GE(o.ids.size(), 1u);
      ++retryable;
    }
  }
  EXPECT_GE(retryable, 1);
  EXPECT_GE(replayed, 1);
  SchedulerStats st = s.stats();
  EXPECT_EQ(st.recoveries, 1u);
  EXPECT_FALSE(st.recovering);
  EXPECT_GT(st.last_recovery_s, 0);
  EXPECT_FALSE(served.context()->lost());
  std::printf("recovery of the built-in model on %s: %.2f s (%d requests run again, %d retryable)\n",
              served.context()->adapter().device.c_str(), st.last_recovery_s, replayed, retryable);

  // And it keeps serving: the same requests again give the reference.
  std::vector<Out> after(6);
  run(after, {});
  for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].ids, ref[i].ids) << "request " << i;
  std::lock_guard lock(mu);
  ASSERT_GE(log.size(), 2u);
  EXPECT_NE(log.front().find("rebuilding"), std::string::npos);
  EXPECT_NE(log.back().find("serving again"), std::string::npos);
}

TEST(DeviceLoss, TheCommandLineSaysSoAndExitsWithTempfail) {
  WGC_REQUIRE_FILE(test::default_model());
  // WGC_INJECT_DEVICE_LOSS: the first queue submit that finds the file loses the device.
  std::filesystem::path trigger = test::temp_dir() / "lose-device";
  std::ofstream(trigger) << "";
  test::CliResult r = test::run_cli("generate --backend cpu-vulkan --prompt 'The moon' -n 2", "",
                                    "WGC_INJECT_DEVICE_LOSS=" + test::quote(trigger.string()) + " ");
  EXPECT_EQ(r.rc, 75) << r.err;  // EX_TEMPFAIL
  EXPECT_NE(r.err.find("was lost"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run it again"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(trigger));
}
