#pragma once
// Volume crops: random boxes of one size at the same position in several arrays of one spatial
// grid (e.g. a 4-channel input and a 5-channel target of a cosmology volume), each placed
// rotated or reflected by one of the cube's symmetries (cube_symmetry.h), the same for every
// array of the sample.
//
// Samples: an epoch is `crops_per_epoch` crops numbered 0..crops_per_epoch-1 (the Sampler
// shuffles and shards these numbers like any other dataset's). Crop `sample` of epoch `epoch`
// under seed `seed` starts at corner[d] = uniform in [0, grid[d] - size[d]] and uses transform
// id uniform in [0, count) (count 24 for "rotations", 48 for "symmetries", 1 for none), drawn in
// that order from SplitMix64 seeded with crop_stream(seed, epoch, sample): a pure function of
// those three numbers, never of threads or timing.
//
// Outputs: one per array, named like it, of the array's dtype and per-sample shape
// (C, *size) (channels_last = false: what a U-Net takes) or (*size, C) (channels_last = true),
// whatever axis holds the channels in storage; (*size) for arrays without a channel axis. Then
// "crops": the start corner (int64, one per spatial axis, in stored axis order) and
// "transforms": the transform id (int64). Each crop is read straight into its slot through a
// destination view that applies the transform (transform_view): no temporary, no extra pass.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chute/dataset/dataset.h"
#include "chute/store/caching_store.h"
#include "chute/util/option_table.h"

namespace chute {

struct CropOptions {
  /// Crop extent per spatial axis; one value means the same on every axis.
  std::vector<int64_t> size = {64};
  /// The axis of every array that holds channels (negative counts from the end); none: every
  /// axis is spatial.
  std::optional<int64_t> channel_axis = 0;
  int64_t crops_per_epoch = 4096;
  /// "rotations", "symmetries", or "none"/"" (see cube_symmetry_count()).
  std::string transforms = "none";
  bool channels_last = false;

  /// Name, help and check of every field (option_table.h).
  static const std::vector<OptionField<CropOptions>>& fields();
};

/// Largest crop extent per axis and the channel axis range (what chute.crops() accepts).
inline constexpr int64_t kMaxCropExtent = int64_t{1} << 31;
inline constexpr int64_t kMaxCropAxes = 32;

/// Checks every field on its own (no arrays needed): size has 1 to kMaxCropAxes values, each in
/// [1, kMaxCropExtent]; channel_axis in [-kMaxCropAxes, kMaxCropAxes - 1]; crops_per_epoch >= 1;
/// transforms one of "none", "", "rotations", "symmetries". Throws kInvalidArgument naming the
/// field, the value and the allowed range. The CropDataset constructor calls it first.
void validate(const CropOptions& options);

class CropDataset final : public Dataset {
 public:
  /// `arrays`: (output name, array) pairs, in output order. Throws kInvalidArgument (naming the
  /// arrays and sizes) when: no array is given, a name is empty, repeats or is "crops" or
  /// "transforms"; the channel axis is outside an array's rank; the spatial grids differ; the
  /// size has the wrong number of values, is < 1 or larger than the grid; crops_per_epoch < 1;
  /// transforms is unknown, or given for a crop that is not a 3-D cube.
  CropDataset(std::vector<std::pair<std::string, ArrayPtr>> arrays, CropOptions options);

  int64_t num_samples() const override { return options_.crops_per_epoch; }
  const std::vector<OutputSpec>& outputs() const override { return outputs_; }
  void plan(int64_t sample, int64_t slot, const BatchMemory& memory, ReadPlan& plan) const override;
  std::string describe() const override;

  struct Crop {
    std::vector<int64_t> corner;  // per spatial axis
    int transform = 0;            // cube symmetry id (0: none)
  };
  /// Crop `sample` of `epoch` under `seed` (what plan() reads).
  Crop crop(uint64_t seed, int64_t epoch, int64_t sample) const;

  const CropOptions& options() const { return options_; }
  const std::vector<int64_t>& grid() const { return grid_; }  // spatial shape
  const std::vector<int64_t>& size() const { return size_; }  // crop extent per spatial axis
  int transform_count() const { return transform_count_; }
  const std::vector<std::pair<std::string, ArrayPtr>>& arrays() const { return arrays_; }

 private:
  struct Source {
    std::string name;
    ArrayPtr array;
    std::optional<size_t> channel_axis;
    int64_t channels = 1;
  };
  void plan_array(const Source& source, const Crop& crop, std::byte* slot_base, ReadPlan& plan,
                  const std::string& context) const;

  std::vector<std::pair<std::string, ArrayPtr>> arrays_;
  std::vector<Source> sources_;
  CropOptions options_;
  std::vector<int64_t> grid_;
  std::vector<int64_t> size_;
  int transform_count_ = 1;
  std::vector<OutputSpec> outputs_;
};

/// The SplitMix64 seed of crop `sample` of `epoch` under `seed`: a counter-based hash.
uint64_t crop_stream(uint64_t seed, int64_t epoch, int64_t sample);

/// Opens each local path with open_array() and builds a CropDataset; `paths` are (output name,
/// path) pairs.
std::shared_ptr<CropDataset> open_crop_dataset(
    const std::vector<std::pair<std::string, std::string>>& paths, CropOptions options,
    const CacheOptions& cache = default_cache_options());

}  // namespace chute
