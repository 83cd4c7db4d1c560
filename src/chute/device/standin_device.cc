#include "chute/device/standin_device.h"

#include <cstring>

#include "chute/util/error.h"
#include "chute/util/page_memory.h"

namespace chute {
namespace {

class StandInEvent final : public DeviceEvent {
 public:
  int64_t position = 0;  // the stream position it marks
};

class StandInMemory final : public BufferAllocator {
 public:
  StandInMemory(std::shared_ptr<StandInDevice> device, bool pinned)
      : device_(std::move(device)), pinned_(pinned) {}
  std::byte* allocate(size_t bytes) override {
    device_->check();
    auto& held = pinned_ ? device_->counters().pinned_bytes : device_->counters().device_bytes;
    const size_t limit = pinned_ ? 0 : device_->memory_limit();
    if (limit != 0 && static_cast<size_t>(held.load()) + bytes > limit) {
      fail(ErrorCode::kIoError,
           "{}: out of device memory allocating a batch buffer of {} bytes ({} of {} bytes in "
           "use)",
           device_->name(), bytes, held.load(), limit);
    }
    std::byte* memory = detail::allocate_pages(bytes, /*huge_pages=*/false);
    if (memory == nullptr) fail(ErrorCode::kIoError, "{}: out of memory", device_->name());
    held += static_cast<int64_t>(bytes);
    if (pinned_) device_->pinned_allocated(memory, bytes);
    return memory;
  }
  void deallocate(std::byte* memory, size_t bytes) noexcept override {
    (pinned_ ? device_->counters().pinned_bytes : device_->counters().device_bytes) -=
        static_cast<int64_t>(bytes);
    if (pinned_) device_->pinned_freed(memory);
    detail::free_pages(memory);
  }
  void prefault(std::byte* memory, size_t bytes) override { detail::prefault_pages(memory, bytes); }
  // As CUDA's device memory: its release is ordered after the consumer's queued work.
  bool reuse_oldest_first() const override { return !pinned_; }
  MemoryPlace place() const override { return device_->place(); }
  std::string describe() const override {
    return pinned_ ? "page-locked host memory (" + device_->name() + ")"
                   : device_->name() + " device memory";
  }

 private:
  std::shared_ptr<StandInDevice> device_;
  bool pinned_;
};

}  // namespace

StandInDevice::StandInDevice(int ordinal, size_t memory_limit)
    : name_("standin:" + std::to_string(ordinal)), memory_limit_(memory_limit) {}

void StandInDevice::check() const {
  if (lost_) {
    fail(ErrorCode::kIoError, "{}: the device was lost (CUDA_ERROR_DEVICE_UNAVAILABLE)", name_);
  }
}

std::shared_ptr<BufferAllocator> StandInDevice::device_memory() {
  return std::make_shared<StandInMemory>(shared_from_this(), false);
}

std::shared_ptr<BufferAllocator> StandInDevice::pinned_memory(bool /*consumer_copies*/) {
  return std::make_shared<StandInMemory>(shared_from_this(), true);
}

std::unique_ptr<DeviceEvent> StandInDevice::make_event() {
  check();
  return std::make_unique<StandInEvent>();
}

void StandInDevice::run_until(int64_t position) {
  std::lock_guard lock(mutex_);
  while (done_position_ < position && !queued_.empty()) {
    const Copy copy = queued_.front();
    queued_.pop_front();
    std::memcpy(copy.device, copy.host, copy.bytes);
    ++done_position_;
  }
}

void StandInDevice::pinned_allocated(const std::byte* memory, size_t bytes) {
  std::lock_guard lock(pinned_mutex_);
  pinned_[memory] = bytes;
}

void StandInDevice::pinned_freed(const std::byte* memory) {
  std::lock_guard lock(pinned_mutex_);
  pinned_.erase(memory);
}

void StandInDevice::copy_to_device(std::byte* device, const std::byte* host, size_t bytes) {
  check();
  {
    std::lock_guard lock(pinned_mutex_);
    bool pinned = false;
    auto found = pinned_.upper_bound(host);  // the first allocation after `host`
    if (found != pinned_.begin()) {
      --found;
      pinned = host + bytes <= found->first + found->second;
    }
    if (!pinned) ++counters_.pageable_copies;
  }
  {
    std::lock_guard lock(mutex_);
    queued_.push_back({device, host, bytes});
    ++queued_position_;
  }
  ++counters_.copies;
  counters_.bytes_copied += static_cast<int64_t>(bytes);
}

void StandInDevice::record(DeviceEvent& event) {
  check();
  std::lock_guard lock(mutex_);
  static_cast<StandInEvent&>(event).position = queued_position_;
  ++counters_.records;
}

void StandInDevice::record_on(DeviceEvent& event, uintptr_t /*stream*/) {
  // A consumer's stream on the host has run what it was given: nothing to wait for.
  static_cast<StandInEvent&>(event).position = 0;
  ++counters_.consumer_records;
}

void StandInDevice::wait_on_own_stream(DeviceEvent& /*event*/) {
  check();
  ++counters_.own_stream_waits;
}

void StandInDevice::wait_on_stream(uintptr_t /*stream*/, DeviceEvent& event) {
  check();
  run_until(static_cast<StandInEvent&>(event).position);
  ++counters_.consumer_stream_waits;
}

bool StandInDevice::done(DeviceEvent& event) {
  check();
  std::lock_guard lock(mutex_);
  return done_position_ >= static_cast<StandInEvent&>(event).position;
}

void StandInDevice::synchronize(DeviceEvent& event) {
  check();
  run_until(static_cast<StandInEvent&>(event).position);
  ++counters_.host_syncs;
}

}  // namespace chute
