// KvBlocks: the bookkeeping of the serving KV cache pool (no GPU here): fixed-size blocks with
// reference counts, a free list, and a prefix cache of full blocks. A full block holds the K/V of
// B tokens, which depend only on the tokens up to its end (batch invariance), so a sequence
// whose tokens start with the same blocks of tokens can share those blocks instead of running
// them again (only full blocks are shared, and they are never written again: no copy-on-write).
//
// A published block stays in the cache after its last user releases it, until an allocation
// needs the room (least recently released first). Blocks are identified by a 64-bit hash of the
// whole token prefix up to their end, checked against the block's own tokens and its parent's
// hash on every match.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace wgc::llm {

class KvBlocks {
 public:
  KvBlocks(int n_blocks, int block_tokens);

  int total() const { return int(meta_.size()); }
  int block_tokens() const { return block_; }
  int available() const;   // free now, or cached and unreferenced (evictable)
  int referenced() const;  // held by at least one sequence
  int cached() const;      // published (in the prefix cache), referenced or not

  // The cached full blocks holding the first whole blocks of `tokens`, at most max_tokens of
  // them, in order, each with one more reference (release them like allocated ones).
  std::vector<int32_t> match(std::span<const int32_t> tokens, int max_tokens);
  // A block with one reference, -1 when none is free or evictable.
  int32_t allocate();
  // Drops one reference; at zero a published block stays cached (evictable), others are free.
  void release(int32_t block);
  // Releases a sequence's blocks, last first (so its early blocks, which later prefixes share
  // most, are evicted last).
  void release_all(std::span<const int32_t> blocks);
  // Publishes block b of a sequence (block table `table`, tokens `tokens`: at least (b + 1) * B of
  // them, all in the cache) once it is full, after blocks 0 .. b - 1. A block whose prefix is
  // already cached elsewhere stays private (freed on release).
  void publish(std::span<const int32_t> table, int b, std::span<const int32_t> tokens);

 private:
  struct Meta {
    int refs = 0;
    bool hashed = false;     // key computed (the block is full)
    bool published = false;  // in by_key_
    uint64_t key = 0, parent = 0;
    std::vector<int32_t> tokens;
    std::list<int32_t>::iterator lru;  // valid while published and unreferenced
  };
  static uint64_t chain(uint64_t parent, std::span<const int32_t> tokens);
  void take(int32_t b);  // one more reference (out of the LRU list if it was there)

  int block_;
  std::vector<Meta> meta_;
  std::vector<int32_t> free_;
  std::list<int32_t> lru_;  // published, unreferenced: front is evicted first
  std::unordered_map<uint64_t, int32_t> by_key_;
  int referenced_ = 0;
};

}  // namespace wgc::llm
