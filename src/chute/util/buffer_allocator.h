#pragma once
// Where large buffers come from: the memory kind as one seam. The buffer pool (and anything else
// that recycles big buffers) asks an allocator for memory instead of calling the page allocator,
// so page-locked host memory, device memory or another vendor's runtime is one more class.

#include <cstddef>
#include <memory>
#include <string>

namespace chute {

/// Where a buffer lives, in DLPack's terms (DLDeviceType and device id): what an export names.
struct MemoryPlace {
  static constexpr int kCpu = 1;   // kDLCPU
  static constexpr int kCuda = 2;  // kDLCUDA
  int device_type = kCpu;
  int device_id = 0;
  bool on_host() const { return device_type == kCpu; }
};

class BufferAllocator {
 public:
  virtual ~BufferAllocator() = default;
  /// At least `bytes` of uninitialised memory, aligned to 64 bytes at least. Throws a chute
  /// Error naming the memory kind (and the device) when the memory cannot be had.
  virtual std::byte* allocate(size_t bytes) = 0;
  /// Gives back memory from allocate() of the same size. Never throws.
  virtual void deallocate(std::byte* memory, size_t bytes) noexcept = 0;
  /// Backs `bytes` of `memory` with pages now, where the kind has lazily backed pages.
  virtual void prefault(std::byte* memory, size_t bytes) {}
  /// A buffer came back to its pool (its last holder let go), and a buffer from the pool is about
  /// to be written again. Page-locked memory uses these so that a framework's asynchronous copy
  /// from a released buffer is complete before chute overwrites it.
  virtual void released(std::byte* memory) noexcept {}
  virtual void reusing(std::byte* memory) {}
  /// Whether a pool reuses its released buffers oldest first: when a release is ordered after a
  /// consumer's queued work (an event), the oldest is the likeliest complete, and reusing the
  /// newest would wait for the work queued last. Otherwise newest first (warm pages).
  virtual bool reuse_oldest_first() const { return false; }
  /// Where the memory lives.
  virtual MemoryPlace place() const { return {}; }
  /// "pageable host memory", "page-locked host memory (cuda:0)", "cuda:0 device memory".
  virtual std::string describe() const = 0;
};

/// Ordinary pageable host memory (page_memory.h), the default.
std::shared_ptr<BufferAllocator> pageable_allocator();

}  // namespace chute
