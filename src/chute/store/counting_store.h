#pragma once
// Wraps a store and counts requests and bytes, optionally logging each key, so tests can check
// access patterns (a batch reads each chunk once; a shard index is read with a range request).

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "chute/store/store.h"

namespace chute {

class CountingStore final : public Store {
 public:
  explicit CountingStore(StorePtr inner, bool log_keys = false)
      : inner_(std::move(inner)), log_keys_(log_keys) {}

  std::optional<uint64_t> size(std::string_view key) const override;
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return inner_->describe(); }
  /// Forwards the batch to the inner store (so its reads stay in flight), counting each
  /// request as a read (whole) or range read.
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override;
  int preferred_concurrency() const override { return inner_->preferred_concurrency(); }

  uint64_t reads() const { return reads_; }
  uint64_t range_reads() const { return range_reads_; }
  uint64_t bytes_read() const { return bytes_; }
  /// submit() calls and the most requests one of them carried.
  uint64_t submits() const { return submits_; }
  uint64_t largest_batch() const { return largest_batch_; }
  /// Keys of whole and range reads in arrival order (only when constructed with log_keys).
  std::vector<std::string> logged_keys() const;
  void reset();

 private:
  void log(std::string_view key) const;

  StorePtr inner_;
  bool log_keys_;
  mutable std::atomic<uint64_t> reads_{0}, range_reads_{0}, bytes_{0}, submits_{0},
      largest_batch_{0};
  mutable std::mutex mutex_;
  mutable std::vector<std::string> keys_;
};

}  // namespace chute
