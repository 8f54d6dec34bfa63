// The serving KV pool's bookkeeping: allocation and reference counts, the prefix cache of full
// blocks (matches only exact token prefixes, never partial blocks), eviction of the least
// recently released cached blocks (a prefix's later blocks before its earlier ones).
#include "llm/serve/kv_blocks.h"
#include "util/error.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace wgc;
using namespace wgc::llm;

namespace {
std::vector<int32_t> seq(int n, int start) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}
}  // namespace

TEST(KvBlocks, AllocateReleaseAndCounts) {
  KvBlocks kb(3, 4);
  EXPECT_EQ(kb.available(), 3);
  int32_t a = kb.allocate(), b = kb.allocate(), c = kb.allocate();
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_EQ(kb.allocate(), -1);
  EXPECT_EQ(kb.referenced(), 3);
  kb.release(b);
  EXPECT_EQ(kb.available(), 1);
  EXPECT_EQ(kb.allocate(), b);
  kb.release_all(std::vector<int32_t>{a, b, c});
  EXPECT_EQ(kb.available(), 3);
  EXPECT_EQ(kb.referenced(), 0);
  EXPECT_THROW(kb.release(a), Error);
  EXPECT_THROW(KvBlocks(0, 4), Error);
}

TEST(KvBlocks, SharesFullBlocksOfTheSamePrefix) {
  KvBlocks kb(8, 4);
  auto tokens = seq(10, 100);  // blocks [100..103], [104..107], and 2 tokens of a third
  std::vector<int32_t> table = {kb.allocate(), kb.allocate(), kb.allocate()};
  kb.publish(table, 0, tokens);
  kb.publish(table, 1, tokens);
  EXPECT_THROW(kb.publish(table, 2, tokens), Error);  // not full
  EXPECT_EQ(kb.cached(), 2);
  // The same first 9 tokens: two blocks; a limit of 7 tokens: one.
  auto m = kb.match(tokens, 9);
  EXPECT_EQ(m, (std::vector<int32_t>{table[0], table[1]}));
  auto m1 = kb.match(tokens, 7);
  EXPECT_EQ(m1, (std::vector<int32_t>{table[0]}));
  // Another second block, or a different first one: no (or a shorter) match.
  auto other = tokens;
  other[5] = 7;
  auto m2 = kb.match(other, 10);
  EXPECT_EQ(m2, (std::vector<int32_t>{table[0]}));
  kb.release_all(m2);
  other[1] = 7;
  EXPECT_TRUE(kb.match(other, 10).empty());
  kb.release_all(m);
  kb.release_all(m1);
  kb.release(kb.match(std::vector<int32_t>(tokens.begin(), tokens.begin() + 4), 4)[0]);
  // The owner goes: its full blocks stay cached (evictable), the partial one is free.
  kb.release_all(table);
  EXPECT_EQ(kb.available(), 8);
  EXPECT_EQ(kb.cached(), 2);
  EXPECT_EQ(kb.match(tokens, 10).size(), 2u);
}

TEST(KvBlocks, EvictsTheLeastRecentlyReleasedLaterBlocksFirst) {
  KvBlocks kb(4, 2);
  auto tokens = seq(6, 0);
  std::vector<int32_t> t = {kb.allocate(), kb.allocate(), kb.allocate()};
  for (int b = 0; b < 3; ++b) kb.publish(t, b, tokens);
  kb.release_all(t);  // released last to first: block 2's, then 1's, then 0's
  EXPECT_EQ(kb.available(), 4);
  int32_t x = kb.allocate(), y = kb.allocate();  // the free one, then the oldest cached: block 2's
  EXPECT_EQ(kb.cached(), 2);
  EXPECT_EQ(kb.match(tokens, 6).size(), 2u);  // blocks 0 and 1 still match
  (void)x;
  (void)y;
  // A duplicate of a cached prefix stays private and is freed on release.
  KvBlocks k2(4, 2);
  std::vector<int32_t> a = {k2.allocate()}, b = {k2.allocate()};
  k2.publish(a, 0, tokens);
  k2.publish(b, 0, tokens);
  EXPECT_EQ(k2.cached(), 1);
  k2.release_all(b);
  k2.release_all(a);
  EXPECT_EQ(k2.cached(), 1);
  EXPECT_EQ(k2.available(), 4);
}
