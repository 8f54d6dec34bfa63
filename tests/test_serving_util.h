// Feeding the serving engine (BatchedLlama) sequences step by step, shared by the tests that check
// its batch invariance (test_llm_batched, test_llm_arch_engines, test_moe).
#pragma once

#include "llm/model/llama_batched.h"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace wgc::test {

// A sequence being run: its tokens, how many are cached, its blocks.
struct Seq {
  std::vector<int32_t> tokens;
  int cached = 0;
  std::vector<int32_t> blocks;
};

// Blocks handed out from the end of a permutation of the pool, so tables are scattered.
struct Blocks {
  std::vector<int32_t> free;
  explicit Blocks(int n) {
    for (int i = 0; i < n; ++i) free.push_back((i * 5 + 3) % n);
  }
  void cover(Seq& s, int positions, int block) {
    while (int(s.blocks.size()) * block < positions) {
      if (free.empty()) throw std::logic_error("Blocks: the pool is used up");
      s.blocks.push_back(free.back());
      free.pop_back();
    }
  }
};

// Feeds `n[i]` more tokens of sequence i (0: none) in one step; the full logits of each fed sequence.
inline std::vector<std::vector<float>> feed(llm::BatchedLlama& bl, Blocks& pool, std::vector<Seq*> seqs,
                                            std::vector<int> n) {
  std::vector<llm::StepSequence> step;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (n[i] == 0) continue;
    Seq& s = *seqs[i];
    if (size_t(s.cached + n[i]) > s.tokens.size()) throw std::logic_error("feed: past the sequence's tokens");
    pool.cover(s, s.cached + n[i], bl.options().block_tokens);
    llm::StepSequence q;
    q.tokens = std::span<const int32_t>(s.tokens).subspan(size_t(s.cached), size_t(n[i]));
    q.pos0 = s.cached;
    q.blocks = s.blocks;
    q.full = true;
    step.push_back(q);
    s.cached += n[i];
  }
  std::vector<std::vector<float>> out;
  for (auto& r : bl.step(step)) out.push_back(std::move(r.logits));
  return out;
}

}  // namespace wgc::test
