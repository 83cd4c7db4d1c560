#pragma once
// What the benchmark measures: an endless stream of batches (epochs follow one another) with a
// prefetch queue that can be observed, and cumulative read/decode/assemble times. The real one
// wraps the Loader (bench/loader_source.h); tests use a scripted fake.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "chute/bench/sweep.h"
#include "chute/store/caching_store.h"

namespace chute::bench {

/// A batch handed to the consumer; valid until the next call to next().
struct BatchView {
  int64_t samples = 0;
  int64_t bytes = 0;                                    // decoded bytes of all arrays of the batch
  std::span<const int64_t> indices;                     // sample numbers in batch order
  std::span<const std::span<const std::byte>> buffers;  // each array's batch data
  int queued = -1;  // batches waiting in the prefetch queue when next() was called (-1: unknown)
};

/// Cumulative worker time, summed over the loader's threads, since the source was created.
struct WorkerTimes {
  int64_t read_ns = 0;
  int64_t decode_ns = 0;
  int64_t assemble_ns = 0;
  int64_t bytes_read = 0;
  int64_t bytes_decoded = 0;
  int64_t chunks = 0;
  std::optional<CacheStats> cache;  // node-local cache counters, when reads go through one
  int64_t finish_ns = 0;            // wall time in the dataset's finish() (placement pass)
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /// Blocks until the next batch is ready; starts the next epoch when one ends.
  virtual BatchView next() = 0;
  /// The prefetch queue's capacity in batches.
  virtual int queue_capacity() const = 0;
  virtual WorkerTimes worker_times() const = 0;
  /// Stops reading ahead and drops what was read ahead (the prefetch queue), runs `between`,
  /// then goes on at the same position: for --page-cache cold, whose eviction must run while
  /// nothing reads, and after which no batch produced before it may be served.
  virtual void restart_around(const std::function<void()>& between) { between(); }
};

/// Creates a fresh source (a new loader) for one setting; the benchmark times its creation up
/// to the first batch.
using SourceFactory = std::function<std::unique_ptr<BatchSource>(const LoaderSetting&)>;

}  // namespace chute::bench
