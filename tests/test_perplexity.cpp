// llm::perplexity (llama-perplexity's method) against transformers: the fixtures hold, per prompt,
// the logits transformers computed for the last 4 (tiny-llama2) or 2 (tiny-llama3) positions, so
// a chunk that ends one token after the prompt (its greedy token) and scores exactly those
// positions has a reference perplexity computed here from transformers' logits alone. The
// chunking (BOS per chunk, second halves, running estimates) is checked against chunks scored
// whole; `wgc perplexity` prints llama-perplexity's lines.
#include "llm/formats/model_file.h"
#include "llm/formats/safetensors.h"
#include "llm/generate/default_model.h"
#include "llm/generate/perplexity.h"
#include "llm/model/llama.h"
#include "test_util.h"
#include "util/json.h"

#include <cmath>
#include <cstring>
#include <regex>

namespace wgc::llm {
namespace {

namespace fs = std::filesystem;
using test::quote;
using test::run_cli;

struct Golden {
  SafetensorsFile file;
  template <class T>
  std::vector<T> get(const std::string& name) const {
    return test::tensor_values<T>(file, name);
  }
};

EngineOptions engine(Device d, int max_ctx) {
  EngineOptions o;
  o.device = d;
  o.max_ctx = max_ctx;
  o.progress = false;
  return o;
}

struct Case {
  const char* folder;
  const char* file;  // in the folder ("": the folder itself, safetensors)
  double tolerance;  // |mean -log p - reference| (nats)
  bool gpu_too;      // also on the GPU engine (SwiftShader: slow, so the F32 model only)
};

// For every prompt: the chunk is the prompt and its greedy token, the scored positions the k whose
// logits transformers stored (each predicting the next prompt token, the last the greedy token).
TEST(Perplexity, EqualsTransformersOnTheFixtures) {
  const Case cases[] = {
      {"tiny-llama2-f32", "", 1e-4, true},
      {"tiny-llama2-f32", "tiny-llama2-f32-f32.gguf", 1e-4, false},
      {"tiny-llama2-f32", "tiny-llama2-f32-q8_0.gguf", 3e-2, false},
      {"tiny-llama3-bf16", "", 1e-4, false},
      {"tiny-llama3-bf16", "tiny-llama3-bf16-f16.gguf", 1e-2, false},
  };
  for (const auto& c : cases) {
    const fs::path dir = test::fixtures_dir() / c.folder;
    if (!fs::exists(dir / "golden.safetensors")) GTEST_SKIP() << "fixture not found: " << dir;
    const fs::path path = *c.file ? dir / c.file : dir;
    ModelFile mf = open_model(path, {false, false});
    const int64_t vocab = mf.config().vocab_size;
    Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
    for (Device d : {Device::Cpu, Device::Gpu}) {
      if (d == Device::Gpu && !c.gpu_too) continue;
      LlamaModel model(d == Device::Gpu ? std::optional<Context>(test::ctx()) : std::nullopt, mf, engine(d, 64));
      for (int p = 0; g.file.find("p" + std::to_string(p) + ".tokens"); ++p) {
        const std::string pre = "p" + std::to_string(p) + ".";
        auto tokens = g.get<int32_t>(pre + "tokens");
        const std::string lname = g.file.find(pre + "logits_last4") ? pre + "logits_last4" : pre + "logits_last2";
        const auto want = g.get<float>(lname);
        const size_t k = want.size() / size_t(vocab), n = tokens.size();
        tokens.push_back(g.get<int32_t>(pre + "greedy")[0]);
        // The reference: -log softmax of transformers' logits at positions n-k .. n-1.
        double ref = 0, ref2 = 0;
        for (size_t j = 0; j < k; ++j) {
          const std::span<const float> row(want.data() + j * size_t(vocab), size_t(vocab));
          const double l = token_nll(row, tokens[n - k + 1 + j]);
          ref += l;
          ref2 += l * l;
        }
        PerplexityOptions o;
        o.n_ctx = int(tokens.size());
        o.first = int(n - k);
        if (tokens[0] == 1) o.bos = 1;  // tiny-llama2's BOS: replacing it changes nothing, as in the reference
        o.logits_step = 3;              // several all_logits calls for four positions
        PerplexityResult r = perplexity(model, tokens, o);
        const std::string what =
            path.string() + (d == Device::Gpu ? " (GPU)" : " (CPU)") + " prompt " + std::to_string(p);
        ASSERT_EQ(r.chunks, 1) << what;
        ASSERT_EQ(r.scored, int64_t(k)) << what;
        EXPECT_NEAR(r.nll / double(k), ref / double(k), c.tolerance) << what;
        EXPECT_NEAR(std::log(r.ppl()), ref / double(k), c.tolerance) << what;
        if (k > 1) {  // llama-perplexity's +/-: ppl times the standard error of the mean
          const double mean = ref / double(k), sd = std::sqrt((ref2 / double(k) - mean * mean) / double(k - 1));
          EXPECT_NEAR(r.ppl_error(), sd * std::exp(mean), 20 * c.tolerance * r.ppl()) << what;
        }
      }
    }
  }
}

// Chunks of n_ctx, each from an empty cache with BOS first, scored from n_ctx/2: the same numbers
// as each chunk run whole through all_logits and scored here.
TEST(Perplexity, ChunksAreScoredLikeLlamaPerplexity) {
  const fs::path dir = test::fixtures_dir() / "tiny-llama2-f32";
  if (!fs::exists(dir / "golden.safetensors")) GTEST_SKIP() << "fixture not found: " << dir;
  ModelFile mf = open_model(dir, {false, false});
  const int64_t vocab = mf.config().vocab_size;
  Golden g{SafetensorsFile::open(dir / "golden.safetensors")};
  std::vector<int32_t> text;
  for (int p = 0; p < 3; ++p) {
    auto t = g.get<int32_t>("p" + std::to_string(p) + ".tokens");
    text.insert(text.end(), t.begin() + (p ? 1 : 0), t.end());  // one document: BOS once
  }
  const int n_ctx = 16;
  ASSERT_GE(text.size(), size_t(4 * n_ctx));
  LlamaModel model(std::nullopt, mf, engine(Device::Cpu, n_ctx));
  LlamaModel whole(std::nullopt, mf, engine(Device::Cpu, n_ctx));
  PerplexityOptions o;
  o.n_ctx = n_ctx;
  o.bos = 1;
  o.logits_step = 5;
  std::vector<double> seen;
  PerplexityResult r = perplexity(model, text, o, [&](const PerplexityResult& s) { seen.push_back(s.ppl()); });
  const int chunks = int(text.size()) / n_ctx;
  EXPECT_EQ(r.chunks, chunks);
  EXPECT_EQ(r.scored, int64_t(chunks) * (n_ctx - 1 - n_ctx / 2));
  double nll = 0;
  int64_t count = 0;
  for (int c = 0; c < chunks; ++c) {
    std::vector<int32_t> chunk(text.begin() + c * n_ctx, text.begin() + (c + 1) * n_ctx);
    chunk[0] = 1;
    whole.rewind(0);
    auto logits = whole.all_logits(chunk);
    for (int p = n_ctx / 2; p < n_ctx - 1; ++p, ++count)
      nll += token_nll(std::span<const float>(logits).subspan(size_t(p) * size_t(vocab), size_t(vocab)),
                       chunk[size_t(p + 1)]);
    ASSERT_LT(size_t(c), r.running_ppl.size());
    EXPECT_NEAR(r.running_ppl[size_t(c)], std::exp(nll / double(count)), 1e-4 * r.running_ppl[size_t(c)]) << c;
  }
  EXPECT_EQ(seen, r.running_ppl);
  // --chunks, a cancel, and the errors.
  o.max_chunks = 2;
  EXPECT_EQ(perplexity(model, text, o).chunks, 2);
  std::atomic<bool> stop{true};
  o.cancel = &stop;
  PerplexityResult none = perplexity(model, text, o);
  EXPECT_TRUE(none.cancelled);
  EXPECT_EQ(none.chunks, 0);
  o.cancel = nullptr;
  EXPECT_THROW(perplexity(model, std::span(text).first(10), o), Error);  // less than one chunk
  o.n_ctx = 2 * n_ctx;
  EXPECT_THROW(perplexity(model, text, o), Error);  // over the model's cache
  o.n_ctx = n_ctx;
  o.first = n_ctx - 1;
  EXPECT_THROW(perplexity(model, text, o), Error);  // nothing left to score
}

// `wgc perplexity` prints llama-perplexity's lines: the estimate after each chunk, then the final
// estimate with its error; --json the same numbers.
TEST(Perplexity, CommandPrintsLlamaPerplexityLines) {
  if (!fs::exists(default_model_candidates().at(0))) GTEST_SKIP() << "the built-in model is not there";
  const fs::path text = fs::path(WGC_SOURCE_DIR) / "README.md";
  auto r = run_cli("perplexity -f " + quote(text.string()) + " -c 32 --chunks 3");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(r.out, m,
                               std::regex(R"(\[1\](\d+\.\d{4}),\[2\]\d+\.\d{4},\[3\](\d+\.\d{4}),)"
                                          R"(\nFinal estimate: PPL = (\d+\.\d{4}) \+/- \d+\.\d{5}\n)")))
      << r.out;
  EXPECT_EQ(m[2].str(), m[3].str());  // the last running estimate is the final one
  EXPECT_NE(r.err.find("perplexity: calculating perplexity over 3 chunks, n_ctx=32"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("seconds per pass - ETA"), std::string::npos) << r.err;
  auto j = run_cli("perplexity -f " + quote(text.string()) + " -c 32 --chunks 3 --json");
  ASSERT_EQ(j.rc, 0) << j.err;
  auto doc = json::parse(j.out, "perplexity --json");
  EXPECT_EQ(doc["chunks"].as_int(), 3);
  EXPECT_EQ(doc["scored"].as_int(), 3 * 15);
  EXPECT_NEAR(doc["ppl"].as_double(), std::stod(m[3].str()), 1e-4);
  EXPECT_EQ(doc["running_ppl"].size(), 3u);
  auto short_text = run_cli("perplexity -p 'The moon' -c 512");
  EXPECT_EQ(short_text.rc, 1);
  EXPECT_NE(short_text.err.find("fewer than one chunk of 512 (-c)"), std::string::npos) << short_text.err;
  auto none = run_cli("perplexity");
  EXPECT_EQ(none.rc, 2);
  EXPECT_NE(none.err.find("give the text: -f FILE"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace wgc::llm
