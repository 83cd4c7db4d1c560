#include "chute/dataset/packed_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "chute/array/read_plan.h"
#include "chute/format/open.h"
#include "chute/util/error.h"

namespace chute {

PackedDataset::PackedDataset(std::vector<std::pair<std::string, ArrayPtr>> arrays)
    : arrays_(std::move(arrays)) {
  if (arrays_.empty())
    fail(ErrorCode::kInvalidArgument, "a packed dataset needs at least one array");
  std::set<std::string> names;
  for (const auto& [name, array] : arrays_) {
    if (name.empty()) fail(ErrorCode::kInvalidArgument, "packed dataset: empty output name");
    if (!names.insert(name).second) {
      fail(ErrorCode::kInvalidArgument, "packed dataset: output name '{}' given twice", name);
    }
    if (!array) fail(ErrorCode::kInvalidArgument, "packed dataset: array '{}' is null", name);
    if (array->rank() == 0) {
      fail(ErrorCode::kInvalidArgument,
           "packed dataset: array '{}' ({}) is 0-d, expected a sample axis first", name,
           array->name());
    }
  }
  const auto& [first_name, first] = arrays_.front();
  num_samples_ = first->metadata().shape[0];
  for (const auto& [name, array] : arrays_) {
    const auto& shape = array->metadata().shape;
    if (shape[0] != num_samples_) {
      fail(ErrorCode::kInvalidArgument,
           "packed dataset: arrays must share axis 0, but '{}' ({}) has {} samples and '{}' ({}) "
           "has {}",
           first_name, first->name(), num_samples_, name, array->name(), shape[0]);
    }
    outputs_.push_back(
        OutputSpec{name, array->metadata().data_type, {shape.begin() + 1, shape.end()}});
  }
}

void PackedDataset::plan(int64_t sample, int64_t slot, const BatchMemory& memory,
                         ReadPlan& plan) const {
  for (size_t k = 0; k < arrays_.size(); ++k) {
    const Array& array = *arrays_[k].second;
    const OutputSpec& spec = outputs_[k];
    std::vector<int64_t> start(array.rank(), 0);
    start[0] = sample;
    std::vector<int64_t> box(array.metadata().shape);
    box[0] = 1;
    StridedView dst = StridedView::contiguous(memory.outputs[k] + slot * spec.sample_nbytes(),
                                              std::move(box), spec.dtype.size);
    plan.add(array, start, dst, fmt::format("sample {}", sample));
  }
}

std::string PackedDataset::describe() const {
  std::string text = fmt::format("packed: {} samples", num_samples_);
  for (const auto& [name, array] : arrays_) {
    text += fmt::format(", {}={} {} [{}]", name, array->name(), array->metadata().data_type.name(),
                        fmt::join(array->metadata().shape, ","));
  }
  return text;
}

std::shared_ptr<PackedDataset> open_packed_dataset(
    const std::vector<std::pair<std::string, std::string>>& paths, const CacheOptions& cache) {
  std::vector<std::pair<std::string, ArrayPtr>> arrays;
  arrays.reserve(paths.size());
  for (const auto& [name, path] : paths) arrays.emplace_back(name, open_array(path, cache));
  return std::make_shared<PackedDataset>(std::move(arrays));
}

}  // namespace chute
