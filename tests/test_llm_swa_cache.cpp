// The sliding-window layers' ring KV cache (EngineOptions::swa_full off, the default): each such
// layer keeps window + max_batch positions, position p in row p % rows. On transformers' fixtures
// with a window (tests/data/arch: Mistral every layer, Gemma 2 and 3 some), prompts several
// windows long prefilled in chunks that straddle the ring's wrap and greedy steps past several
// more wraps: the ring's logits are the full cache's bit for bit (the same kernels, reading other
// rows) and transformers' within the arch test's bound, on the GPU engine (every cache type) and
// the CPU engine; the cache's allocated bytes are the rings'; rewinding past what a ring holds is
// refused, and speculative decoding's rollbacks run on it. The serving engine's pool of the
// sliding layers' own, whose blocks behind the windows are freed and taken again.
#include "llm/formats/safetensors.h"
#include "llm/generate/speculative.h"
#include "llm/model/llama.h"
#include "llm/model/llama_batched.h"
#include "llm/serve/scheduler.h"
#include "test_util.h"
#include "util/json.h"

#include <algorithm>
#include <cstring>
#include <mutex>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;
using wgc::test::ctx;

namespace {

fs::path fixture(const std::string& name) { return fs::path(WGC_SOURCE_DIR) / "tests/data/arch" / name; }

// Awkward sizes: chunks of `chunk` (windows 5 and 6: rings of 9 and 10 rows at 4, not multiples
// of the chunk).
EngineOptions engine(Device device, bool swa_full, int chunk, KvType kv = KvType::F32) {
  EngineOptions eo;
  eo.device = device;
  eo.max_ctx = 96;
  eo.max_batch = chunk;
  eo.progress = false;
  eo.q8_activations = false;
  eo.cache_type = kv;
  eo.swa_full = swa_full;
  return eo;
}

int32_t argmax(std::span<const float> row) { return int32_t(std::max_element(row.begin(), row.end()) - row.begin()); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// The fixture's longest prompt (27 tokens) on the ring and on the full cache: every position's
// logits (the prompt in chunks), then `steps` greedy steps; the ring's bits equal the full
// cache's, and (f32) transformers' logits and greedy tokens within tol.
void check_ring(const std::string& name, Device device, KvType kv, int chunk, int steps, double tol) {
  const fs::path dir = fixture(name);
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  const SafetensorsFile g = SafetensorsFile::open(dir / "golden.safetensors");
  const json::Value info = json::parse_file(dir / "golden.json");
  const ModelFile f = open_model(dir, {false, false});
  const ModelConfig& c = f.config();
  ASSERT_TRUE(c.sliding_window.has_value());
  const int window = int(*c.sliding_window);
  const std::string what = name + " " + std::string(to_string(device)) + " " + std::string(to_string(kv)) + " chunk " +
                           std::to_string(chunk);

  LlamaModel ring(ctx(), f, engine(device, false, chunk, kv)), full(ctx(), f, engine(device, true, chunk, kv));
  ASSERT_EQ(ring.device(), device);

  // The allocated bytes: a sliding layer's ring of window + chunk rows, a global layer's max_ctx.
  const uint64_t row_values = uint64_t(c.n_kv_heads * c.head_dim);
  uint64_t want_bytes = 0, want_fixed = 0;
  double want_per_token = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const int rows = c.layer_is_sliding(l) ? window + chunk : ring.max_ctx();
    const uint64_t b = 2 * 4 * uint64_t(kv_words(kv, int64_t(row_values) * rows));
    want_bytes += b;
    if (c.layer_is_sliding(l))
      want_fixed += b;
    else
      want_per_token += 2 * double(row_values) * kv_bytes_per_value(kv);
  }
  EXPECT_EQ(ring.kv_bytes(), want_bytes) << what;
  EXPECT_LT(ring.kv_bytes(), full.kv_bytes()) << what;
  EXPECT_EQ(ring.kv_footprint().fixed, want_fixed) << what;
  EXPECT_DOUBLE_EQ(ring.kv_footprint().per_token, want_per_token) << what;
  EXPECT_EQ(full.kv_footprint().fixed, 0u) << what;
  EXPECT_DOUBLE_EQ(double(full.kv_footprint().fixed) + full.kv_footprint().per_token * full.max_ctx(),
                   double(full.kv_bytes()))
      << what;
  EXPECT_DOUBLE_EQ(double(ring.kv_footprint().fixed) + ring.kv_footprint().per_token * ring.max_ctx(),
                   double(ring.kv_bytes()))
      << what;

  const int p = 1;  // the 27-token prompt: more than four windows
  const auto tokens = test::tensor_values<int32_t>(g, test::prompt_key(p, "tokens"));
  ASSERT_GT(int(tokens.size()), 4 * window) << what;
  const std::vector<float> got = ring.all_logits(tokens);
  EXPECT_TRUE(same_bits(got, full.all_logits(tokens))) << what << ": prompt logits";
  const size_t V = size_t(c.vocab_size);
  if (kv == KvType::F32) {
    EXPECT_LT(test::rel_error(got, test::tensor_values<float>(g, test::prompt_key(p, "logits"))), tol)
        << what << ": prompt logits against transformers";
  }

  // Greedy steps past several wraps (one token each: the decode kernels and the recorded step).
  std::vector<int32_t> greedy{argmax(std::span(got).last(V))};
  for (int s = 1; s < steps; ++s) {
    const std::vector<float> a = ring.logits(std::span(&greedy.back(), 1));
    const std::vector<float> b = full.logits(std::span(&greedy.back(), 1));
    ASSERT_TRUE(same_bits(a, b)) << what << ": decode step " << s;
    greedy.push_back(argmax(a));
  }
  EXPECT_GE(ring.n_past(), 3 * (window + chunk)) << what << ": the test runs past several wraps";
  if (kv == KvType::F32 && info["prompts"][size_t(p)]["last_top1_margin"].as_double() > 1e-3) {
    auto want = test::tensor_values<int32_t>(g, test::prompt_key(p, "greedy"));
    want.resize(std::min(want.size(), greedy.size()));
    EXPECT_EQ(std::vector<int32_t>(greedy.begin(), greedy.begin() + long(want.size())), want)
        << what << ": greedy tokens against transformers";
  }

  // decode_greedy (steps recorded ahead, each argmax fed on the GPU) stopped after 9 tokens: the
  // steps recorded past the stop are dropped, and the next ones run on what the ring holds.
  std::vector<int32_t> dr, df;
  auto take = [](std::vector<int32_t>& v) {
    return [&v](int32_t t) {
      v.push_back(t);
      return v.size() < 9;
    };
  };
  ring.decode_greedy(greedy.back(), 30, take(dr));
  full.decode_greedy(greedy.back(), 30, take(df));
  EXPECT_EQ(dr, df) << what;
  ASSERT_EQ(ring.n_past(), full.n_past()) << what;
  greedy.push_back(dr.back());
  dr.clear();
  df.clear();
  ring.decode_greedy(greedy.back(), 4, take(dr));
  full.decode_greedy(greedy.back(), 4, take(df));
  EXPECT_EQ(dr, df) << what << ": after a stop";
  greedy.push_back(dr.back());

  // Rewinding: within the last chunk, fine; further back than the ring holds, refused (full: fine);
  // 0, always.
  const int n = ring.n_past();
  EXPECT_TRUE(ring.can_rewind(n - chunk)) << what;
  EXPECT_FALSE(ring.can_rewind(n - chunk - window - 2)) << what;
  EXPECT_THROW(ring.rewind(window + 1), Error) << what;
  EXPECT_TRUE(full.can_rewind(window + 1)) << what;
  ring.rewind(n - chunk);
  full.rewind(n - chunk);
  EXPECT_TRUE(same_bits(ring.logits(std::span(&greedy.back(), 1)), full.logits(std::span(&greedy.back(), 1))))
      << what << ": a step after a rewind within the ring";
  ring.rewind(0);
  full.rewind(0);
  EXPECT_TRUE(same_bits(ring.logits(std::span(tokens).first(7)), full.logits(std::span(tokens).first(7))))
      << what << ": after rewind(0)";
}

}  // namespace

