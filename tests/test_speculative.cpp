// Speculative decoding (llm/generate/speculative.h): the greedy output with a draft model equals the
// target's alone, token for token, on the GPU engine (SwiftShader here) and the CPU engine, with a
// draft that agrees often (the same model) and one that agrees rarely (random weights of the same
// vocabulary), with rounds cut by max_tokens, stop strings and end-of-turn tokens in the middle of
// a draft; the speculative sampling rule's output distribution on a tiny vocabulary; the draft
// check (vocabulary, tokenizer); greedy_all against all_logits; the CLI (generate --draft-model,
// bench-llm --draft-model).
#include "llm/formats/safetensors.h"
#include "llm/generate/generator.h"
#include "llm/generate/speculative.h"
#include "llm/serve/scheduler.h"
#include "llm/synth/synth_model.h"
#include "test_llm_util.h"

#include <algorithm>
#include <mutex>
#include <random>
#include <sstream>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;
using wgc::test::ctx;
using wgc::test::quote;
using wgc::test::run_cli;

namespace {

fs::path tiny_llama2() { return test::fixtures_dir() / "tiny-llama2-f32"; }
fs::path tiny_llama3() { return test::fixtures_dir() / "tiny-llama3-bf16"; }

EngineOptions engine(Device d) {
  EngineOptions eo;
  eo.max_ctx = 96;
  eo.max_batch = 32;
  eo.progress = false;
  eo.device = d;
  return eo;
}

// A random-weight model of the built-in model's vocabulary (8192): a draft that rarely agrees.
const fs::path& random_draft_file() {
  static const fs::path path = [] {
    synth::ModelShape s = synth::find_shape("tiny");
    s.vocab = 8192;
    const fs::path p = test::temp_dir("speculative") / "random-8192.gguf";
    GgufWriteOptions wo;
    wo.progress = false;
    synth::SynthModel(s, TensorType::Q8_0, 5).write(p, wo);
    return p;
  }();
  return path;
}

// The built-in model as target, and the drafts, once per engine.
struct Models {
  ModelFile target_file, random_file;
  LlamaModel target, same, random;
  Tokenizer tok;
};
Models* load(Device d) {
  ModelFile t = open_model(test::default_model(), {false, false});
  ModelFile r = open_model(random_draft_file(), {false, false});
  LlamaModel target(ctx(), t, engine(d)), same(ctx(), t, engine(d)), random(ctx(), r, engine(d));
  Tokenizer tok = *find_tokenizer(t);
  return new Models{std::move(t), std::move(r), std::move(target), std::move(same), std::move(random), std::move(tok)};
}
Models& models(Device d) {
  if (d == Device::Cpu) {
    static Models* cpu = load(Device::Cpu);
    return *cpu;
  }
  static Models* gpu = load(Device::Gpu);
  return *gpu;
}

GenerateOptions greedy(int n) {
  GenerateOptions o;
  o.sampling.temperature = 0;
  o.max_tokens = n;
  return o;
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::ostringstream s;
  for (int32_t id : ids) s << id << ' ';
  return s.str();
}

class SpeculativeOn : public testing::TestWithParam<Device> {};
INSTANTIATE_TEST_SUITE_P(Engines, SpeculativeOn, testing::Values(Device::Cpu, Device::Gpu),
                         [](const testing::TestParamInfo<Device>& i) { return std::string(to_string(i.param)); });

}  // namespace

// The verification pass: every position's argmax equals all_logits' (first index of the largest).
TEST_P(SpeculativeOn, GreedyAllIsTheArgmaxOfEveryPosition) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(GetParam());
  auto ids = m.tok.encode("The moon is a bright star", true);
  m.target.rewind(0);
  const auto all = m.target.all_logits(ids);
  m.target.rewind(0);
  const auto got = m.target.greedy_all(ids);
  EXPECT_EQ(m.target.n_past(), int(ids.size()));
  ASSERT_EQ(got.size(), ids.size());
  const size_t vocab = size_t(m.target.config().vocab_size);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto row = all.begin() + std::ptrdiff_t(i * vocab);
    EXPECT_EQ(got[i], int32_t(std::max_element(row, row + std::ptrdiff_t(vocab)) - row)) << i;
  }
  m.target.rewind(0);
}

