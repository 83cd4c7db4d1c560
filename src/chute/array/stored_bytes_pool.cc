#include "chute/array/stored_bytes_pool.h"

#include <iterator>
#include <utility>

namespace chute {

ByteBuffer StoredBytesPool::take(size_t size_hint) {
  std::lock_guard lock(mutex_);
  if (idle_.empty()) {
    ++fresh_;
    return {};
  }
  auto it = size_hint > 0 ? idle_.lower_bound(size_hint) : idle_.end();
  if (it == idle_.end()) it = std::prev(idle_.end());
  ByteBuffer buffer = std::move(it->second);
  idle_bytes_ -= it->first;
  idle_.erase(it);
  buffer.clear();
  return buffer;
}

void StoredBytesPool::give(ByteBuffer buffer) {
  if (buffer.capacity() == 0) return;
  std::lock_guard lock(mutex_);
  const size_t capacity = buffer.capacity();
  idle_.emplace(capacity, std::move(buffer));
  idle_bytes_ += capacity;
}

size_t StoredBytesPool::fresh() const {
  std::lock_guard lock(mutex_);
  return fresh_;
}

size_t StoredBytesPool::idle() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

size_t StoredBytesPool::idle_bytes() const {
  std::lock_guard lock(mutex_);
  return idle_bytes_;
}

}  // namespace chute
