#pragma once
// The roofline of arrays copied out of a file mapping (contiguous HDF5 members, .npy): they have
// no chunks to read and nothing to decode, so the machine's limit for them is the loader's own
// copy of the same boxes out of the mapped page-cache pages (Array::execute of their tasks: byte
// swaps, conversions and Fortran order included) into their places in one batch's memory, batch
// after batch, on the loader's threads (best of `repeats` passes), in GB/s of copied bytes, the
// unit of the loader's GB/s. Windows that are staged then place what was copied (roofline.h's
// place step).

#include <cstdint>
#include <functional>
#include <vector>

#include "chute/array/read_plan.h"
#include "chute/dataset/dataset.h"
#include "chute/util/byte_buffer.h"
#include "chute/util/thread_pool.h"

namespace chute::bench {

/// The mapped boxes of a list of batches, planned into one batch's memory (every batch reuses
/// it: the plans are executed one batch after another).
struct MappedCopies {
  std::vector<std::vector<ChunkTask>> batches;  // the mapped tasks of each batch
  size_t boxes = 0;
  int64_t bytes = 0;  // copied a pass
  ByteBuffer memory;  // one batch's outputs and staging
};

/// Plans `batches` of `dataset` and keeps their tasks of mapped sources, batch by batch, until
/// `max_bytes` are planned (the roofline's subset: whole batches, at least one).
MappedCopies plan_mapped_copies(const Dataset& dataset,
                                const std::vector<std::vector<int64_t>>& batches,
                                int64_t max_bytes = int64_t{1} << 30);

struct MappedCopy {
  size_t boxes = 0;
  int64_t bytes = 0;   // copied a pass
  double seconds = 0;  // the best pass
  double gbps = 0;     // bytes / seconds, 10^9 bytes/s
};

/// Copies every planned box out of its mapping into its place, the boxes of each batch shared
/// out over `pool`'s workers; `before_pass` (may be empty) runs before each timed pass
/// (--page-cache cold evicts there).
MappedCopy measure_mapped_copy(MappedCopies& copies, ThreadPool& pool, int repeats,
                               const std::function<void()>& before_pass = {});

}  // namespace chute::bench