// Greedy output with either draft equals the target's alone, for several round sizes and
// lengths that end rounds in the middle (max_tokens), stop strings and end-of-turn tokens.
TEST_P(SpeculativeOn, GreedyOutputEqualsTheTargetAlone) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(GetParam());
  Generator plain(m.target, m.tok);
  struct Case {
    std::string prompt;
    int n;
    std::vector<std::string> stop;
  };
  // "Computer science" ends its definition with <|end_of_text|> within 40 tokens. SwiftShader runs
  // the GPU engine ~50x slower than the CPU engine: "The moon" alone there.
  const bool gpu = GetParam() == Device::Gpu;
  std::vector<Case> cases{{"Computer science is", 40, {}}, {"The moon", 23, {}}, {"Love is", 17, {}}};
  if (gpu) cases = {{"The moon", 23, {}}};
  const size_t moon = gpu ? 0 : 1;
  const std::vector<int> ks = gpu ? std::vector<int>{4} : std::vector<int>{1, 3, 5};
  const std::vector<size_t> cuts = gpu ? std::vector<size_t>{9} : std::vector<size_t>{3, 9, 14};
  std::vector<GenerateResult> want;
  for (const Case& c : cases) {
    plain.reset();
    GenerateOptions o = greedy(c.n);
    want.push_back(plain.generate(c.prompt, o));
  }
  if (!gpu) {
    EXPECT_EQ(want[0].stop, StopReason::Eos) << want[0].text;
  }
  for (LlamaModel* draft : {&m.same, &m.random}) {
    const bool same = draft == &m.same;
    for (int k : same || !gpu ? ks : std::vector<int>{2}) {  // the random draft's proposals are mostly wasted steps
      Generator gen(m.target, m.tok);
      SpeculativeOptions so;
      so.draft_tokens = k;
      gen.set_draft(draft, so);
      for (size_t i = 0; i < cases.size(); ++i) {
        const std::string what =
            std::string(same ? "same" : "random") + " draft, k " + std::to_string(k) + ", '" + cases[i].prompt + "'";
        gen.reset();
        auto r = gen.generate(cases[i].prompt, greedy(cases[i].n));
        EXPECT_EQ(ids_str(r.ids), ids_str(want[i].ids)) << what;
        EXPECT_EQ(r.text, want[i].text) << what;
        EXPECT_EQ(r.stop, want[i].stop) << what;
        EXPECT_EQ(r.stop_id, want[i].stop_id) << what;
        EXPECT_TRUE(r.timings.speculative);
        EXPECT_EQ(r.timings.generated_tokens, int(r.ids.size()));
        EXPECT_EQ(gen.cached().size(), size_t(m.target.n_past())) << what;
        if (same) {
          // The same model agrees but where the one-token kernels (the draft's steps) and the
          // many-token ones (the verify pass) round 8-bit activations apart: on SwiftShader 16 of
          // 20 proposals kept for "The moon" (17 of 17 with f32 activations, --no-q8); the tokens
          // handed out are the target's either way.
          EXPECT_GE(r.timings.acceptance(), gpu ? 0.7 : 0.8) << what;
          EXPECT_LT(r.timings.decode_steps, r.timings.decode_tokens) << what;
        } else {  // the random draft rarely does: most rounds keep nothing
          EXPECT_LT(r.timings.acceptance(), 0.5) << what;
          EXPECT_GT(r.timings.draft_proposed, 10) << what;
        }
      }
    }
    // Stop strings that end the text in the middle of a round.
    if (gpu && !same) continue;
    Generator gen(m.target, m.tok);
    gen.set_draft(draft, {});
    for (size_t cut : cuts) {
      ASSERT_GT(want[moon].text.size(), cut + 4);
      GenerateOptions o = greedy(23);
      o.stop = {want[moon].text.substr(cut, 4)};
      plain.reset();
      auto ref = plain.generate("The moon", o);
      gen.reset();
      auto r = gen.generate("The moon", o);
      EXPECT_EQ(r.stop, StopReason::StopString);
      EXPECT_EQ(r.text, ref.text) << cut;
      EXPECT_EQ(ids_str(r.ids), ids_str(ref.ids)) << cut;
      // The next turn reuses what the cache holds.
      auto more = gen.generate("The moon", greedy(4));
      EXPECT_EQ(ids_str(more.ids), ids_str(std::vector<int32_t>(want[moon].ids.begin(), want[moon].ids.begin() + 4)));
    }
  }
}

// The fixture model (f32 weights, transformers' goldens) with its Q8_0 file as draft: the target's
// greedy tokens, and the goldens where they are not near-ties.
TEST(Speculative, TinyLlama2WithItsQ8Draft) {
  WGC_REQUIRE_FILE(tiny_llama2() / "tiny-llama2-f32-q8_0.gguf");
  WGC_REQUIRE_FILE(tiny_llama2() / "golden.safetensors");
  ModelFile tf = open_model(tiny_llama2() / "tiny-llama2-f32-f32.gguf", {false, false});
  ModelFile df = open_model(tiny_llama2() / "tiny-llama2-f32-q8_0.gguf", {false, false});
  const auto golden = SafetensorsFile::open(tiny_llama2() / "golden.safetensors");
  const auto prompt = test::tensor_values<int32_t>(golden, "p0.tokens");
  const auto greedy_golden = test::tensor_values<int32_t>(golden, "p0.greedy");
  for (Device d : {Device::Cpu, Device::Gpu}) {
    LlamaModel target(ctx(), tf, engine(d)), draft(ctx(), df, engine(d));
    Generator plain(target, find_tokenizer(tf));
    GenerateOptions o = greedy(20);
    o.ignore_eos = true;
    auto want = plain.generate(std::span<const int32_t>(prompt), o);
    plain.reset();
    Generator gen(target, find_tokenizer(tf));
    auto dt = find_tokenizer(df);
    gen.set_draft(&draft, {}, dt ? &*dt : nullptr, "q8_0");
    auto r = gen.generate(std::span<const int32_t>(prompt), o);
    EXPECT_EQ(ids_str(r.ids), ids_str(want.ids)) << to_string(d);
    EXPECT_GT(r.timings.draft_accepted, 0) << to_string(d);
    ASSERT_GE(r.ids.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r.ids[i], greedy_golden[i]) << to_string(d) << " " << i;
  }
}

