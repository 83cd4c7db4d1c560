#pragma once
// The real batch source: chute's Loader on a Dataset, epochs chained without end. Also the
// chunk set a list of batches touches, for the roofline.

#include <memory>
#include <vector>

#include "chute/bench/batch_source.h"
#include "chute/bench/roofline.h"
#include "chute/dataset/dataset.h"
#include "chute/pipeline/loader.h"

namespace chute::bench {

class LoaderSource final : public BatchSource {
 public:
  /// Creates the loader and begins epoch 0.
  LoaderSource(DatasetPtr dataset, const LoaderOptions& options);
  ~LoaderSource() override;

  /// The next batch; at the end of an epoch begins the next one. Throws kInvalidArgument when an
  /// epoch has no batches (fewer samples than one batch with drop_last).
  BatchView next() override;
  int queue_capacity() const override;
  WorkerTimes worker_times() const override;
  void restart_around(const std::function<void()>& between) override;

 private:
  Loader loader_;
  std::optional<Batch> current_;
  std::vector<std::span<const std::byte>> buffers_;
};

/// A factory making LoaderSources from `base` with the setting's threads, prefetch and batch.
SourceFactory loader_factory(DatasetPtr dataset, const LoaderOptions& base);

/// The distinct stored chunks (shards when sharded) that reading `batches` of `dataset` touches,
/// found by planning every sample without executing anything.
std::vector<ChunkRef> chunks_of_batches(const Dataset& dataset,
                                        const std::vector<std::vector<int64_t>>& batches);

}  // namespace chute::bench
