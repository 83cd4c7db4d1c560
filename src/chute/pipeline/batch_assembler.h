#pragma once
// Turns a list of samples into a filled batch buffer: every sample's reads go into ONE ReadPlan
// (chunks shared by samples are read and decoded once), the plan runs on the assembler's own
// bounded pool with one ReadScratch per worker, then the dataset's finish() transforms run.
// Each chunk lands in its own disjoint part of the buffer, so the result does not depend on the
// thread count. After the first batch nothing is allocated but small vectors.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/read_plan.h"
#include "chute/dataset/dataset.h"
#include "chute/util/byte_buffer.h"
#include "chute/util/thread_pool.h"

namespace chute {

/// Where each dataset output sits inside one batch buffer (each 64-byte aligned).
struct BatchLayout {
  int64_t batch_size = 0;
  std::vector<size_t> offsets;  // one per output
  size_t total_bytes = 0;

  static BatchLayout of(const Dataset& dataset, int64_t batch_size);
};

class BatchAssembler {
 public:
  /// threads == 0: default_thread_count(). batch_size >= 1.
  BatchAssembler(DatasetPtr dataset, int64_t batch_size, size_t threads);
  ~BatchAssembler();

  const BatchLayout& layout() const { return layout_; }
  size_t threads() const { return pool_.size(); }
  /// The workers, for other work between batches (e.g. preparing batch buffers).
  ThreadPool& workers() { return pool_; }
  const Dataset& dataset() const { return *dataset_; }

  /// Reads `samples` (at most batch_size, slot k = samples[k]) into `buffer` (layout().
  /// total_bytes bytes) and applies the dataset's finish(). Errors propagate as chute::Error
  /// naming the array, chunk key and sample. Not thread-safe (one producer per assembler).
  /// `seed` and `epoch` reach the dataset's plan() (BatchMemory) for per-sample randomness.
  void assemble(std::span<const int64_t> samples, std::byte* buffer, ReadStats* stats = nullptr,
                uint64_t seed = 0, int64_t epoch = 0);
  /// Chunk reads kept in flight by assemble() (kAutoIoConcurrency: the store's preference).
  void set_io_concurrency(size_t io_concurrency) { io_concurrency_ = io_concurrency; }
  /// The reads in flight the last assemble() allowed (1: each worker read its own chunks).
  size_t last_io_concurrency() const { return plan_.last_io_concurrency(); }
  /// Adds the node-local caches (CachingStore) the last assemble() read through that `caches`
  /// does not hold yet.
  void add_caches_to(std::vector<const Store*>& caches) const;
  /// Time the last assemble() spent in the dataset's finish() (post-read transforms).
  int64_t last_finish_ns() const { return last_finish_ns_; }

 private:
  DatasetPtr dataset_;
  BatchLayout layout_;
  ThreadPool pool_;
  std::vector<ReadScratch> scratch_;
  ReadPlan plan_;
  std::vector<ByteBuffer> staging_;  // one per dataset staging() spec, reused
  BatchMemory memory_;
  int64_t last_finish_ns_ = 0;
  size_t io_concurrency_ = kAutoIoConcurrency;
};

}  // namespace chute