// A draft of another tokenizer or vocabulary is refused, naming both sizes or the first
// differing id; the built-in model's tokenizer against itself passes.
TEST(Speculative, DraftMustShareTheTokenizer) {
  WGC_REQUIRE_FILE(tiny_llama3() / "tiny-llama3-bf16-f16.gguf");
  WGC_REQUIRE_FILE(tiny_llama2() / "tiny-llama2-f32-f32.gguf");
  ModelFile l2 = open_model(tiny_llama2() / "tiny-llama2-f32-f32.gguf", {false, false});
  ModelFile l3 = open_model(tiny_llama3() / "tiny-llama3-bf16-f16.gguf", {false, false});
  auto t2 = find_tokenizer(l2), t3 = find_tokenizer(l3);
  ASSERT_TRUE(t2 && t3);
  try {
    check_draft(l2.config(), &*t2, l3.config(), &*t3, "l3.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(test::has(e.what(), "l3.gguf")) << e.what();
    EXPECT_TRUE(test::has(e.what(), "128256")) << e.what();
    EXPECT_TRUE(test::has(e.what(), "32000")) << e.what();
  }
  try {  // no tokenizers: the vocabulary sizes
    check_draft(l2.config(), nullptr, l3.config(), nullptr, "l3.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(test::has(e.what(), "vocabulary of 128256")) << e.what();
  }
  // The same vocabulary size, other token texts: the synthetic 8192-token vocabulary.
  WGC_REQUIRE_FILE(test::default_model());
  ModelFile dict = open_model(test::default_model(), {false, false});
  ModelFile rnd = open_model(random_draft_file(), {false, false});
  auto td = find_tokenizer(dict), tr = find_tokenizer(rnd);
  ASSERT_TRUE(td && tr);
  check_draft(dict.config(), &*td, dict.config(), &*td, "itself");
  try {
    check_draft(dict.config(), &*td, rnd.config(), &*tr, "random.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(test::has(e.what(), "differs from the target's at id")) << e.what();
  }
}

// Penalties and grammars with a draft are refused, naming the option; a draft of its own cache and
// round sizes out of range too.
TEST(Speculative, PenaltiesAndBadOptionsAreRefused) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(Device::Cpu);
  Generator gen(m.target, m.tok);
  gen.set_draft(&m.same, {});
  GenerateOptions o = greedy(4);
  o.sampling.repeat_penalty = 1.3f;
  try {
    gen.generate("The moon", o);
    FAIL() << "no error";
  } catch (const OptionError& e) {
    EXPECT_TRUE(test::has(e.what(), "repeat_penalty")) << e.what();
  }
  EXPECT_THROW(gen.set_draft(&m.target, {}), Error);  // its own cache
  SpeculativeOptions bad;
  bad.draft_tokens = 0;
  EXPECT_THROW(gen.set_draft(&m.same, bad), OptionError);
  bad.draft_tokens = kMaxDraftTokens + 1;
  EXPECT_THROW(gen.set_draft(&m.same, bad), OptionError);
}

// The speculative sampling rule on a 5-token vocabulary: whole generations of 6 tokens in rounds of
// up to 3 proposals drawn from q, each position's token counted over 40,000 runs, match the
// target's p at that position (chi-square, 4 degrees of freedom, < 25: p ~ 5e-5 for a correct
// rule); the proposals themselves (what keeping every one would give) do not.
TEST(SpeculativeSample, TokensAreDistributedAsTheTargets) {
  constexpr size_t V = 5, L = 6;
  constexpr int N = 40000;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  auto row = [&](bool with_zero) {
    std::vector<double> r(V);
    double sum = 0;
    for (auto& x : r) sum += x = 0.05 + u01(rng);
    if (with_zero) sum -= r[2], r[2] = 0;  // a token one side never gives
    for (auto& x : r) x /= sum;
    return r;
  };
  std::vector<std::vector<double>> p, q;
  for (size_t j = 0; j < L; ++j) {
    p.push_back(row(j == 1));
    q.push_back(row(j == 3));
  }
  auto uniform = [&] { return u01(rng); };
  auto draw = [&](const std::vector<double>& w) {
    double at = uniform(), cum = 0;
    for (size_t t = 0; t < V; ++t)
      if (at < (cum += w[t])) return int32_t(t);
    return int32_t(V - 1);
  };
  std::vector<std::vector<int>> got(L, std::vector<int>(V)), proposed(L, std::vector<int>(V));
  int kept = 0, drafted = 0;
  for (int n = 0; n < N; ++n) {
    std::vector<int32_t> out;
    while (out.size() < L) {
      const size_t j0 = out.size();
      const size_t k = std::min<size_t>(3, L - j0 - 1);
      std::vector<int32_t> d;
      for (size_t i = 0; i < k; ++i) {
        d.push_back(draw(q[j0 + i]));
        ++proposed[j0 + i][size_t(d.back())];
      }
      auto r = speculative_sample(std::span(p).subspan(j0, k + 1), std::span(q).subspan(j0, k), d, uniform);
      ASSERT_LE(r.kept, k);
      kept += int(r.kept);
      drafted += int(k);
      out.insert(out.end(), d.begin(), d.begin() + std::ptrdiff_t(r.kept));
      out.push_back(r.next);
    }
    for (size_t j = 0; j < L; ++j) ++got[j][size_t(out[j])];
  }
  auto chi2 = [&](const std::vector<int>& counts, const std::vector<double>& want) {
    double c = 0, total = 0;
    for (int x : counts) total += x;
    for (size_t t = 0; t < V; ++t) {
      if (want[t] == 0) {
        if (counts[t] != 0) return 1e9;  // a token p never gives
        continue;
      }
      const double e = total * want[t];
      c += (counts[t] - e) * (counts[t] - e) / e;
    }
    return c;
  };
  for (size_t j = 0; j < L; ++j) {
    EXPECT_LT(chi2(got[j], p[j]), 25.0) << "position " << j;
    int n_proposed = 0;
    for (int x : proposed[j]) n_proposed += x;
    if (n_proposed >= 5000) {  // the last position is never proposed (a round ends with the target's token)
      EXPECT_GT(chi2(proposed[j], p[j]), 100.0) << "position " << j << ": the test could not tell q from p";
    }
  }
  EXPECT_GT(kept, drafted / 4);  // the rule keeps many, not none
  EXPECT_LT(kept, drafted);
  EXPECT_THROW(speculative_sample(std::span(p).first(1), std::span(q).first(1), std::vector<int32_t>{0}, uniform),
               Error);
}

// Sampling with a draft: the same model as draft has p = q, so nearly every proposal is kept (up
// to the kernels' rounding); the tokens are reproducible for a seed; a random draft keeps fewer.
// On the CPU engine only: the rule is the engines' logits and all_logits, checked above and in
// test_llm_engines (on SwiftShader this test alone took 100 s).
// The rule over the Sampler's candidate lists (the scheduler's form) draws what the dense rule
// draws with the same numbers: random candidate sets over a vocabulary of 12.
TEST(SpeculativeSample, CandidateListsEqualDenseRows) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const size_t vocab = 12;
  auto random_row = [&] {
    std::vector<Sampler::Candidate> c;
    double total = 0;
    for (size_t id = 0; id < vocab; ++id)
      if (u(rng) < 0.4) {
        c.push_back({int32_t(id), 0.f, u(rng) + 0.01});
        total += c.back().p;
      }
    if (c.empty()) c.push_back({int32_t(rng() % vocab), 0.f, total = 1.0});
    for (auto& x : c) x.p /= total;
    return c;
  };
  auto dense = [&](const std::vector<Sampler::Candidate>& c) {
    std::vector<double> d(vocab, 0.0);
    for (const auto& x : c) d[size_t(x.id)] = x.p;
    return d;
  };
  int kept_some = 0, refused_some = 0;
  for (int round = 0; round < 300; ++round) {
    const size_t k = 1 + size_t(rng() % 4);
    std::vector<std::vector<Sampler::Candidate>> p, q;
    std::vector<std::vector<double>> pd, qd;
    std::vector<int32_t> draft;
    for (size_t i = 0; i <= k; ++i) {
      p.push_back(random_row());
      pd.push_back(dense(p.back()));
    }
    for (size_t i = 0; i < k; ++i) {
      q.push_back(random_row());
      qd.push_back(dense(q.back()));
      draft.push_back(q.back()[rng() % q.back().size()].id);
    }
    std::vector<double> numbers(2 * k + 2);
    for (double& x : numbers) x = u(rng);
    size_t a = 0, b = 0;
    const SampledRound sparse = speculative_sample(p, q, draft, [&] { return numbers.at(a++); });
    const SampledRound want = speculative_sample(pd, qd, draft, [&] { return numbers.at(b++); });
    EXPECT_EQ(sparse.kept, want.kept) << round;
    EXPECT_EQ(sparse.next, want.next) << round;
    kept_some += sparse.kept > 0;
    refused_some += sparse.kept < k;
  }
  EXPECT_GT(kept_some, 30);
  EXPECT_GT(refused_some, 30);
}

TEST(Speculative, SamplingKeepsWhatTheTargetWouldDraw) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(Device::Cpu);
  GenerateOptions o;
  o.sampling.temperature = 0.8f;
  o.sampling.top_p = 0.95f;
  o.sampling.seed = 3;
  o.max_tokens = 16;
  o.ignore_eos = true;
  Generator gen(m.target, m.tok);
  gen.set_draft(&m.same, {});
  auto a = gen.generate("The moon", o);
  gen.reset();
  auto b = gen.generate("The moon", o);
  EXPECT_EQ(ids_str(a.ids), ids_str(b.ids));
  EXPECT_EQ(a.ids.size(), 16u);
  EXPECT_GT(a.timings.acceptance(), 0.9) << a.timings.draft_accepted << " of " << a.timings.draft_proposed;
  EXPECT_LT(a.timings.decode_steps, 8);
  gen.set_draft(&m.random, {});
  auto c = gen.generate("The moon", o);
  EXPECT_EQ(c.ids.size(), 16u);
  EXPECT_LT(c.timings.acceptance(), 0.6);
}

