#pragma once
// A test tool, not a user feature: wraps a store and delays each read by a fixed time, the way
// a remote or cold store answers, without occupying the caller's thread. Batched requests go
// to the inner store at once and complete from the wrapper's timer thread `delay` after they
// were submitted, so a reader that keeps N requests in flight gets N reads per `delay`. The
// blocking calls sleep for `delay` on the caller's thread. It counts the reads in flight and
// their maximum, so tests can assert that reads overlap without timing anything.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "chute/store/store.h"

namespace chute {

class LatencyStore final : public Store {
 public:
  /// `preferred` is what preferred_concurrency() reports (the read engine's default depth).
  LatencyStore(StorePtr inner, std::chrono::nanoseconds delay, int preferred = 64);
  ~LatencyStore() override;
  LatencyStore(const LatencyStore&) = delete;
  LatencyStore& operator=(const LatencyStore&) = delete;

  std::optional<uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override;
  int preferred_concurrency() const override { return preferred_; }
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return inner_->describe(); }

  /// Reads (blocking or submitted) started so far.
  int64_t reads() const { return reads_.load(); }
  /// Reads started and not yet completed, now and at most since construction or reset().
  int64_t in_flight() const { return in_flight_.load(); }
  int64_t max_in_flight() const { return max_in_flight_.load(); }
  void reset_counts();

 private:
  struct Due {
    std::chrono::steady_clock::time_point when;
    std::function<void()> complete;
    bool operator>(const Due& other) const { return when > other.when; }
  };
  void begin_read() const;
  void end_read() const;
  // One blocking read after the delay, counted in flight for its whole duration.
  template <typename Read>
  bool delayed(Read&& read) const;
  void schedule(std::chrono::steady_clock::time_point when, std::function<void()> complete) const;
  void timer_loop();

  StorePtr inner_;
  std::chrono::nanoseconds delay_;
  int preferred_;
  mutable std::atomic<int64_t> reads_{0}, in_flight_{0}, max_in_flight_{0};
  mutable std::mutex mutex_;
  mutable std::condition_variable wake_;
  mutable std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  bool stopping_ = false;
  std::thread timer_;
};

}  // namespace chute