TEST(SwaRingCache, MistralEveryLayerSliding) {
  check_ring("mistral", Device::Gpu, KvType::F32, 4, 24, 2e-4);
  check_ring("mistral", Device::Cpu, KvType::F32, 4, 24, 2e-4);
}

// Gemma 3: five sliding layers (their own rope base) and a global one.
TEST(SwaRingCache, Gemma3SlidingAndGlobalLayers) {
  check_ring("gemma3", Device::Gpu, KvType::F32, 4, 24, 2e-4);
  check_ring("gemma3", Device::Cpu, KvType::F32, 3, 24, 2e-4);
}

// Gemma 2 (head_dim 32): every cache type, a chunk of 7 (ring of 13).
TEST(SwaRingCache, Gemma2EveryCacheType) {
  check_ring("gemma2", Device::Cpu, KvType::F32, 7, 16, 2e-4);
  for (KvType kv : kKvTypes) check_ring("gemma2", Device::Gpu, kv, kv == KvType::F32 ? 4 : 7, 16, 2e-4);
}

// A layer split over two devices (two contexts on one adapter): each stage's rings (the second
// holds the global layer), the same bits as the full cache, and the one-device engine's bytes.
TEST(SwaRingCache, LayerSplit) {
  const fs::path dir = fixture("gemma3");
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  const SafetensorsFile g = SafetensorsFile::open(dir / "golden.safetensors");
  const ModelFile f = open_model(dir, {false, false});
  const auto tokens = test::tensor_values<int32_t>(g, test::prompt_key(1, "tokens"));
  EngineOptions ro = engine(Device::Gpu, false, 4), fo = engine(Device::Gpu, true, 4);
  const uint64_t one_device = LlamaModel(ctx(), f, ro).kv_bytes();
  ro.split_gpus = fo.split_gpus = {ctx()};
  LlamaModel ring(ctx(), f, ro), full(ctx(), f, fo);
  EXPECT_EQ(ring.kv_bytes(), one_device);
  EXPECT_LT(ring.kv_bytes(), full.kv_bytes());
  const std::vector<float> got = ring.all_logits(tokens);
  EXPECT_TRUE(same_bits(got, full.all_logits(tokens))) << "prompt";
  int32_t t = argmax(std::span(got).last(size_t(f.config().vocab_size)));
  for (int s = 0; s < 12; ++s) {
    const std::vector<float> a = ring.logits(std::span(&t, 1));
    ASSERT_TRUE(same_bits(a, full.logits(std::span(&t, 1)))) << "decode step " << s;
    t = argmax(a);
  }
}

