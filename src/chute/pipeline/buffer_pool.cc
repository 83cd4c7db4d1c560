#include "chute/pipeline/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "chute/util/error.h"
#include "chute/util/thread_pool.h"

namespace chute {

struct BufferPool::State {
  std::shared_ptr<BufferAllocator> allocator;
  size_t buffer_bytes = 0;
  size_t max_idle = 0;
  bool oldest_first = false;  // allocator->reuse_oldest_first()
  mutable std::mutex mutex;
  std::vector<std::byte*> idle;
  size_t allocated = 0;
  size_t allocations = 0;
  bool open = true;  // false once the BufferPool object is gone: released buffers are freed

  void give_back(std::byte* buffer) {
    allocator->released(buffer);
    {
      std::lock_guard lock(mutex);
      if (open && idle.size() < max_idle) {
        idle.push_back(buffer);
        return;
      }
      --allocated;
    }
    allocator->deallocate(buffer, buffer_bytes);
  }

  ~State() {
    for (std::byte* buffer : idle) allocator->deallocate(buffer, buffer_bytes);
  }
};

BufferPool::BufferPool(size_t buffer_bytes, size_t max_idle,
                       std::shared_ptr<BufferAllocator> allocator)
    : state_(std::make_shared<State>()) {
  if (buffer_bytes == 0) fail(ErrorCode::kInvalidArgument, "buffer pool: buffer size must be > 0");
  state_->allocator = allocator ? std::move(allocator) : pageable_allocator();
  state_->buffer_bytes = (buffer_bytes + kAlignment - 1) / kAlignment * kAlignment;
  state_->max_idle = max_idle;
  state_->oldest_first = state_->allocator->reuse_oldest_first();
}

BufferPool::~BufferPool() {
  std::vector<std::byte*> idle;
  {
    std::lock_guard lock(state_->mutex);
    state_->open = false;
    idle.swap(state_->idle);
    state_->allocated -= idle.size();
  }
  for (std::byte* buffer : idle) state_->allocator->deallocate(buffer, state_->buffer_bytes);
}

void BufferPool::reserve(size_t count, ThreadPool* threads) {
  // Holds buffers (idle ones first, then new ones) until `count` exist, faults them in, and
  // gives them all back: acquire() does the allocating and its error.
  count = std::min(count, state_->max_idle);
  std::vector<std::shared_ptr<std::byte>> held;
  while (allocated() < count) held.push_back(acquire());
  // In pieces, on the given threads: the kernel zeroes every page it backs.
  constexpr size_t kPieceBytes = size_t{32} << 20;
  const size_t bytes = state_->buffer_bytes;
  const size_t pieces_per_buffer = (bytes + kPieceBytes - 1) / kPieceBytes;
  const auto prefault_piece = [&](size_t i, size_t /*worker*/) {
    const size_t offset = (i % pieces_per_buffer) * kPieceBytes;
    state_->allocator->prefault(held[i / pieces_per_buffer].get() + offset,
                                std::min(kPieceBytes, bytes - offset));
  };
  const size_t pieces = held.size() * pieces_per_buffer;
  if (threads != nullptr && threads->size() > 1) {
    threads->parallel_for(pieces, prefault_piece);
  } else {
    for (size_t i = 0; i < pieces; ++i) prefault_piece(i, 0);
  }
}

std::shared_ptr<std::byte> BufferPool::acquire() {
  std::byte* buffer = nullptr;
  {
    std::lock_guard lock(state_->mutex);
    std::vector<std::byte*>& idle = state_->idle;
    if (idle.empty()) {
      ++state_->allocated;
      ++state_->allocations;
    } else if (state_->oldest_first) {  // a handful of buffers: erasing the front is cheap
      buffer = idle.front();
      idle.erase(idle.begin());
    } else {
      buffer = idle.back();
      idle.pop_back();
    }
  }
  if (buffer) {
    try {
      state_->allocator->reusing(buffer);
    } catch (...) {
      state_->give_back(buffer);
      throw;
    }
  } else {
    try {
      buffer = state_->allocator->allocate(state_->buffer_bytes);
    } catch (...) {
      std::lock_guard lock(state_->mutex);
      --state_->allocated;
      throw;
    }
  }
  // The deleter holds the state, so a buffer outliving the pool still has somewhere to go.
  return std::shared_ptr<std::byte>(buffer,
                                    [state = state_](std::byte* b) { state->give_back(b); });
}

size_t BufferPool::buffer_bytes() const { return state_->buffer_bytes; }

const BufferAllocator& BufferPool::allocator() const { return *state_->allocator; }

size_t BufferPool::allocated() const {
  std::lock_guard lock(state_->mutex);
  return state_->allocated;
}

size_t BufferPool::idle() const {
  std::lock_guard lock(state_->mutex);
  return state_->idle.size();
}

size_t BufferPool::allocations() const {
  std::lock_guard lock(state_->mutex);
  return state_->allocations;
}

}  // namespace chute