// A round near the end of the context proposes only what fits; generation stops at the context.
TEST(Speculative, ContextFullInTheMiddleOfARound) {
  WGC_REQUIRE_FILE(test::default_model());
  ModelFile f = open_model(test::default_model(), {false, false});
  EngineOptions eo = engine(Device::Cpu);
  eo.max_ctx = 16;
  LlamaModel target(ctx(), f, eo), draft(ctx(), f, eo);
  Tokenizer tok = *find_tokenizer(f);
  Generator plain(target, tok);
  GenerateOptions o = greedy(100);
  o.ignore_eos = true;
  auto want = plain.generate("The moon", o);
  ASSERT_EQ(want.stop, StopReason::ContextFull);
  plain.reset();
  Generator gen(target, tok);
  SpeculativeOptions so;
  so.draft_tokens = 6;
  gen.set_draft(&draft, so);
  auto r = gen.generate("The moon", o);
  EXPECT_EQ(r.stop, StopReason::ContextFull);
  EXPECT_EQ(ids_str(r.ids), ids_str(want.ids));
  EXPECT_EQ(r.message, want.message);
}

// ---- the serving scheduler with a draft (llm/serve/scheduler.h) ------------------------------

namespace {

// What one served request gave.
struct Served {
  std::vector<int32_t> ids;
  std::vector<TokenEvent> events;
  std::string text;
  RequestResult result;
};

// The requests served together (`parallel` at once, the rest queued) by a scheduler over target,
// with `draft` proposing k tokens (none: plain decode); the stats at the end.
std::vector<Served> serve_all(LlamaModel& target, const Tokenizer& tok, LlamaModel* draft, int k,
                              const std::vector<Request>& reqs, SchedulerStats* stats, int parallel = 4) {
  SchedulerOptions o;
  o.parallel = parallel;
  o.max_queue = 16;
  o.prefill_chunk = 7;  // prompts in several chunks, beside the others' verify chunks
  o.draft = draft;
  o.draft_tokens = k;
  std::vector<Served> out(reqs.size());
  Scheduler sched(target, tok, o);
  for (size_t i = 0; i < reqs.size(); ++i) {
    Served* sv = &out[i];
    sched.submit(
        reqs[i],
        [sv](const TokenEvent& e) {
          sv->ids.push_back(e.id);
          sv->events.push_back(e);
          sv->text += e.text;
          return true;
        },
        [sv](const RequestResult& r) {
          sv->result = r;
          sv->text += r.text_tail;
        });
  }
  sched.drain();
  if (stats) *stats = sched.stats();
  return out;
}

Request served_request(const Tokenizer& tok, const std::string& prompt, int max_tokens) {
  Request r;
  r.prompt = tok.encode(prompt, true);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  return r;
}

// Each request's tokens, text, logprobs and end equal.
void expect_same(const std::vector<Served>& got, const std::vector<Served>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string w = what + ", request " + std::to_string(i);
    EXPECT_EQ(ids_str(got[i].ids), ids_str(want[i].ids)) << w;
    EXPECT_EQ(got[i].text, want[i].text) << w;
    EXPECT_EQ(got[i].result.stop, want[i].result.stop) << w;
    EXPECT_EQ(got[i].result.completion_tokens, want[i].result.completion_tokens) << w;
    EXPECT_TRUE(got[i].result.error.empty()) << w << ": " << got[i].result.error;
    ASSERT_EQ(got[i].events.size(), want[i].events.size()) << w;
    for (size_t t = 0; t < got[i].events.size(); ++t) {
      EXPECT_EQ(got[i].events[t].logprob, want[i].events[t].logprob) << w << ", token " << t;
      EXPECT_EQ(got[i].events[t].top, want[i].events[t].top) << w << ", token " << t;
    }
  }
}

}  // namespace

