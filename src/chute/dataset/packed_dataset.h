#pragma once
// Packed samples: N named arrays sharing axis 0 (e.g. inputs (sample, lat, lon, channel) and
// targets (sample, lat, lon, channel)). Sample i is index i along axis 0 of every array; the batch
// holds one output per array, named like it, of shape (batch, shape[1:]...) and the array's dtype.

#include <string>
#include <utility>
#include <vector>

#include "chute/dataset/dataset.h"
#include "chute/store/caching_store.h"

namespace chute {

class PackedDataset final : public Dataset {
 public:
  /// `arrays`: (output name, array) pairs, in output order. Throws kInvalidArgument when empty,
  /// when a name repeats or is empty, when an array is 0-d, or when the arrays' axis-0 lengths
  /// differ (naming both arrays and lengths).
  explicit PackedDataset(std::vector<std::pair<std::string, ArrayPtr>> arrays);

  int64_t num_samples() const override { return num_samples_; }
  const std::vector<OutputSpec>& outputs() const override { return outputs_; }
  void plan(int64_t sample, int64_t slot, const BatchMemory& memory, ReadPlan& plan) const override;
  std::string describe() const override;

  const std::vector<std::pair<std::string, ArrayPtr>>& arrays() const { return arrays_; }

 private:
  std::vector<std::pair<std::string, ArrayPtr>> arrays_;
  std::vector<OutputSpec> outputs_;
  int64_t num_samples_ = 0;
};

/// Opens each local path with open_array() (a Zarr array folder, or "group/member") and builds a
/// PackedDataset; `paths` are (output name, path) pairs.
std::shared_ptr<PackedDataset> open_packed_dataset(
    const std::vector<std::pair<std::string, std::string>>& paths,
    const CacheOptions& cache = default_cache_options());

}  // namespace chute