// Speculative decoding on ring caches (target and draft): rounds roll back rejected proposals
// (forced acceptance 0.5: most rounds reject some), and the tokens are those of the same rounds on
// full caches; the draft's cache is synced by rewinding within its ring.
TEST(SwaRingCache, SpeculativeRollbacks) {
  const fs::path dir = fixture("gemma3");
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  const SafetensorsFile g = SafetensorsFile::open(dir / "golden.safetensors");
  const ModelFile f = open_model(dir, {false, false});
  const auto prompt = test::tensor_values<int32_t>(g, test::prompt_key(1, "tokens"));
  for (Device device : {Device::Cpu, Device::Gpu}) {
    std::vector<std::vector<int32_t>> outs;
    for (bool swa_full : {false, true}) {
      LlamaModel target(ctx(), f, engine(device, swa_full, 4)), draft(ctx(), f, engine(device, swa_full, 4));
      SpeculativeOptions so;
      so.draft_tokens = 3;
      so.forced_acceptance = 0.5;
      SpeculativeDecoder spec(draft, so);
      std::vector<int32_t> cached(prompt.begin(), prompt.end() - 1);
      target.prefill(cached);
      int32_t next = prompt.back();
      std::vector<int32_t> out;
      while (out.size() < 20) {
        const std::vector<int32_t> got = spec.step(target, cached, next, 3);
        for (int32_t id : got) {
          cached.push_back(next);
          next = id;
          out.push_back(id);
        }
      }
      EXPECT_LT(spec.stats().accepted, spec.stats().proposed) << "some proposals rolled back";
      outs.push_back(out);
    }
    EXPECT_EQ(outs[0], outs[1]) << to_string(device);
  }
}

