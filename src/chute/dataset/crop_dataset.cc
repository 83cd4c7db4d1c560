#include "chute/dataset/crop_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <set>

#include "chute/array/read_plan.h"
#include "chute/dataset/cube_symmetry.h"
#include "chute/format/open.h"
#include "chute/sampler/sampler.h"
#include "chute/util/error.h"
#include "chute/util/option_check.h"

namespace chute {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("({})", fmt::join(shape, ", "));
}

}  // namespace

uint64_t crop_stream(uint64_t seed, int64_t epoch, int64_t sample) {
  // Each input goes through a full splitmix round before the next is mixed in, so that
  // neighbouring (epoch, sample) pairs land far apart.
  uint64_t h = SplitMix64(seed).next();
  h = SplitMix64(h ^ (static_cast<uint64_t>(epoch) * 0xd1b54a32d192ed03ULL)).next();
  return SplitMix64(h ^ (static_cast<uint64_t>(sample) * 0x9e3779b97f4a7c15ULL)).next();
}

const std::vector<OptionField<CropOptions>>& CropOptions::fields() {
  using O = CropOptions;
  static const std::vector<OptionField<O>> table = {
      {"size",
       &O::size,
       "crop extent: one value for every spatial axis, or one per axis",
       {.low = 1,
        .high = static_cast<long double>(kMaxCropExtent),
        .non_empty = true,
        .python_type = "int | Sequence[int]"}},
      {"channel_axis",
       &O::channel_axis,
       "the axis holding channels in every array (negative: from the end)",
       {.low = -kMaxCropAxes, .high = kMaxCropAxes - 1, .none = "every axis is spatial"}},
      {"crops_per_epoch",
       &O::crops_per_epoch,
       "crops in one epoch",
       {.low = 1, .high = static_cast<long double>(INT64_MAX)}},
      {"transforms",
       &O::transforms,
       "\"rotations\" (the cube's 24 right-angle rotations), \"symmetries\" (all 48, with "
       "reflections) or \"none\", one id per crop applied while it is placed",
       {.choices = {"none", "rotations", "symmetries"}, .none = "\"none\"", .default_none = true}},
      {"channels_last", &O::channels_last,
       "outputs (*size, C) instead of (C, *size), whatever the stored layout"},
  };
  return table;
}

void validate(const CropOptions& o) {
  constexpr std::string_view kOwner = "crops";
  detail::check_option_range<int64_t>(kOwner, "size (number of values)",
                                      static_cast<int64_t>(o.size.size()), 1, kMaxCropAxes,
                                      ": one extent for every spatial axis, or one per axis");
  CropOptions checked = o;
  if (checked.transforms.empty()) checked.transforms = "none";
  check_fields(kOwner, checked);
}

CropDataset::CropDataset(std::vector<std::pair<std::string, ArrayPtr>> arrays, CropOptions options)
    : arrays_(std::move(arrays)), options_(std::move(options)) {
  validate(options_);
  if (arrays_.empty()) fail(ErrorCode::kInvalidArgument, "crops: no arrays given");
  std::set<std::string> names;
  for (const auto& [name, array] : arrays_) {
    if (name.empty()) fail(ErrorCode::kInvalidArgument, "crops: empty output name");
    if (name == "crops" || name == "transforms") {
      fail(ErrorCode::kInvalidArgument,
           "crops: '{}' names a batch entry of its own (crop corners, transform ids); name the "
           "array otherwise",
           name);
    }
    if (!names.insert(name).second) {
      fail(ErrorCode::kInvalidArgument, "crops: output name '{}' given twice", name);
    }
    if (!array) fail(ErrorCode::kInvalidArgument, "crops: array '{}' is null", name);
  }

  // Spatial grids: every axis but the channel axis, the same in every array.
  std::string first_name;
  for (const auto& [name, array] : arrays_) {
    const auto& shape = array->metadata().shape;
    const auto rank = static_cast<int64_t>(shape.size());
    Source source{name, array, std::nullopt, 1};
    if (options_.channel_axis) {
      const int64_t axis =
          *options_.channel_axis < 0 ? *options_.channel_axis + rank : *options_.channel_axis;
      if (axis < 0 || axis >= rank) {
        fail(ErrorCode::kInvalidArgument,
             "crops: channel_axis {} is outside array '{}' ({}) of shape {}",
             *options_.channel_axis, name, array->name(), shape_text(shape));
      }
      source.channel_axis = static_cast<size_t>(axis);
      source.channels = shape[static_cast<size_t>(axis)];
    }
    std::vector<int64_t> grid;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (d != source.channel_axis) grid.push_back(shape[d]);
    }
    if (grid.empty()) {
      fail(ErrorCode::kInvalidArgument, "crops: array '{}' ({}) of shape {} has no spatial axis",
           name, array->name(), shape_text(shape));
    }
    if (first_name.empty()) {
      grid_ = grid;
      first_name = name;
    } else if (grid != grid_) {
      fail(ErrorCode::kInvalidArgument,
           "crops: arrays must share one spatial grid, but '{}' has {} and '{}' has {}", first_name,
           shape_text(grid_), name, shape_text(grid));
    }
    sources_.push_back(std::move(source));
  }

  const size_t spatial = grid_.size();
  if (options_.size.size() == 1) {
    size_.assign(spatial, options_.size[0]);
  } else if (options_.size.size() == spatial) {
    size_ = options_.size;
  } else {
    fail(ErrorCode::kInvalidArgument,
         "crops: expected a size of one value or {} values (one per spatial axis), got {}", spatial,
         shape_text(options_.size));
  }
  for (size_t d = 0; d < spatial; ++d) {
    if (size_[d] < 1 || size_[d] > grid_[d]) {
      fail(ErrorCode::kInvalidArgument,
           "crops: crop size {} does not fit the spatial grid {} of '{}' (expected 1 <= size <= "
           "grid on every axis)",
           shape_text(size_), shape_text(grid_), first_name);
    }
  }
  if (options_.crops_per_epoch < 1) {
    fail(ErrorCode::kInvalidArgument, "crops: crops_per_epoch must be >= 1, got {}",
         options_.crops_per_epoch);
  }
  transform_count_ = cube_symmetry_count(options_.transforms);
  if (transform_count_ > 1) {
    if (spatial != 3 || size_[0] != size_[1] || size_[1] != size_[2]) {
      fail(ErrorCode::kInvalidArgument,
           "crops: transforms '{}' rotate a cube, but the crop is {} (expected 3 equal spatial "
           "extents)",
           options_.transforms, shape_text(size_));
    }
  }

  for (const Source& source : sources_) {
    std::vector<int64_t> shape = size_;
    if (source.channel_axis) {
      if (options_.channels_last) {
        shape.push_back(source.channels);
      } else {
        shape.insert(shape.begin(), source.channels);
      }
    }
    outputs_.push_back(OutputSpec{source.name, source.array->metadata().data_type, shape});
  }
  outputs_.push_back(OutputSpec{"crops", kInt64, {static_cast<int64_t>(spatial)}});
  outputs_.push_back(OutputSpec{"transforms", kInt64, {}});
}

