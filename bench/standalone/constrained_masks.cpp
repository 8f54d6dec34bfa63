// Constrained sampling's host work, replayed without a model run: the picks the scheduler makes
// for a constrained sequence (llm/serve/scheduler.cpp, pick_constrained: the 64 best candidates
// filtered, else the full row masked; then accept), on random logits (so that most steps need the
// full mask), under the JSON schema of scripts/bench_constrained.py, with a model's tokenizer (the
// built-in one by default). Prints the time per token and the mask cache's counts; for counts
// that a loaded machine cannot skew, run it under callgrind:
//
//   valgrind --tool=callgrind --toggle-collect='wgc::llm::Constraint::*' build/constrained_masks_bench
//   (arguments: [TOKENS, default 3000] [MODEL]; the instructions counted / TOKENS: per token)
#include "llm/formats/model_file.h"
#include "llm/generate/constrained.h"
#include "llm/generate/default_model.h"
#include "llm/generate/generator.h"
#include "llm/grammar/json_schema.h"
#include "llm/model/llama.h"
#include "util/json.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>

using namespace wgc;
using namespace wgc::llm;

int main(int argc, char** argv) {
  const int tokens = argc > 1 ? std::atoi(argv[1]) : 3000;
  const std::filesystem::path model = argc > 2 ? std::filesystem::path(argv[2]) : default_model_path();
  const ModelFile file = open_model(model, {false, false});
  const auto tok = find_tokenizer(file);
  if (!tok) {
    std::fprintf(stderr, "%s has no tokenizer\n", model.c_str());
    return 1;
  }
  const auto texts = TokenTexts::of(*tok);
  const size_t V = texts->pieces.size();
  const std::string grammar = json_schema_to_grammar(json::parse(R"({"type": "object", "additionalProperties": false,
      "required": ["name", "tags", "n"], "properties": {"name": {"type": "string", "maxLength": 24},
      "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4}}})"));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> logits(V);
  std::vector<int32_t> order(V);
  const SamplePlan plan{SamplePlan::TopK, 40};  // the default sampling's top-k
  std::optional<Constraint> c;
  int in_request = 0, requests = 0, masked = 0;
  double ns = 0;
  for (int t = 0; t < tokens; ++t) {
    if (!c || in_request == 64) {
      c.emplace(std::make_shared<Grammar>(parse_grammar(grammar)), texts);  // each request parses its own
      in_request = 0;
      ++requests;
    }
    for (float& x : logits) x = 3 * normal(rng);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 64, order.end(),
                      [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
    TopK cand;
    for (size_t i = 0; i < 64; ++i) {
      cand.ids.push_back(order[i]);
      cand.logits.push_back(logits[size_t(order[i])]);
    }
    const auto t0 = std::chrono::steady_clock::now();
    int32_t id = 0;
    if (std::optional<TopK> kept = c->filter(cand, plan)) {
      id = kept->ids[rng() % kept->ids.size()];
    } else {
      std::vector<float> row = logits;
      c->mask(row);
      ++masked;
      id = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
    }
    c->accept(id);
    ++in_request;
    const bool stop = c->must_stop();
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (stop) c.reset();
  }
  const MaskCache::Stats st = texts->masks->stats();
  std::printf("%d tokens in %d requests, %d masked: %.1f us/token; mask cache: %llu states, %llu hits\n", tokens,
              requests, masked, ns / tokens / 1e3, static_cast<unsigned long long>(st.entries),
              static_cast<unsigned long long>(st.hits));
}
