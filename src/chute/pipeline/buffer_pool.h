#pragma once
// Recycled batch buffers. acquire() hands out a buffer of buffer_bytes() bytes (64-byte aligned,
// contents undefined) owned by a shared_ptr whose deleter gives it back to the pool, so a batch's
// memory returns when its last holder (the C++ Batch, a NumPy array, a DLPack capsule) releases
// it. Reusing warm pages matters: first-touch memory is far slower than copies into warm buffers.
//
// The pool's state is shared with every buffer it handed out: a buffer released after the
// BufferPool object is gone is freed instead of recycled, and nothing dangles.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "chute/util/buffer_allocator.h"

namespace chute {

class ThreadPool;

class BufferPool {
 public:
  /// Every buffer's start and size are multiples of this (a cache line).
  static constexpr size_t kAlignment = 64;

  /// `buffer_bytes` > 0. `max_idle` caps how many released buffers are kept for reuse (the rest
  /// are freed). `allocator` gives the memory (pageable host memory when null): page-locked host
  /// memory or device memory pool the same way.
  explicit BufferPool(size_t buffer_bytes, size_t max_idle = 64,
                      std::shared_ptr<BufferAllocator> allocator = nullptr);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// A buffer from the idle list, or a new one. Thread-safe.
  std::shared_ptr<std::byte> acquire();
  /// Allocates buffers until `count` exist (at most max_idle), with their pages backed now (on
  /// `threads` when given), so that a pool growing while a loader runs does not slow batches
  /// down with page faults.
  void reserve(size_t count, ThreadPool* threads = nullptr);

  size_t buffer_bytes() const;
  const BufferAllocator& allocator() const;
  /// Buffers currently allocated by this pool (handed out + idle).
  size_t allocated() const;
  /// Buffers waiting in the idle list.
  size_t idle() const;
  /// How many times acquire() had to allocate a new buffer.
  size_t allocations() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace chute
