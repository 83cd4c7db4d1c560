#pragma once
// An accelerator as the loader's delivery stage sees it: memory of two kinds (its own, and
// page-locked host memory it can copy from by DMA), one stream of chute's own on which copies
// are queued in order, and events that order other streams (the consumer's) or the host after
// them. Two implementations: CUDA through the driver API (cuda_device.cc) and a host-memory
// stand-in (standin_device.h) that runs the same delivery code with memcpy and counters, so the
// logic is tested without a GPU.
//
// Streams of consumers are DLPack's integers: 1 the legacy default stream, 2 the per-thread
// default stream, anything else a CUstream handle.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "chute/util/buffer_allocator.h"

namespace chute {

/// A marker in a stream. Made by Device::make_event(); re-recordable.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
};

class Device {
 public:
  virtual ~Device() = default;
  /// "cuda:0", "standin:0": named in every error.
  virtual const std::string& name() const = 0;
  /// Where device memory lives, for DLPack exports.
  virtual MemoryPlace place() const = 0;
  /// The device's own memory.
  virtual std::shared_ptr<BufferAllocator> device_memory() = 0;
  /// Page-locked host memory the device copies from without staging. `consumer_copies`: the
  /// consumer may copy from a buffer asynchronously (host batches handed out), so a released
  /// buffer is not written again before the legacy default stream has passed its release;
  /// false when only chute's own delivery copies from it (and waits for that).
  virtual std::shared_ptr<BufferAllocator> pinned_memory(bool consumer_copies = true) = 0;
  virtual std::unique_ptr<DeviceEvent> make_event() = 0;
  /// Queues a copy of `bytes` from host memory to device memory on chute's stream.
  virtual void copy_to_device(std::byte* device, const std::byte* host, size_t bytes) = 0;
  /// Records `event` on chute's stream (after everything queued on it so far).
  virtual void record(DeviceEvent& event) = 0;
  /// Records `event` on a consumer's stream.
  virtual void record_on(DeviceEvent& event, uintptr_t stream) = 0;
  /// Makes chute's stream wait for `event` (no host wait).
  virtual void wait_on_own_stream(DeviceEvent& event) = 0;
  /// Makes a consumer's stream wait for `event` (no host wait).
  virtual void wait_on_stream(uintptr_t stream, DeviceEvent& event) = 0;
  /// Whether everything before `event` has completed.
  virtual bool done(DeviceEvent& event) = 0;
  /// The host waits for `event` (never the whole device).
  virtual void synchronize(DeviceEvent& event) = 0;
};

using DevicePtr = std::shared_ptr<Device>;

/// A device named "cuda", "cuda:N" or "standin", "standin:N" (the host-memory stand-in, for
/// tests). Throws kInvalidArgument for a malformed or unknown name, kUnsupported when CUDA is
/// asked for and no driver or GPU is there, kNotFound for a GPU number the machine lacks.
DevicePtr open_device(std::string_view spec);

/// Opens a CUDA device by number (throws as open_device()).
DevicePtr open_cuda_device(int ordinal);

}  // namespace chute
