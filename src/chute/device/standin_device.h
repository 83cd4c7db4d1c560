#pragma once
// A host-memory stand-in for an accelerator: "device" memory is host memory, copies are memcpy,
// events are positions in a queue. Copies are deferred like a real device's: queued on the
// stand-in's stream and done only when something waits for an event after them (the host in
// synchronize(), a consumer's stream in wait_on_stream()), so a host buffer reused before its
// copy ran, or a consumer reading without waiting, reads wrong data in the tests. The delivery
// stage runs its real code over it, so the ring of device buffers, the ordering, the release
// through DLPack deleters, the errors and the bounded memory are tested in CI without a GPU. Its
// memory is host memory and exports as such (kDLCPU), so NumPy can check what was delivered.

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "chute/device/device.h"

namespace chute {

class StandInDevice final : public Device, public std::enable_shared_from_this<StandInDevice> {
 public:
  struct Counters {
    std::atomic<int64_t> copies{0};
    std::atomic<int64_t> bytes_copied{0};
    std::atomic<int64_t> records{0};           // on chute's stream
    std::atomic<int64_t> consumer_records{0};  // on consumers' streams
    std::atomic<int64_t> own_stream_waits{0};
    std::atomic<int64_t> consumer_stream_waits{0};
    std::atomic<int64_t> host_syncs{0};
    std::atomic<int64_t> device_bytes{0};  // device memory held now
    std::atomic<int64_t> pinned_bytes{0};  // page-locked host memory held now
    // Copies from memory other than this device's page-locked memory: on a GPU such a copy is
    // staged by the driver on the calling thread, at a fraction of the link's rate.
    std::atomic<int64_t> pageable_copies{0};
  };

  /// `memory_limit`: device memory beyond it fails as out of memory (0: no limit).
  explicit StandInDevice(int ordinal, size_t memory_limit = 0);

  const std::string& name() const override { return name_; }
  MemoryPlace place() const override { return {MemoryPlace::kCpu, 0}; }
  std::shared_ptr<BufferAllocator> device_memory() override;
  std::shared_ptr<BufferAllocator> pinned_memory(bool consumer_copies = true) override;
  std::unique_ptr<DeviceEvent> make_event() override;
  void copy_to_device(std::byte* device, const std::byte* host, size_t bytes) override;
  void record(DeviceEvent& event) override;
  void record_on(DeviceEvent& event, uintptr_t stream) override;
  void wait_on_own_stream(DeviceEvent& event) override;
  void wait_on_stream(uintptr_t stream, DeviceEvent& event) override;
  bool done(DeviceEvent& event) override;
  void synchronize(DeviceEvent& event) override;

  /// From now on every operation fails as a lost device would.
  void lose() { lost_ = true; }
  const Counters& counters() const { return counters_; }
  Counters& counters() { return counters_; }
  size_t memory_limit() const { return memory_limit_; }
  void check() const;
  /// Runs the queued copies up to stream position `position`.
  void run_until(int64_t position);
  /// Page-locked memory allocated and freed (by pinned_memory()'s allocator).
  void pinned_allocated(const std::byte* memory, size_t bytes);
  void pinned_freed(const std::byte* memory);

 private:
  struct Copy {
    std::byte* device;
    const std::byte* host;
    size_t bytes;
  };
  std::mutex mutex_;
  std::deque<Copy> queued_;
  int64_t queued_position_ = 0;  // copies ever queued
  int64_t done_position_ = 0;    // of which done
  std::mutex pinned_mutex_;
  std::map<const std::byte*, size_t> pinned_;  // page-locked allocations: start -> bytes
  std::string name_;
  size_t memory_limit_;
  std::atomic<bool> lost_{false};
  Counters counters_;
};

}  // namespace chute
