#include "chute/store/latency_store.h"

#include <memory>

namespace chute {

LatencyStore::LatencyStore(StorePtr inner, std::chrono::nanoseconds delay, int preferred)
    : inner_(std::move(inner)), delay_(delay), preferred_(preferred < 1 ? 1 : preferred) {
  timer_ = std::thread([this] { timer_loop(); });
}

LatencyStore::~LatencyStore() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  timer_.join();  // completes whatever is still due first
}

void LatencyStore::begin_read() const {
  ++reads_;
  const int64_t now = ++in_flight_;
  int64_t seen = max_in_flight_.load();
  while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
  }
}

void LatencyStore::end_read() const { --in_flight_; }

void LatencyStore::reset_counts() {
  reads_ = 0;
  max_in_flight_ = in_flight_.load();
}

template <typename Read>
bool LatencyStore::delayed(Read&& read) const {
  begin_read();
  struct End {
    const LatencyStore* store;
    ~End() { store->end_read(); }
  } end{this};
  std::this_thread::sleep_for(delay_);
  return read();
}

bool LatencyStore::read(std::string_view key, ByteBuffer& out) const {
  return delayed([&] { return inner_->read(key, out); });
}

bool LatencyStore::read_range(std::string_view key, uint64_t offset,
                              std::span<std::byte> out) const {
  return delayed([&] { return inner_->read_range(key, offset, out); });
}

void LatencyStore::submit(std::span<const ReadRequest> requests, const ReadCallback& done) const {
  if (requests.empty()) return;
  const auto due = std::chrono::steady_clock::now() + delay_;
  auto callback = std::make_shared<const ReadCallback>(done);
  for (size_t i = 0; i < requests.size(); ++i) begin_read();
  // The inner store reads now; the outcome is handed over when the delay has passed.
  inner_->submit(requests, [this, due, callback](size_t index, ReadOutcome outcome) {
    auto shared = std::make_shared<ReadOutcome>(std::move(outcome));
    schedule(due, [this, callback, index, shared] {
      end_read();
      (*callback)(index, std::move(*shared));
    });
  });
}

void LatencyStore::schedule(std::chrono::steady_clock::time_point when,
                            std::function<void()> complete) const {
  {
    std::lock_guard lock(mutex_);
    due_.push({when, std::move(complete)});
  }
  wake_.notify_all();
}

void LatencyStore::timer_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (due_.empty()) {
      if (stopping_) return;
      wake_.wait(lock);
      continue;
    }
    const auto when = due_.top().when;
    if (std::chrono::steady_clock::now() < when) {
      wake_.wait_until(lock, when);
      continue;
    }
    std::function<void()> complete = std::move(const_cast<Due&>(due_.top()).complete);
    due_.pop();
    lock.unlock();
    complete();  // may submit more reads (schedule() takes the lock)
    lock.lock();
  }
}

}  // namespace chute