// Greedy requests served with a draft give the scheduler's tokens without it, token for token
// (the serving engine is batch-invariant, so the verify chunk's rows are the plain steps' rows):
// several concurrent requests of different lengths, one queued behind the others, ending by
// max_tokens inside a verified run, by <|end_of_text|>, by a stop string, with logprobs; a
// penalised request beside them decodes plainly (the same tokens). The same model as draft agrees
// on every proposal (its steps are the serving engine's too); a random one rarely.
TEST(SpeculativeServing, GreedyTokensEqualTheSchedulerWithoutADraft) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(Device::Cpu);
  std::vector<Request> reqs{served_request(m.tok, "Computer science is", 40),
                            served_request(m.tok, "The moon", 23),
                            served_request(m.tok, "Love is", 11),
                            served_request(m.tok, "The sun is a star that", 7),
                            served_request(m.tok, "A", 1),
                            served_request(m.tok, "The moon", 20)};
  reqs[2].top_logprobs = 3;
  Request penalised = served_request(m.tok, "A cat is", 9);
  penalised.sampling.repeat_penalty = 1.3f;
  reqs.push_back(penalised);
  SchedulerStats plain_stats;
  std::vector<Served> want = serve_all(m.target, m.tok, nullptr, 0, reqs, &plain_stats);
  EXPECT_EQ(want[0].result.stop, StopReason::Eos) << want[0].text;  // an end-of-turn token inside a run
  EXPECT_EQ(plain_stats.draft_proposed, 0u);
  // A stop string inside the text of request 1 (a run then ends in the middle).
  ASSERT_GT(want[5].text.size(), 14u);
  reqs[5].stop = {want[5].text.substr(10, 4)};
  want = serve_all(m.target, m.tok, nullptr, 0, reqs, nullptr);
  EXPECT_EQ(want[5].result.stop, StopReason::StopString);

  for (LlamaModel* draft : {&m.same, &m.random}) {
    const bool same = draft == &m.same;
    for (int k : same ? std::vector<int>{1, 4} : std::vector<int>{3}) {
      const std::string what = std::string(same ? "same" : "random") + " draft, k " + std::to_string(k);
      SchedulerStats st;
      std::vector<Served> got = serve_all(m.target, m.tok, draft, k, reqs, &st);
      expect_same(got, want, what);
      uint64_t proposed = 0, accepted = 0;
      for (const Served& sv : got) {
        proposed += uint64_t(sv.result.draft_proposed);
        accepted += uint64_t(sv.result.draft_accepted);
        EXPECT_LE(sv.result.draft_accepted, sv.result.draft_proposed);
      }
      EXPECT_EQ(got[4].result.draft_proposed, 0) << what;  // max_tokens 1: nothing to propose
      EXPECT_EQ(got[6].result.draft_proposed, 0) << what;  // penalties: plain decode
      EXPECT_EQ(st.draft_proposed, proposed) << what;
      EXPECT_EQ(st.draft_accepted, accepted) << what;
      EXPECT_GT(st.draft_verifies, 0u) << what;
      EXPECT_GT(proposed, 20u) << what;
      if (same)
        EXPECT_EQ(accepted, proposed) << what;
      else
        EXPECT_LT(accepted * 2, proposed) << what;
      EXPECT_EQ(st.kv_blocks_used, 0) << what;  // every block back (the cached ones unreferenced)
    }
  }
}

