#include "chute/array/shard_index_cache.h"

namespace chute {
namespace {

// A missing shard (empty index) still costs one entry, so the bound also limits those.
size_t cost(const ShardIndex& index) { return index.size() + 1; }

}  // namespace

ShardIndexCache::ShardIndexCache(size_t max_entries) : max_entries_(max_entries) {}

ShardIndexPtr ShardIndexCache::find(int64_t shard) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(shard);
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.position);
  return it->second.index;
}

ShardIndexPtr ShardIndexCache::insert(int64_t shard, ShardIndexPtr index) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(shard);
  if (it != entries_.end()) return it->second.index;
  lru_.push_front(shard);
  total_entries_ += cost(*index);
  entries_.emplace(shard, Entry{index, lru_.begin()});
  evict_locked();
  return index;
}

void ShardIndexCache::evict_locked() {
  // The newest shard stays even when it alone exceeds the bound.
  while (total_entries_ > max_entries_ && lru_.size() > 1) {
    auto victim = entries_.find(lru_.back());
    total_entries_ -= cost(*victim->second.index);
    entries_.erase(victim);
    lru_.pop_back();
  }
}

size_t ShardIndexCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void ShardIndexCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
  lru_.clear();
  total_entries_ = 0;
}

}  // namespace chute
