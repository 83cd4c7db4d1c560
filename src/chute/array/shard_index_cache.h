#pragma once
// Decoded shard indexes kept per array, so reading many inner chunks of one shard fetches and
// decodes its index once. Bounded (least recently used entries go first) and thread-safe; a
// lookup that hits allocates nothing.

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "chute/codec/sharding.h"
#include "chute/util/fork_safe_mutex.h"

namespace chute {

/// A decoded index; empty when the shard does not exist (every inner chunk reads as fill).
using ShardIndex = std::vector<ShardIndexEntry>;
using ShardIndexPtr = std::shared_ptr<const ShardIndex>;

class ShardIndexCache {
 public:
  /// Keeps at most `max_entries` index entries (offset/nbytes pairs) over all cached shards.
  explicit ShardIndexCache(size_t max_entries = size_t{1} << 20);

  /// The cached index of the shard with linear grid position `shard`, or null.
  ShardIndexPtr find(int64_t shard) const;
  /// Caches `index` for `shard` (keeping an entry another thread inserted first) and returns
  /// the cached one. Evicts least recently used shards past the bound.
  ShardIndexPtr insert(int64_t shard, ShardIndexPtr index);

  size_t size() const;
  void clear();

 private:
  struct Entry {
    ShardIndexPtr index;
    std::list<int64_t>::iterator position;  // in lru_
  };
  void evict_locked();

  size_t max_entries_;
  mutable detail::ForkSafeMutex mutex_;
  mutable std::list<int64_t> lru_;  // most recently used first
  std::unordered_map<int64_t, Entry> entries_;
  size_t total_entries_ = 0;
};

}  // namespace chute