// Sampled requests speculate by the speculative sampling rule with their own Sampler: a seed gives
// the same tokens alone and among others (batch invariance holds), the same model as draft has
// every proposal kept (p = q), a random draft has most refused and still ends each request where
// it should; top-k (candidates from the device) and top-p (full rows) plans.
TEST(SpeculativeServing, SampledRequestsFollowTheirSeed) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(Device::Cpu);
  std::vector<Request> reqs;
  for (int i = 0; i < 4; ++i) {
    Request r = served_request(m.tok, i % 2 ? "The moon" : "Love is", 10 + 3 * i);
    r.sampling.temperature = 0.9f;
    r.sampling.seed = uint64_t(7 + i);
    r.ignore_eos = true;  // every request its max_tokens
    if (i < 2)
      r.sampling.top_k = 20;  // TopK plans; the others: top-p over full rows
    else
      r.sampling.top_p = 0.9f;
    reqs.push_back(r);
  }
  for (LlamaModel* draft : {&m.same, &m.random}) {
    const bool same = draft == &m.same;
    const std::string what = same ? "same draft" : "random draft";
    SchedulerStats st;
    std::vector<Served> together = serve_all(m.target, m.tok, draft, 3, reqs, &st);
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (i == 1 || i == 2) {  // alone: a top-k plan and a top-p one
        std::vector<Served> alone = serve_all(m.target, m.tok, draft, 3, {reqs[i]}, nullptr);
        expect_same({together[i]}, alone, what + ", alone vs together");
      }
      EXPECT_EQ(together[i].result.completion_tokens, reqs[i].max_tokens) << what << " " << i;
      EXPECT_GT(together[i].result.draft_proposed, 0) << what << " " << i;
    }
    EXPECT_GT(st.draft_proposed, 20u) << what;
    if (same)
      EXPECT_EQ(st.draft_accepted, st.draft_proposed) << what;
    else
      EXPECT_LT(st.draft_accepted * 2, st.draft_proposed) << what;
  }
}

