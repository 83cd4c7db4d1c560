#pragma once
// Turns a list of samples into a filled batch buffer: every sample's reads go into ONE ReadPlan
// (chunks shared by samples are read and decoded once), the plan runs on the assembler's own
// bounded pool with one ReadScratch per worker, then the dataset's finish() transforms run.
// Each chunk lands in its own disjoint part of the buffer, so the result does not depend on the
// thread count. After the first batch nothing is allocated but small vectors.
//
// Read-ahead: start() plans a batch and submits its first chunk reads without waiting; finish()
// decodes the oldest started batch. With two batches started, the second one's reads are in
// flight while the first decodes; both plans share one window of `io_concurrency` reads (the
// batch started first gets freed places first). Each of the two has its own plan and staging.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
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
  /// Only when no batch is started.
  void assemble(std::span<const int64_t> samples, std::byte* buffer, ReadStats* stats = nullptr,
                uint64_t seed = 0, int64_t epoch = 0);
  /// assemble() in two steps: start() plans the batch and submits its first window of reads
  /// (at most kMaxStarted batches started and not finished); finish() completes the batch
  /// started first, rethrowing any error of its planning or reads (an error belongs to its own
  /// batch). `buffer` and `stats` stay untouched by others until its finish() returns.
  static constexpr size_t kMaxStarted = 2;
  void start(std::span<const int64_t> samples, std::byte* buffer, ReadStats* stats = nullptr,
             uint64_t seed = 0, int64_t epoch = 0);
  void finish();
  /// Drops every started batch: their reads in flight are stopped and waited for.
  void cancel();
  size_t started() const { return started_; }
  /// Chunk reads the batch finished next has submitted so far (0 when none is started): after
  /// finish() of one batch, the reads of the next one that went out before it was handed on.
  size_t reads_submitted_by_next() const;
  /// Chunk reads kept in flight by assemble() (kAutoIoConcurrency: the store's preference).
  void set_io_concurrency(size_t io_concurrency) { io_concurrency_ = io_concurrency; }
  /// The reads in flight the last finished batch allowed (1: each worker read its own chunks).
  size_t last_io_concurrency() const { return last().plan.last_io_concurrency(); }
  /// Adds the node-local caches (CachingStore) the last finished batch read through that
  /// `caches` does not hold yet.
  void add_caches_to(std::vector<const Store*>& caches) const;
  /// Buffers for stored bytes of reads in flight, shared by every slot's plan.
  const StoredBytesPool& stored_bytes_pool() const { return *stored_pool_; }
  /// Time the last finished batch spent in the dataset's finish() (post-read transforms).
  int64_t last_finish_ns() const { return last().finish_ns; }

 private:
  struct Slot {  // one batch between start() and finish()
    ReadPlan plan;
    std::vector<ByteBuffer> staging;  // one per dataset staging() spec, reused
    BatchMemory memory;
    ReadStats* stats = nullptr;
    std::exception_ptr error;  // of planning or starting, rethrown by finish()
    int64_t finish_ns = 0;
    // Datasets that finish per sample: targets of each finishing part (slot × finish_parts() +
    // part) not placed yet, and whether the part was finished (by the worker that placed its
    // last target).
    std::unique_ptr<std::atomic<int64_t>[]> unplaced;
    std::unique_ptr<std::atomic<bool>[]> finished;
    std::atomic<int64_t> sample_finish_ns{0};
  };
  /// The plan's task-done hook of a per-sample dataset: finishes the parts whose last target
  /// `task` placed.
  void task_done(Slot& slot, const ChunkTask& task);
  const Slot& last() const { return slots_[(first_ + kMaxStarted - 1) % kMaxStarted]; }
  void plan_into(Slot& slot, std::span<const int64_t> samples, std::byte* buffer, uint64_t seed,
                 int64_t epoch);

  DatasetPtr dataset_;
  int64_t parts_;  // dataset_->finish_parts(), asked once
  BatchLayout layout_;
  ThreadPool pool_;
  std::vector<ReadScratch> scratch_;
  Slot slots_[kMaxStarted];
  size_t first_ = 0;    // the slot finished next
  size_t started_ = 0;  // slots started, from first_ on
  std::shared_ptr<ReadPlan::Budget> budget_ = std::make_shared<ReadPlan::Budget>();
  std::shared_ptr<StoredBytesPool> stored_pool_ = std::make_shared<StoredBytesPool>();
  size_t io_concurrency_ = kAutoIoConcurrency;
};

}  // namespace chute