// --swa-full on the commands that build an engine; bench-llm reports the rings as a fixed part
// beside the bytes per token (and none with --swa-full), and rewinds or refills its depth.
TEST(SwaRingCache, CommandLine) {
  const fs::path dir = fixture("gemma3");
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  for (const char* cmd : {"generate", "chat", "serve", "bench-llm", "bench-batched"}) {
    auto r = test::run_cli(std::string(cmd) + " --help");
    EXPECT_NE(r.out.find("--swa-full"), std::string::npos) << cmd;
  }
  // five rings of 5 + 4 rows and one global layer of 64 positions, 2 x 16 floats per position
  const std::string args = "bench-llm --backend cpu --model " + test::quote(dir.string()) +
                           " -p 0 -n 4 -d 60 -r 1 --no-warmup --bandwidth 0 --batch 4";
  auto r = test::run_cli(args);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("KV cache: f32, 14.0 KB for 64 positions, 0.1 KiB per token + 5.8 KB fixed"), std::string::npos)
      << r.out;
  r = test::run_cli(args + " --swa-full");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("KV cache: f32, 49.2 KB for 64 positions, 0.8 KiB per token\n"), std::string::npos) << r.out;
}

// The serving engine's pool of the sliding-window layers' own (BatchedOptions::swa_blocks): two
// sequences in steps of prompt chunks and decode tokens (blocks of 3 tokens, window 5), each freeing
// its sliding-layer blocks behind its window before a step and the other taking them; every
// logit the same bits as with the one pool; fewer bytes; a table that frees a block the window
// still reads is refused, as is the option on the CPU engine and on a model without a window.
TEST(SwaRingCache, ServingPoolFreesBlocksBehindTheWindow) {
  const fs::path dir = fixture("gemma3");
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  const ModelFile f = open_model(dir, {false, false});
  const int window = int(*f.config().sliding_window), V = int(f.config().vocab_size);
  LlamaModel m(ctx(), f, engine(Device::Gpu, false, 8));
  BatchedOptions bo;
  bo.max_tokens = 32;
  bo.max_rows = 4;
  bo.block_tokens = 3;
  bo.blocks = 40;
  bo.split_len = 16;
  BatchedLlama one(m, bo);
  bo.swa_blocks = 10;  // two sequences' windows and chunks: (5 + 7) / 3 + 1 blocks each at most
  BatchedLlama two(m, bo);
  EXPECT_LT(two.kv_bytes(), one.kv_bytes());

  struct Run {
    std::vector<int32_t> tokens;
    int prompt = 0, chunk = 0, cached = 0;
    std::vector<int32_t> blocks, swa;
  };
  std::vector<Run> runs(2);
  for (int i = 0; i < 40; ++i) runs[0].tokens.push_back(int32_t((i * 7919 + 13) % V));
  for (int i = 0; i < 35; ++i) runs[1].tokens.push_back(int32_t((i * 104729 + 5) % V));
  runs[0].prompt = 27, runs[0].chunk = 7;
  runs[1].prompt = 20, runs[1].chunk = 6;
  std::vector<int32_t> free_main, free_swa;
  for (int i = 0; i < bo.blocks; ++i) free_main.push_back((i * 7 + 3) % bo.blocks);
  for (int i = 0; i < bo.swa_blocks; ++i) free_swa.push_back(i);
  const int B = bo.block_tokens;
  int swa_taken = 0, steps = 0;
  for (int step = 0;; ++step) {
    std::vector<StepSequence> q;
    std::vector<int> n;
    for (size_t r = 0; r < runs.size(); ++r) {
      Run& s = runs[r];
      if ((r == 1 && step < 2) || s.cached >= int(s.tokens.size())) continue;  // the second starts later
      const int k = s.cached < s.prompt ? std::min(s.chunk, s.prompt - s.cached) : 1;
      // the sliding layers' blocks that end before this step's first window: freed
      const int lo = std::max(0, s.cached - window + 1);
      for (int b = 0; b < int(s.swa.size()); ++b)
        if ((b + 1) * B <= lo && s.swa[size_t(b)] >= 0) {
          free_swa.push_back(s.swa[size_t(b)]);
          s.swa[size_t(b)] = -1;
        }
      while (int(s.blocks.size()) * B < s.cached + k) {
        ASSERT_FALSE(free_main.empty());
        s.blocks.push_back(free_main.back());
        free_main.pop_back();
      }
      while (int(s.swa.size()) * B < s.cached + k) {
        ASSERT_FALSE(free_swa.empty()) << "the sliding-window pool is used up at step " << step;
        s.swa.push_back(free_swa.back());
        free_swa.pop_back();
        ++swa_taken;
      }
      StepSequence sq;
      sq.tokens = std::span<const int32_t>(s.tokens).subspan(size_t(s.cached), size_t(k));
      sq.pos0 = s.cached;
      sq.blocks = s.blocks;
      sq.swa_blocks = s.swa;
      sq.full = true;
      q.push_back(sq);
      n.push_back(k);
    }
    if (q.empty()) break;
    if (step == 6) {  // a block the first sequence's window still reads, freed: refused
      std::vector<int32_t> bad = runs[0].swa;
      bad[size_t((q[0].pos0 - 1) / B)] = -1;
      std::vector<StepSequence> bq = q;
      bq[0].swa_blocks = bad;
      EXPECT_THROW(two.step(bq), Error);
    }
    const auto a = one.step(q), b = two.step(q);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_TRUE(same_bits(a[i].logits, b[i].logits)) << "step " << step << ", sequence " << i;
    size_t i = 0;
    for (size_t r = 0; r < runs.size(); ++r)
      if (i < q.size() && q[i].tokens.data() == runs[r].tokens.data() + runs[r].cached) runs[r].cached += n[i++];
    ++steps;
  }
  EXPECT_EQ(steps, 21);
  EXPECT_GT(swa_taken, bo.swa_blocks) << "freed blocks were taken again";

  LlamaModel cpu(ctx(), f, engine(Device::Cpu, false, 8));
  EXPECT_THROW(BatchedLlama(cpu, bo), Error);
  const ModelFile plain = open_model(fixture("llama3-rope"), {false, false});
  LlamaModel pm(ctx(), plain, engine(Device::Gpu, false, 8));
  EXPECT_THROW(BatchedLlama(pm, bo), Error);
}