CropDataset::Crop CropDataset::crop(uint64_t seed, int64_t epoch, int64_t sample) const {
  SplitMix64 rng(crop_stream(seed, epoch, sample));
  Crop crop;
  crop.corner.resize(grid_.size());
  for (size_t d = 0; d < grid_.size(); ++d) {
    crop.corner[d] =
        static_cast<int64_t>(rng.below(static_cast<uint64_t>(grid_[d] - size_[d] + 1)));
  }
  crop.transform = transform_count_ > 1
                       ? static_cast<int>(rng.below(static_cast<uint64_t>(transform_count_)))
                       : 0;
  return crop;
}

void CropDataset::plan(int64_t sample, int64_t slot, const BatchMemory& memory,
                       ReadPlan& plan) const {
  const Crop crop = this->crop(memory.seed, memory.epoch, sample);
  const size_t n = sources_.size();
  const size_t spatial = grid_.size();
  std::memcpy(memory.outputs[n] + slot * static_cast<int64_t>(spatial) * 8, crop.corner.data(),
              spatial * 8);
  const auto transform = static_cast<int64_t>(crop.transform);
  std::memcpy(memory.outputs[n + 1] + slot * 8, &transform, 8);
  const std::string context = fmt::format("crop {} at ({}), transform {}", sample,
                                          fmt::join(crop.corner, ", "), crop.transform);
  for (size_t k = 0; k < n; ++k) {
    plan_array(sources_[k], crop, memory.outputs[k] + slot * outputs_[k].sample_nbytes(), plan,
               context);
  }
}

void CropDataset::plan_array(const Source& source, const Crop& crop, std::byte* slot_base,
                             ReadPlan& plan, const std::string& context) const {
  const size_t spatial = grid_.size();
  const int64_t item = source.array->metadata().data_type.size;
  const int64_t channels = source.channels;
  // The output's spatial view (output axis order) and its channel stride.
  StridedView out;
  out.data = slot_base;
  out.shape = size_;
  out.byte_strides.resize(spatial);
  int64_t stride = item * (options_.channels_last ? channels : 1);
  for (size_t d = spatial; d-- > 0;) {
    out.byte_strides[d] = stride;
    stride *= size_[d];
  }
  const int64_t channel_stride = options_.channels_last ? item : stride;
  const StridedView placed =
      crop.transform == 0 ? out : transform_view(cube_symmetry(crop.transform), out);

  // The destination in the array's own axis order: channels where storage has them.
  StridedView dst;
  dst.data = placed.data;
  std::vector<int64_t> start;
  size_t j = 0;
  const size_t rank = source.array->rank();
  for (size_t a = 0; a < rank; ++a) {
    if (source.channel_axis && a == *source.channel_axis) {
      dst.shape.push_back(channels);
      dst.byte_strides.push_back(channel_stride);
      start.push_back(0);
    } else {
      dst.shape.push_back(placed.shape[j]);
      dst.byte_strides.push_back(placed.byte_strides[j]);
      start.push_back(crop.corner[j]);
      ++j;
    }
  }
  plan.add(*source.array, start, dst, context);
}

std::string CropDataset::describe() const {
  std::string text = fmt::format("volume crops: {} per epoch of {} in grid {}, transforms {}, {}",
                                 options_.crops_per_epoch, shape_text(size_), shape_text(grid_),
                                 transform_count_ == 1 ? std::string("none") : options_.transforms,
                                 options_.channels_last ? "channels-last" : "channels-first");
  for (const auto& [name, array] : arrays_) {
    text += fmt::format(", {}={} {} [{}]", name, array->name(), array->metadata().data_type.name(),
                        fmt::join(array->metadata().shape, ","));
  }
  return text;
}

std::shared_ptr<CropDataset> open_crop_dataset(
    const std::vector<std::pair<std::string, std::string>>& paths, CropOptions options,
    const CacheOptions& cache) {
  validate(options);  // before anything is opened
  validate(cache);
  std::vector<std::pair<std::string, ArrayPtr>> arrays;
  arrays.reserve(paths.size());
  for (const auto& [name, path] : paths) arrays.emplace_back(name, open_array(path, cache));
  return std::make_shared<CropDataset>(std::move(arrays), std::move(options));
}

}  // namespace chute