// A request whose prompt continues an earlier one's output takes its published blocks from the
// prefix cache, in both pools: the draft's copy of them was written when the earlier request ran
// (prompt chunks and verified tokens alike), so the same model as draft still agrees on every
// proposal, and the tokens are the scheduler's without a draft.
TEST(SpeculativeServing, CachedPrefixBlocksHoldTheDraftsKv) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(Device::Cpu);
  const Request first = served_request(m.tok, "Computer science is", 30);
  SchedulerOptions o;
  o.parallel = 2;
  o.prefill_chunk = 7;
  o.draft = &m.same;
  o.draft_tokens = 4;
  Scheduler sched(m.target, m.tok, o);
  auto one = [&](const Request& r) {
    Served sv;
    sched.submit(
        r,
        [&sv](const TokenEvent& e) {
          sv.ids.push_back(e.id);
          return true;
        },
        [&sv](const RequestResult& res) { sv.result = res; });
    sched.drain();
    return sv;
  };
  const Served a = one(first);
  ASSERT_GE(a.ids.size(), 20u);
  Request next = served_request(m.tok, "", 10);
  next.prompt = first.prompt;
  next.prompt.insert(next.prompt.end(), a.ids.begin(), a.ids.begin() + 20);
  const Served b = one(next);
  EXPECT_GE(b.result.cached_tokens, 16) << "the continuation found no cached block";
  EXPECT_GT(b.result.draft_proposed, 0);
  EXPECT_EQ(b.result.draft_accepted, b.result.draft_proposed);
  const std::vector<Served> want = serve_all(m.target, m.tok, nullptr, 0, {next}, nullptr);
  EXPECT_EQ(ids_str(b.ids), ids_str(want[0].ids));
}

// The same on the GPU engine (SwiftShader): the verify chunk's rows read back from the device,
// the draft's steps fed their argmax on the device (feed_row). Two short requests.
TEST(SpeculativeServing, GreedyTokensEqualOnTheGpuEngine) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(Device::Gpu);
  std::vector<Request> reqs{served_request(m.tok, "The moon", 9), served_request(m.tok, "Love is a", 6)};
  reqs[1].top_logprobs = 2;
  std::vector<Served> want = serve_all(m.target, m.tok, nullptr, 0, reqs, nullptr, 2);
  SchedulerStats st;
  std::vector<Served> got = serve_all(m.target, m.tok, &m.same, 3, reqs, &st, 2);
  expect_same(got, want, "gpu, same draft, k 3");
  EXPECT_GT(st.draft_proposed, 4u);
  EXPECT_EQ(st.draft_accepted, st.draft_proposed);
}

