#pragma once
// The roofline of arrays copied out of a file mapping (contiguous HDF5 members, .npy): they have
// no chunks to read and nothing to decode, so the machine's limit for them is the copy of the
// same boxes out of the mapped page-cache pages into a batch-sized buffer in memory, on the
// loader's threads (best of `repeats` passes), in GB/s of copied bytes, the unit of the
// loader's GB/s. Windows that are staged then place what was copied (roofline.h's place step).

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "chute/array/array.h"
#include "chute/dataset/dataset.h"
#include "chute/util/thread_pool.h"

namespace chute::bench {

/// One box [start, start + shape) of an array whose source is a mapping.
struct MappedBox {
  const Array* array = nullptr;
  std::vector<int64_t> start;
  std::vector<int64_t> shape;
  int64_t nbytes() const;
};

/// The boxes of mapped sources that reading `batches` of `dataset` copies, found by planning
/// every sample without executing anything (as chunks_of_batches does for chunks).
std::vector<MappedBox> mapped_boxes_of_batches(const Dataset& dataset,
                                               const std::vector<std::vector<int64_t>>& batches);

struct MappedCopy {
  size_t boxes = 0;
  int64_t bytes = 0;   // copied a pass
  double seconds = 0;  // the best pass
  double gbps = 0;     // bytes / seconds, 10^9 bytes/s
};

/// Copies every box into its own slot of one buffer in memory (touched beforehand), the boxes
/// shared out over `pool`'s workers; `before_pass` (may be empty) runs before each timed pass
/// (--page-cache cold evicts there). Boxes of Fortran-ordered sources are copied as stored.
MappedCopy measure_mapped_copy(std::span<const MappedBox> boxes, ThreadPool& pool, int repeats,
                               const std::function<void()>& before_pass = {});

}  // namespace chute::bench
