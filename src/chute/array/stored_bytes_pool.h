#pragma once
// Buffers for the stored (encoded) bytes of chunks read ahead of their decode (internal). A
// ReadPlan with reads in flight takes a buffer when it submits a chunk's read and gives it back
// once the chunk is decoded, so the buffers in use are the reads between submission and decode,
// not one per task of every plan: the plans of a loader (the batch being decoded and the one
// read ahead) share one pool, and the steady state reuses warm pages instead of faulting in
// fresh ones (the kernel zeroes every fresh page, a large share of a loader's first seconds).

#include <cstddef>
#include <map>
#include <mutex>

#include "chute/util/byte_buffer.h"

namespace chute {

class StoredBytesPool {
 public:
  /// An idle buffer: the smallest whose capacity holds `size_hint` bytes, else the largest
  /// (a read that needs more grows it; buffers never shrink, so the pool settles on the
  /// largest chunk's size). `size_hint` 0 (size unknown until read): the largest. With none
  /// idle, an empty buffer (its read allocates), counted by fresh(). Thread-safe.
  ByteBuffer take(size_t size_hint = 0);
  /// Keeps `buffer` for a later take(); one without memory is dropped. Thread-safe.
  void give(ByteBuffer buffer);

  /// How many take()s handed out a buffer without memory.
  size_t fresh() const;
  /// Buffers idle in the pool, and their capacity in bytes.
  size_t idle() const;
  size_t idle_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::multimap<size_t, ByteBuffer> idle_;  // by capacity
  size_t idle_bytes_ = 0;
  size_t fresh_ = 0;
};

}  // namespace chute