// Bad draft settings are refused when the scheduler starts, naming them.
TEST(SpeculativeServing, BadDraftOptionsAreRefused) {
  WGC_REQUIRE_FILE(test::default_model());
  auto& m = models(Device::Cpu);
  SchedulerOptions o;
  o.draft = &m.same;
  o.draft_tokens = kMaxDraftTokens + 1;
  try {
    Scheduler s(m.target, m.tok, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(test::has(e.what(), "draft_tokens")) << e.what();
  }
  o.draft_tokens = 2;
  o.max_ctx = 64;
  Scheduler fine(m.target, m.tok, o);  // a draft context of 96 holds 64
}

// The CLI: --draft-model gives the same JSON ids with the acceptance in the timings; sampling
// without --temp 0 is a usage error; bench-llm measures a forced acceptance rate.
TEST(SpeculativeCli, GenerateAndBench) {
  WGC_REQUIRE_FILE(test::default_model());
  const std::string model = quote(test::default_model().string());
  auto plain = run_cli("generate --backend cpu -p 'The moon' --temp 0 -n 12 --json");
  ASSERT_EQ(plain.rc, 0) << plain.err;
  auto spec = run_cli("generate --backend cpu -p 'The moon' --temp 0 -n 12 --json --draft-model " + model +
                      " --draft-tokens 4");
  ASSERT_EQ(spec.rc, 0) << spec.err;
  auto a = json::parse(plain.out, "plain"), b = json::parse(spec.out, "speculative");
  EXPECT_EQ(a["ids"].dump(), b["ids"].dump());
  EXPECT_GT(b["timings"]["acceptance"].as_double(), 0.8) << spec.out;
  EXPECT_GT(b["timings"]["decode_tokens_per_s"].as_double(), 0.0);
  EXPECT_LT(b["timings"]["decode_steps"].as_int(), b["timings"]["decode_tokens"].as_int());

  auto verbose = run_cli("generate --backend cpu -p 'The moon' --temp 0 -n 8 --draft-model " + model);
  ASSERT_EQ(verbose.rc, 0) << verbose.err;
  EXPECT_TRUE(test::has(verbose.err, "drafted tokens accepted")) << verbose.err;

  auto sampled = run_cli("generate --backend cpu -p 'The moon' -n 6 --seed 4 --json --draft-model " + model);
  ASSERT_EQ(sampled.rc, 0) << sampled.err;
  EXPECT_GT(json::parse(sampled.out, "sampled")["timings"]["draft_proposed"].as_int(), 0) << sampled.out;
  auto penalised = run_cli("generate --backend cpu -p 'The moon' -n 4 --repeat-penalty 1.2 --draft-model " + model);
  EXPECT_EQ(penalised.rc, 2) << penalised.err;
  EXPECT_TRUE(test::has(penalised.err, "--repeat-penalty")) << penalised.err;
  auto other = run_cli("generate --backend cpu -p 'The moon' --temp 0 -n 4 --draft-model " +
                       quote((tiny_llama2() / "tiny-llama2-f32-f32.gguf").string()));
  EXPECT_NE(other.rc, 0);
  EXPECT_TRUE(test::has(other.err, "draft model")) << other.err;
  EXPECT_TRUE(test::has(other.err, "32000")) << other.err;

  auto bench = run_cli("bench-llm --backend cpu -m " + model + " -p 0 -n 12 -r 1 --no-warmup --draft-model " + model +
                       " --draft-tokens 3 --draft-acceptance 0.5 --json -");
  ASSERT_EQ(bench.rc, 0) << bench.err;
  auto j = json::parse(bench.out, "bench-llm --json");
  ASSERT_EQ(j["results"].items().size(), 2u) << bench.out;
  const auto& s = j["results"].items()[1];
  EXPECT_EQ(s["draft_tokens"].as_int(), 3);
  EXPECT_GT(s["tokens_per_pass"].as_double(), 1.0);
  EXPECT_GT(s["tps_median"].as_double(), 0.0);
  EXPECT_TRUE(test::has(s["test"].as_string(), "draft3")) << bench.out;
}

// wgc serve checks the draft's tokenizer before it loads it (naming both files); bench-batched
// --draft-model measures the scheduler with and without the draft.
TEST(SpeculativeCli, ServeAndBenchBatched) {
  WGC_REQUIRE_FILE(test::default_model());
  WGC_REQUIRE_FILE(tiny_llama2() / "tiny-llama2-f32-f32.gguf");
  const std::string model = quote(test::default_model().string());
  const std::string other = (tiny_llama2() / "tiny-llama2-f32-f32.gguf").string();
  auto bad = run_cli("serve --backend cpu --port 0 --draft-model " + quote(other));
  EXPECT_NE(bad.rc, 0);
  EXPECT_TRUE(test::has(bad.err, "--draft-model " + other + " cannot draft for --model")) << bad.err;
  EXPECT_TRUE(test::has(bad.err, test::default_model().filename().string())) << bad.err;
  EXPECT_TRUE(test::has(bad.err, "32000")) << bad.err;
  auto k0 = run_cli("serve --backend cpu --port 0 --draft-model " + model + " --draft-tokens 0");
  EXPECT_EQ(k0.rc, 2) << k0.err;
  EXPECT_TRUE(test::has(k0.err, "--draft-tokens")) << k0.err;
  auto pool = run_cli("serve --backend cpu --port 0 --models-dir " + quote(test::temp_dir("serve-draft").string()) +
                      " --draft-model " + model);
  EXPECT_EQ(pool.rc, 2) << pool.err;
  EXPECT_TRUE(test::has(pool.err, "--draft-model serves one model")) << pool.err;

  auto bench = run_cli("bench-batched --backend cpu -m " + model + " --draft-model " + model +
                       " --parallel 1,3 -p 8 -n 10 --draft-tokens 2 --draft-acceptance 0.5,1 --no-warmup --json -");
  ASSERT_EQ(bench.rc, 0) << bench.err;
  auto j = json::parse(bench.out, "bench-batched --json");
  ASSERT_EQ(j["results"].items().size(), 6u) << bench.out;  // per B: plain, then P 0.5 and 1
  for (const auto& r : j["results"].items()) {
    EXPECT_GT(r["tg_tps"].as_double(), 0.0) << bench.out;
    if (r["draft_tokens"].as_int() == 0) continue;
    EXPECT_GT(r["tokens_per_pass"].as_double(), 1.0) << bench.out;
    EXPECT_LE(r["tokens_per_pass"].as_double(), 3.0) << bench.out;
  }
  EXPECT_DOUBLE_EQ(j["results"].items()[2]["acceptance"].as_double(), 1.0) << bench.out;  // P = 1: all kept
}
