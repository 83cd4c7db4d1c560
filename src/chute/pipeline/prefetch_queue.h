#pragma once
// A bounded blocking queue between the producer thread (assembling batches) and the consumer.
// The producer marks the end of each epoch with end_epoch() and may go on with the next epoch's
// batches: the consumer's pop() returns nullopt at the mark, then the next epoch's batches.
// finish(error) ends production: a stored error is rethrown to the consumer on its next pop()
// (after the batches queued before it), then the queue reports the end. close() is the consumer
// leaving: the producer's blocked push() returns false at once.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>

#include "chute/pipeline/batch.h"

namespace chute {

class PrefetchQueue {
 public:
  /// capacity >= 1.
  explicit PrefetchQueue(size_t capacity);

  /// Blocks while the queue is full. Returns false, dropping `batch`, once close() was called.
  bool push(Batch&& batch);
  /// Marks the end of an epoch after the batches pushed so far (never blocks; a mark does not
  /// count against the capacity). Dropped once close() or finish() was called.
  void end_epoch();
  /// The producer is done: with an error, or normally (nullptr). Later pushes are dropped.
  void finish(std::exception_ptr error = nullptr);
  /// Blocks until a batch, an epoch mark or the end (nullopt), or the stored error (rethrown
  /// once; later calls return nullopt). `wait_ns`, when given, receives the time spent blocked.
  std::optional<Batch> pop(int64_t* wait_ns = nullptr);
  /// Waits up to `max_wait` until pop() would not block; true when it would not.
  bool wait_ready(std::chrono::nanoseconds max_wait);
  /// True once production ended (finish()) and everything queued was popped, or after close().
  bool done() const;
  /// Drops queued batches, wakes everyone; push() returns false from now on, pop() nullopt.
  void close();

  /// Batches queued (epoch marks not counted).
  size_t size() const;
  size_t capacity() const { return capacity_; }
  bool closed() const;

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<std::optional<Batch>> items_;  // nullopt: an epoch mark
  size_t batches_ = 0;                      // the non-mark entries of items_
  std::exception_ptr error_;
  bool finished_ = false;
  bool closed_ = false;
};

}  // namespace chute
