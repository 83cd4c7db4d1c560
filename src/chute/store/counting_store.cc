#include "chute/store/counting_store.h"

namespace chute {

std::optional<uint64_t> CountingStore::size(std::string_view key) const {
  return inner_->size(key);
}

bool CountingStore::read(std::string_view key, ByteBuffer& out) const {
  ++reads_;
  log(key);
  bool found = inner_->read(key, out);
  if (found) bytes_ += out.size();
  return found;
}

bool CountingStore::read_range(std::string_view key, uint64_t offset,
                               std::span<std::byte> out) const {
  ++range_reads_;
  log(key);
  bool found = inner_->read_range(key, offset, out);
  if (found) bytes_ += out.size();
  return found;
}

void CountingStore::submit(std::span<const ReadRequest> requests, const ReadCallback& done) const {
  ++submits_;
  uint64_t largest = largest_batch_.load();
  while (requests.size() > largest &&
         !largest_batch_.compare_exchange_weak(largest, requests.size())) {
  }
  for (const ReadRequest& request : requests) {
    const ByteRange& r = request.range;
    const bool whole = !r.suffix && r.offset == 0 && !r.length && request.into.empty();
    ++(whole ? reads_ : range_reads_);
    log(request.key);
  }
  inner_->submit(requests, [this, done](size_t index, ReadOutcome outcome) {
    if (outcome.status == ReadStatus::kOk) bytes_ += outcome.nbytes;
    done(index, std::move(outcome));
  });
}

void CountingStore::log(std::string_view key) const {
  if (!log_keys_) return;
  std::lock_guard lock(mutex_);
  keys_.emplace_back(key);
}

std::vector<std::string> CountingStore::logged_keys() const {
  std::lock_guard lock(mutex_);
  return keys_;
}

void CountingStore::reset() {
  reads_ = range_reads_ = bytes_ = submits_ = largest_batch_ = 0;
  std::lock_guard lock(mutex_);
  keys_.clear();
}

}  // namespace chute
