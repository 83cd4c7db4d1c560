#pragma once
// Reads out of a file mapping that survive the file being truncated under them. A page of a
// shared mapping past the file's current end raises SIGBUS when touched: another process
// truncating an .npy or HDF5 file while chute copies from it would kill the training job. A
// process-wide SIGBUS handler (installed once, chaining to the one before it) recognises faults
// inside the mapping the faulting thread is copying from, marks that mapping truncated and maps
// a zero page over the missing one, so the copy runs to its end; the caller then raises an error
// instead of returning what it copied. Faults anywhere else go to the previous handler.

#include <atomic>
#include <cstddef>

namespace chute::detail {

/// One mapped region [begin, end) and the flag a fault inside it sets.
struct MappedRegion {
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  std::atomic<bool>* truncated = nullptr;
};

/// Installs the SIGBUS handler (once per process; later calls do nothing).
void install_mapped_read_guard();

/// While alive, faults inside `region` on this thread are survived (see above). Not nestable.
class MappedReadScope {
 public:
  explicit MappedReadScope(MappedRegion* region);
  ~MappedReadScope();
  MappedReadScope(const MappedReadScope&) = delete;
  MappedReadScope& operator=(const MappedReadScope&) = delete;
};

}  // namespace chute::detail
