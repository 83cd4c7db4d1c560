#pragma once
// The delivery stage: after a batch is assembled in host memory, its buffer is copied into one of
// a bounded pool of device buffers on chute's own stream, and the batch handed on points there.
// The copy is asynchronous: the host buffer is held (not reused by the pool) until an event
// recorded after the copy has completed, checked without blocking at each delivery and waited
// for only when more than kMaxCopiesInFlight are outstanding. The consumer orders its stream
// after the copy through BatchArray::ready (the DLPack stream protocol); when the last owner of
// the device buffer lets go, an event recorded on that consumer stream makes chute's next copy
// into the buffer wait for the consumer's queued work, and the buffer returns to the pool.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "chute/device/device.h"
#include "chute/pipeline/batch.h"
#include "chute/pipeline/buffer_pool.h"

namespace chute {

struct DeliveryStats {
  int64_t copies = 0;
  int64_t bytes_copied = 0;
  int64_t copy_submit_ns = 0;  // producer time queueing copies (acquire_ns included)
  int64_t acquire_ns = 0;      // of which getting a device buffer (allocating one when none idle)
  int64_t host_waits = 0;      // times the producer waited for a copy to free a host buffer
  int64_t host_wait_ns = 0;
  int64_t device_buffers = 0;  // device buffers allocated (flat in the steady state)
  int64_t consumer_waits = 0;  // consumer streams ordered after a copy
  int64_t release_waits = 0;   // copies ordered after a consumer's release of the buffer
};

class DeviceDelivery {
 public:
  static constexpr size_t kMaxCopiesInFlight = 2;

  /// Device buffers of `buffer_bytes`, at most `max_idle` kept idle (like BufferPool).
  DeviceDelivery(DevicePtr device, size_t buffer_bytes, size_t max_idle);
  /// Waits for the copies in flight (their host buffers are then released).
  ~DeviceDelivery();
  DeviceDelivery(const DeviceDelivery&) = delete;
  DeviceDelivery& operator=(const DeviceDelivery&) = delete;

  /// Allocates device buffers until `count` exist.
  void reserve(size_t count);
  /// `batch`'s arrays point into `host_buffer` (buffer_bytes long): copies it to a device buffer
  /// and returns the batch with its arrays pointing there (same offsets), owned by the device
  /// buffer. `host_buffer` is kept until the copy completes. For the producer thread.
  Batch deliver(Batch batch, std::shared_ptr<std::byte> host_buffer);
  /// Waits for every copy in flight and releases their host buffers.
  void drain();

  const Device& device() const { return *device_; }
  DeliveryStats stats() const;
  const BufferPool& pool() const { return pool_; }
  /// Copies whose host buffers are still held.
  size_t copies_in_flight() const;

  struct Shared;

 private:
  void retire(bool all);

  DevicePtr device_;
  BufferPool pool_;
  std::shared_ptr<Shared> shared_;
  struct InFlight {
    std::shared_ptr<DeviceReady> batch;  // holds the copy's event
    std::shared_ptr<std::byte> host_buffer;
  };
  mutable std::mutex mutex_;  // guards in_flight_ (drain() from stop() on the consumer thread)
  std::deque<InFlight> in_flight_;
};

}  // namespace chute
