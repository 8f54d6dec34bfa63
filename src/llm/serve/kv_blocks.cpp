#include "llm/serve/kv_blocks.h"

#include "util/error.h"

#include <algorithm>
#include <string>

namespace wgc::llm {

namespace {
constexpr uint64_t kRootKey = 0x9e3779b97f4a7c15ull;  // parent key of block 0

uint64_t mix(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

KvBlocks::KvBlocks(int n_blocks, int block_tokens) : block_(block_tokens) {
  if (n_blocks < 1 || block_tokens < 1)
    throw Error("wgc: kv blocks: " + std::to_string(n_blocks) + " blocks of " + std::to_string(block_tokens) +
                " tokens");
  meta_.resize(size_t(n_blocks));
  for (int i = n_blocks - 1; i >= 0; --i) free_.push_back(i);
}

uint64_t KvBlocks::chain(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent);
  for (int32_t t : tokens) h = mix(h ^ (uint64_t(uint32_t(t)) + 0x632be59bd9b4e019ull));
  return h;
}

int KvBlocks::available() const { return int(free_.size() + lru_.size()); }
int KvBlocks::referenced() const { return referenced_; }
int KvBlocks::cached() const { return int(by_key_.size()); }

void KvBlocks::take(int32_t b) {
  Meta& m = meta_[size_t(b)];
  if (m.refs == 0) {
    if (m.published) lru_.erase(m.lru);
    ++referenced_;
  }
  ++m.refs;
}

std::vector<int32_t> KvBlocks::match(std::span<const int32_t> tokens, int max_tokens) {
  std::vector<int32_t> out;
  const size_t n = std::min(tokens.size(), size_t(std::max(0, max_tokens))) / size_t(block_);
  uint64_t parent = kRootKey;
  for (size_t b = 0; b < n; ++b) {
    auto part = tokens.subspan(b * size_t(block_), size_t(block_));
    const uint64_t key = chain(parent, part);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) break;
    const Meta& m = meta_[size_t(it->second)];
    if (m.parent != parent || !std::equal(part.begin(), part.end(), m.tokens.begin(), m.tokens.end())) break;
    take(it->second);
    out.push_back(it->second);
    parent = key;
  }
  return out;
}

int32_t KvBlocks::allocate() {
  int32_t b = -1;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    lru_.pop_front();
    Meta& m = meta_[size_t(b)];
    by_key_.erase(m.key);
    m.published = false;
  } else {
    return -1;
  }
  Meta& m = meta_[size_t(b)];
  m.hashed = false;
  m.tokens.clear();
  m.refs = 1;
  ++referenced_;
  return b;
}

void KvBlocks::release(int32_t b) {
  if (b < 0 || b >= total() || meta_[size_t(b)].refs <= 0)
    throw Error("wgc: kv blocks: release of block " + std::to_string(b) + " that is not held");
  Meta& m = meta_[size_t(b)];
  if (--m.refs > 0) return;
  --referenced_;
  if (m.published) {
    m.lru = lru_.insert(lru_.end(), b);
  } else {
    m.hashed = false;
    free_.push_back(b);
  }
}

void KvBlocks::release_all(std::span<const int32_t> blocks) {
  for (size_t i = blocks.size(); i-- > 0;) release(blocks[i]);
}

void KvBlocks::publish(std::span<const int32_t> table, int b, std::span<const int32_t> tokens) {
  if (b < 0 || size_t(b) >= table.size() || tokens.size() < size_t(b + 1) * size_t(block_))
    throw Error("wgc: kv blocks: publish of block " + std::to_string(b) + " beyond the sequence");
  Meta& m = meta_[size_t(table[size_t(b)])];
  if (m.hashed) return;  // already (matched from the cache, or published before)
  uint64_t parent = kRootKey;
  if (b > 0) {
    const Meta& p = meta_[size_t(table[size_t(b - 1)])];
    if (!p.hashed) throw Error("wgc: kv blocks: block " + std::to_string(b) + " published before its parent");
    parent = p.key;
  }
  auto part = tokens.subspan(size_t(b) * size_t(block_), size_t(block_));
  m.hashed = true;
  m.parent = parent;
  m.key = chain(parent, part);
  if (by_key_.count(m.key)) return;  // the same prefix is cached in another block: this one stays private
  m.tokens.assign(part.begin(), part.end());
  m.published = true;
  by_key_[m.key] = table[size_t(b)];
}

}  // namespace wgc::llm
