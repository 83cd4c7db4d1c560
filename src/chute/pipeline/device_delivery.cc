#include "chute/pipeline/device_delivery.h"

#include <atomic>
#include <unordered_map>
#include <utility>

#include "chute/util/clock.h"
#include "chute/util/error.h"

namespace chute {

// What outlives the DeviceDelivery object while consumers hold device buffers: the device, and
// per device buffer the events ordering its copies and its release.
struct DeviceDelivery::Shared {
  DevicePtr device;
  struct Slot {
    std::unique_ptr<DeviceEvent> copied;    // recorded on chute's stream after the copy into it
    std::unique_ptr<DeviceEvent> released;  // recorded on the consumer's stream at its release
    bool release_pending = false;           // `released` holds a release not yet waited for
  };
  std::mutex mutex;
  std::unordered_map<const std::byte*, Slot> slots;
  std::atomic<int64_t> consumer_waits{0};
  std::atomic<int64_t> release_waits{0};
  std::atomic<int64_t> copies{0};
  std::atomic<int64_t> bytes_copied{0};
  std::atomic<int64_t> copy_submit_ns{0};
  std::atomic<int64_t> acquire_ns{0};
  std::atomic<int64_t> host_waits{0};
  std::atomic<int64_t> host_wait_ns{0};
};

namespace {

// One delivered batch: owns its device buffer; the batch's arrays share ownership of it.
class Delivered final : public DeviceReady {
 public:
  Delivered(std::shared_ptr<DeviceDelivery::Shared> shared, std::shared_ptr<std::byte> buffer,
            DeviceEvent* copied)
      : shared_(std::move(shared)), buffer_(std::move(buffer)), copied_(copied) {}

  ~Delivered() override {
    uintptr_t stream = 0;
    {
      std::lock_guard lock(mutex_);
      stream = consumer_stream_;
    }
    if (stream != 0) {
      // The consumer released the tensor with its work possibly still queued on its stream:
      // chute's next copy into this buffer waits for that work (stream order, no host wait).
      try {
        std::lock_guard lock(shared_->mutex);
        DeviceDelivery::Shared::Slot& slot = shared_->slots[buffer_.get()];
        if (!slot.released) slot.released = shared_->device->make_event();
        shared_->device->record_on(*slot.released, stream);
        slot.release_pending = true;
      } catch (...) {
        // A lost device: the next copy into the buffer reports it.
      }
    }
  }

  void order_stream(uintptr_t stream) override {
    shared_->device->wait_on_stream(stream, *copied_);
    ++shared_->consumer_waits;
    std::lock_guard lock(mutex_);
    consumer_stream_ = stream;
  }
  void wait_host() override { shared_->device->synchronize(*copied_); }

  bool copy_done() { return shared_->device->done(*copied_); }
  void wait_copy() { shared_->device->synchronize(*copied_); }
  std::byte* data() const { return buffer_.get(); }

 private:
  std::shared_ptr<DeviceDelivery::Shared> shared_;
  std::shared_ptr<std::byte> buffer_;
  DeviceEvent* copied_;  // owned by the buffer's slot, which outlives this use of the buffer
  std::mutex mutex_;
  uintptr_t consumer_stream_ = 0;
};

}  // namespace

DeviceDelivery::DeviceDelivery(DevicePtr device, size_t buffer_bytes, size_t max_idle)
    : device_(std::move(device)),
      pool_(buffer_bytes, max_idle, device_->device_memory()),
      shared_(std::make_shared<Shared>()) {
  shared_->device = device_;
}

DeviceDelivery::~DeviceDelivery() {
  try {
    drain();
  } catch (...) {
    // A lost device: nothing to wait for any more.
  }
}

void DeviceDelivery::reserve(size_t count) { pool_.reserve(count); }

Batch DeviceDelivery::deliver(Batch batch, std::shared_ptr<std::byte> host_buffer) {
  const Clock::time_point start = Clock::now();
  std::shared_ptr<std::byte> buffer = pool_.acquire();
  shared_->acquire_ns += elapsed_ns(start);
  DeviceEvent* copied = nullptr;
  {
    std::lock_guard lock(shared_->mutex);
    Shared::Slot& slot = shared_->slots[buffer.get()];
    if (!slot.copied) slot.copied = device_->make_event();
    if (slot.release_pending) {
      device_->wait_on_own_stream(*slot.released);
      slot.release_pending = false;
      ++shared_->release_waits;
    }
    copied = slot.copied.get();
  }
  const size_t bytes = pool_.buffer_bytes();
  device_->copy_to_device(buffer.get(), host_buffer.get(), bytes);
  device_->record(*copied);
  auto delivered = std::make_shared<Delivered>(shared_, std::move(buffer), copied);
  ++shared_->copies;
  shared_->bytes_copied += static_cast<int64_t>(bytes);

  const MemoryPlace place = device_->place();
  for (BatchArray& array : batch.arrays) {
    const auto offset = array.data - host_buffer.get();
    array.data = delivered->data() + offset;
    array.owner = std::shared_ptr<std::byte>(delivered, delivered->data());
    array.place = place;
    array.ready = delivered;
  }
  {
    std::lock_guard lock(mutex_);
    in_flight_.push_back({delivered, std::move(host_buffer)});
  }
  shared_->copy_submit_ns += elapsed_ns(start);
  retire(false);
  return batch;
}

void DeviceDelivery::retire(bool all) {
  std::lock_guard lock(mutex_);
  while (!in_flight_.empty()) {
    auto& front = static_cast<Delivered&>(*in_flight_.front().batch);
    if (!front.copy_done()) {
      if (!all && in_flight_.size() <= kMaxCopiesInFlight) break;
      const Clock::time_point start = Clock::now();
      front.wait_copy();
      ++shared_->host_waits;
      shared_->host_wait_ns += elapsed_ns(start);
    }
    in_flight_.pop_front();
  }
}

void DeviceDelivery::drain() { retire(true); }

size_t DeviceDelivery::copies_in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_.size();
}

DeliveryStats DeviceDelivery::stats() const {
  DeliveryStats s;
  s.copies = shared_->copies;
  s.bytes_copied = shared_->bytes_copied;
  s.copy_submit_ns = shared_->copy_submit_ns;
  s.acquire_ns = shared_->acquire_ns;
  s.host_waits = shared_->host_waits;
  s.host_wait_ns = shared_->host_wait_ns;
  s.device_buffers = static_cast<int64_t>(pool_.allocations());
  s.consumer_waits = shared_->consumer_waits;
  s.release_waits = shared_->release_waits;
  return s;
}

}  // namespace chute
