#pragma once
// A batch as the consumer sees it: one view per dataset output over a pooled buffer, plus the
// sample numbers. Every view holds a shared owner of the buffer, so a view (or a NumPy array /
// DLPack capsule built from it) keeps the memory alive after the Batch is gone; the memory goes
// back to the pool when the last owner releases it.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chute/array/dtype.h"
#include "chute/util/buffer_allocator.h"

namespace chute {

/// How the consumer of a batch delivered to a device waits for its copy: its stream is ordered
/// after chute's copy with an event (never a device-wide synchronisation), or the host waits.
class DeviceReady {
 public:
  virtual ~DeviceReady() = default;
  /// Makes the consumer's `stream` (DLPack's integer: 1 legacy default, 2 per-thread default,
  /// else a stream handle) wait for the copy, and remembers it: when the buffer is released,
  /// chute's next copy into it waits for the work queued on that stream by then.
  virtual void order_stream(uintptr_t stream) = 0;
  /// Blocks the calling thread until the copy has completed.
  virtual void wait_host() = 0;
};

/// One output of a batch: C-contiguous, shape (batch_size, sample_shape...).
struct BatchArray {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  std::byte* data = nullptr;
  std::shared_ptr<std::byte> owner;    // the whole batch buffer; data points inside it
  MemoryPlace place;                   // where `data` lives (the host unless delivered to a device)
  std::shared_ptr<DeviceReady> ready;  // set when delivered to a device: orders its consumers

  int64_t elements() const;
  int64_t nbytes() const { return elements() * dtype.size; }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data);
  }
};

struct Batch {
  int64_t epoch = 0;
  int64_t index = 0;               // batch number within the epoch, for this rank
  std::vector<int64_t> indices;    // sample numbers, in batch order
  int64_t padding = 0;             // trailing entries of `indices` that are wrap-around padding
  std::vector<BatchArray> arrays;  // in the dataset's output order

  /// The array named `name`; throws kInvalidArgument listing the names when there is none.
  const BatchArray& operator[](std::string_view name) const;
  /// Number of samples (indices.size()).
  int64_t size() const { return static_cast<int64_t>(indices.size()); }
};

}  // namespace chute
