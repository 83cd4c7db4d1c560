#include "chute/pipeline/prefetch_queue.h"

#include <chrono>
#include <utility>

#include "chute/util/error.h"

namespace chute {

PrefetchQueue::PrefetchQueue(size_t capacity) : capacity_(capacity) {
  if (capacity == 0) fail(ErrorCode::kInvalidArgument, "prefetch queue capacity must be >= 1");
}

bool PrefetchQueue::push(Batch&& batch) {
  std::unique_lock lock(mutex_);
  not_full_.wait(lock, [&] { return closed_ || finished_ || batches_ < capacity_; });
  if (closed_ || finished_) return false;
  items_.emplace_back(std::move(batch));
  ++batches_;
  lock.unlock();
  not_empty_.notify_one();
  return true;
}

void PrefetchQueue::end_epoch() {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || finished_) return;
    items_.emplace_back(std::nullopt);
  }
  not_empty_.notify_one();
}

void PrefetchQueue::finish(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    error_ = std::move(error);
  }
  not_empty_.notify_all();
  not_full_.notify_all();
}

std::optional<Batch> PrefetchQueue::pop(int64_t* wait_ns) {
  std::unique_lock lock(mutex_);
  auto ready = [&] { return closed_ || finished_ || !items_.empty(); };
  if (!ready()) {
    const auto start = std::chrono::steady_clock::now();
    not_empty_.wait(lock, ready);
    if (wait_ns) {
      *wait_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    }
  } else if (wait_ns) {
    *wait_ns = 0;
  }
  if (closed_) return std::nullopt;
  if (!items_.empty()) {
    std::optional<Batch> item = std::move(items_.front());
    items_.pop_front();
    if (!item) return std::nullopt;  // an epoch mark
    --batches_;
    lock.unlock();
    not_full_.notify_one();
    return item;
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return std::nullopt;
}

bool PrefetchQueue::wait_ready(std::chrono::nanoseconds max_wait) {
  std::unique_lock lock(mutex_);
  return not_empty_.wait_for(lock, max_wait,
                             [&] { return closed_ || finished_ || !items_.empty(); });
}

void PrefetchQueue::close() {
  std::deque<std::optional<Batch>> dropped;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    dropped.swap(items_);
    batches_ = 0;
  }
  not_full_.notify_all();
  not_empty_.notify_all();
  // `dropped` releases its buffers here, outside the lock.
}

size_t PrefetchQueue::size() const {
  std::lock_guard lock(mutex_);
  return batches_;
}

bool PrefetchQueue::done() const {
  std::lock_guard lock(mutex_);
  return closed_ || (finished_ && items_.empty() && !error_);
}

bool PrefetchQueue::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

}  // namespace chute