// The scheduler with the sliding layers' pool (SchedulerOptions::kv_swa_blocks): requests run
// together for several windows give the tokens (and log probabilities) they give with the one
// pool; a pool smaller than one sequence's share, or on a model without a window, is refused.
TEST(SwaRingCache, SchedulerFreesTheSlidingLayersBlocks) {
  const fs::path dir = fixture("gemma3");
  WGC_REQUIRE_FILE(dir / "golden.safetensors");
  const ModelFile f = open_model(dir, {false, false});
  const int V = int(f.config().vocab_size);
  LlamaModel m(ctx(), f, engine(Device::Gpu, false, 8));
  const Tokenizer tok = *find_tokenizer(f);
  std::vector<Request> reqs(3);
  for (size_t r = 0; r < reqs.size(); ++r) {
    for (int i = 0; i < 9 + 5 * int(r); ++i) reqs[r].prompt.push_back(int32_t((i * 7919 + int(r) * 131 + 13) % V));
    reqs[r].sampling.temperature = 0;
    reqs[r].max_tokens = 18;
    reqs[r].ignore_eos = true;
    reqs[r].top_logprobs = 0;
  }
  auto run = [&](const SchedulerOptions& so) {
    std::vector<std::vector<std::pair<int32_t, float>>> out(reqs.size());
    std::mutex mu;
    {
      Scheduler s(m, tok, so);
      for (size_t r = 0; r < reqs.size(); ++r)
        s.submit(
            reqs[r],
            [&, r](const TokenEvent& e) {
              std::lock_guard lk(mu);
              out[r].push_back({e.id, e.logprob});
              return true;
            },
            [](const RequestResult& res) { EXPECT_TRUE(res.error.empty()) << res.error; });
      s.drain();
    }
    return out;
  };
  SchedulerOptions so;
  so.parallel = 3;
  so.max_queue = 8;
  so.kv_block_tokens = 4;
  so.prefill_chunk = 6;
  so.linear = LinearVersion::Batched;
  const auto want = run(so);
  so.kv_swa_blocks = 3 * ((5 + 6 + 1) / 4 + 2);  // three sequences' shares
  const auto got = run(so);
  for (size_t r = 0; r < reqs.size(); ++r) {
    EXPECT_EQ(want[r].size(), 18u) << r;
    EXPECT_EQ(got[r], want[r]) << "request " << r;
  }
  so.kv_swa_blocks = 4;
  EXPECT_THROW(Scheduler(m, tok, so), Error);
}
