#include "chute/dataset/window_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "chute/pipeline/transforms.h"
#include "chute/util/error.h"

namespace chute {

namespace {

constexpr DataType kFloat32{DTypeKind::kFloat, 4};

/// Reads a small array whole and converts its values to double.
std::vector<double> read_as_doubles(const Array& array) {
  const ArrayMetadata& meta = array.metadata();
  const int64_t n = meta.num_elements();
  const DataType type = meta.data_type;
  std::vector<std::byte> raw(static_cast<size_t>(n * type.size));
  std::vector<int64_t> start(meta.rank(), 0);
  array.read(start, StridedView::contiguous(raw.data(), meta.shape, type.size));
  std::vector<double> values(static_cast<size_t>(n));
  auto convert = [&]<typename T>(T) {
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
      values[static_cast<size_t>(i)] = static_cast<double>(v);
    }
  };
  switch (type.kind) {
    case DTypeKind::kFloat:
      if (type.size == 4)
        convert(float{});
      else if (type.size == 8)
        convert(double{});
      else if (type.size == 2) {
        for (int64_t i = 0; i < n; ++i) {
          uint16_t bits;
          std::memcpy(&bits, raw.data() + i * 2, 2);
          values[static_cast<size_t>(i)] = half_to_float(bits);
        }
      }
      break;
    case DTypeKind::kBFloat:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, raw.data() + i * 2, 2);
        values[static_cast<size_t>(i)] = bfloat16_to_float(bits);
      }
      break;
    case DTypeKind::kInt:
      if (type.size == 1) convert(int8_t{});
      if (type.size == 2) convert(int16_t{});
      if (type.size == 4) convert(int32_t{});
      if (type.size == 8) convert(int64_t{});
      break;
    case DTypeKind::kUInt:
      if (type.size == 1) convert(uint8_t{});
      if (type.size == 2) convert(uint16_t{});
      if (type.size == 4) convert(uint32_t{});
      if (type.size == 8) convert(uint64_t{});
      break;
    default:
      fail(ErrorCode::kUnsupported, "array '{}' has dtype {}, expected a number type", array.name(),
           type.name());
  }
  return values;
}

std::string member_names(const Group& group) {
  std::vector<std::string> names;
  for (const auto& [name, array] : group.arrays) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}

const ArrayPtr& find_array(const Group& group, const std::string& name, const char* what) {
  auto it = group.arrays.find(name);
  if (it == group.arrays.end()) {
    fail(ErrorCode::kInvalidArgument, "{} '{}' is not an array of group '{}' (it has: {})", what,
         name, group.name, member_names(group));
  }
  return it->second;
}

std::string offset_name(int64_t offset) { return fmt::format("t{:+d}", offset); }

}  // namespace

WindowDataset::WindowDataset(const Group& group, WindowOptions options)
    : options_(std::move(options)) {
  const WindowOptions& o = options_;
  if (o.variables.empty()) fail(ErrorCode::kInvalidArgument, "window dataset: no variables given");
  if (o.input_offsets.empty()) {
    fail(ErrorCode::kInvalidArgument, "window dataset: input_offsets is empty");
  }
  if (!(o.output_dtype == kFloat32 || o.output_dtype == DataType{DTypeKind::kFloat, 2} ||
        o.output_dtype == DataType{DTypeKind::kBFloat, 2})) {
    fail(ErrorCode::kInvalidArgument,
         "window dataset: output dtype must be float32, float16 or bfloat16, got {}",
         o.output_dtype.name());
  }
  if (!o.level_indices.empty() && !o.level_values.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "window dataset: give level_indices or level_values, not both");
  }

  // Variables: shapes must agree on time, lat, lon (and level for the 3-D ones).
  int64_t time_length = -1, num_levels = -1;
  std::string first_name, first_3d;
  for (const std::string& name : o.variables) {
    const ArrayPtr& array = find_array(group, name, "variable");
    const ArrayMetadata& meta = array->metadata();
    if (meta.rank() != 3 && meta.rank() != 4) {
      fail(ErrorCode::kInvalidArgument,
           "variable '{}' has shape [{}], expected (time, lat, lon) or (time, level, lat, lon)",
           name, fmt::join(meta.shape, ", "));
    }
    if (meta.data_type != kFloat32) {
      fail(ErrorCode::kInvalidArgument, "variable '{}' has dtype {}, expected float32", name,
           meta.data_type.name());
    }
    const int64_t t = meta.shape[0], h = meta.shape[meta.rank() - 2], w = meta.shape.back();
    if (time_length < 0) {
      time_length = t, height_ = h, width_ = w, first_name = name;
    } else if (t != time_length || h != height_ || w != width_) {
      fail(ErrorCode::kInvalidArgument,
           "variable '{}' has (time, lat, lon) = ({}, {}, {}) but '{}' has ({}, {}, {})", name, t,
           h, w, first_name, time_length, height_, width_);
    }
    if (meta.rank() == 4) {
      if (num_levels < 0) {
        num_levels = meta.shape[1], first_3d = name;
      } else if (meta.shape[1] != num_levels) {
        fail(ErrorCode::kInvalidArgument, "variable '{}' has {} levels but '{}' has {}", name,
             meta.shape[1], first_3d, num_levels);
      }
    }
    variables_.push_back(Variable{name, array, meta.rank() == 4, 0});
  }

  // Levels, by position or by value of the level coordinate.
  if (num_levels > 0) {
    auto coordinate = group.arrays.find(o.level_coordinate);
    if (coordinate != group.arrays.end() && coordinate->second->rank() == 1 &&
        coordinate->second->metadata().shape[0] == num_levels) {
      level_values_ = read_as_doubles(*coordinate->second);
    }
    if (!o.level_values.empty()) {
      if (level_values_.empty()) {
        fail(ErrorCode::kInvalidArgument,
             "level_values given but group '{}' has no 1-D '{}' array of {} levels", group.name,
             o.level_coordinate, num_levels);
      }
      for (double value : o.level_values) {
        auto it = std::find_if(level_values_.begin(), level_values_.end(), [&](double v) {
          return std::abs(v - value) <= 1e-9 * std::max(1.0, std::abs(value));
        });
        if (it == level_values_.end()) {
          fail(ErrorCode::kInvalidArgument, "level {} not in '{}' (it has: {})", value,
               o.level_coordinate, fmt::join(level_values_, ", "));
        }
        levels_.push_back(it - level_values_.begin());
      }
    } else if (!o.level_indices.empty()) {
      for (int64_t index : o.level_indices) {
        if (index < 0 || index >= num_levels) {
          fail(ErrorCode::kInvalidArgument, "level index {} outside [0, {})", index, num_levels);
        }
        levels_.push_back(index);
      }
    } else {
      for (int64_t l = 0; l < num_levels; ++l) levels_.push_back(l);
    }
  }
  for (Variable& v : variables_) {
    v.channel_start = step_channels_;
    step_channels_ += v.has_levels ? static_cast<int64_t>(levels_.size()) : 1;
  }

  // Windows: t and every t + offset inside [time_start, time_stop).
  const int64_t stop = o.time_stop < 0 ? time_length : o.time_stop;
  if (o.time_start < 0 || o.time_start >= stop || stop > time_length) {
    fail(ErrorCode::kInvalidArgument, "time range [{}, {}) is not inside [0, {})", o.time_start,
         stop, time_length);
  }
  int64_t min_offset = 0, max_offset = 0;
  for (const auto* list : {&o.input_offsets, &o.target_offsets}) {
    for (int64_t offset : *list) {
      min_offset = std::min(min_offset, offset);
      max_offset = std::max(max_offset, offset);
    }
  }
  first_time_ = o.time_start - min_offset;
  num_samples_ = stop - max_offset - first_time_;
  if (num_samples_ <= 0) {
    fail(ErrorCode::kInvalidArgument, "no window with offsets [{}, {}] fits in time range [{}, {})",
         min_offset, max_offset, o.time_start, stop);
  }

  // Normalisation statistics, one value per channel of one time step.
  const bool by_values = !o.mean.empty() || !o.std.empty();
  const bool by_arrays = !o.mean_suffix.empty() || !o.std_suffix.empty();
  if (by_values && by_arrays) {
    fail(ErrorCode::kInvalidArgument, "give mean/std values or mean/std array suffixes, not both");
  }
  std::vector<double> mean, stddev;
  if (by_values) {
    if (o.mean.size() != static_cast<size_t>(step_channels_) ||
        o.std.size() != static_cast<size_t>(step_channels_)) {
      fail(ErrorCode::kInvalidArgument,
           "expected {} mean and std values (one per channel of a time step), got {} and {}",
           step_channels_, o.mean.size(), o.std.size());
    }
    mean.assign(o.mean.begin(), o.mean.end());
    stddev.assign(o.std.begin(), o.std.end());
  } else if (by_arrays) {
    if (o.mean_suffix.empty() || o.std_suffix.empty()) {
      fail(ErrorCode::kInvalidArgument, "give both mean_suffix and std_suffix");
    }
    for (const Variable& v : variables_) {
      for (const auto& [suffix, out] :
           {std::pair{&o.mean_suffix, &mean}, {&o.std_suffix, &stddev}}) {
        // "_mean" names "temperature_mean"; a pattern with {} ("mean/{}") names "mean/temperature".
        const size_t slot = suffix->find("{}");
        const std::string name = slot == std::string::npos
                                     ? v.name + *suffix
                                     : std::string(*suffix).replace(slot, 2, v.name);
        std::vector<double> values = read_as_doubles(*find_array(group, name, "statistics array"));
        if (v.has_levels) {
          if (values.size() != static_cast<size_t>(num_levels)) {
            fail(ErrorCode::kInvalidArgument, "statistics array '{}' has {} values, expected {}",
                 name, values.size(), num_levels);
          }
          for (int64_t level : levels_) out->push_back(values[static_cast<size_t>(level)]);
        } else {
          if (values.size() != 1) {
            fail(ErrorCode::kInvalidArgument, "statistics array '{}' has {} values, expected 1",
                 name, values.size());
          }
          out->push_back(values[0]);
        }
      }
    }
  }
  for (size_t c = 0; c < stddev.size(); ++c) {
    if (!(stddev[c] > 0) || !std::isfinite(stddev[c]) || !std::isfinite(mean[c])) {
      fail(ErrorCode::kInvalidArgument, "channel {}: mean {} and std {} must be finite, std > 0", c,
           mean[c], stddev[c]);
    }
    mean_.push_back(static_cast<float>(mean[c]));
    inv_std_.push_back(static_cast<float>(1.0 / stddev[c]));
  }

  // Outputs, and float32 staging when casting.
  auto spec = [&](const char* name, size_t offsets, DataType dtype) {
    const int64_t channels = static_cast<int64_t>(offsets) * step_channels_;
    std::vector<int64_t> shape = o.channels_last ? std::vector<int64_t>{height_, width_, channels}
                                                 : std::vector<int64_t>{channels, height_, width_};
    return OutputSpec{name, dtype, std::move(shape)};
  };
  outputs_.push_back(spec("inputs", o.input_offsets.size(), o.output_dtype));
  if (!o.target_offsets.empty()) {
    outputs_.push_back(spec("targets", o.target_offsets.size(), o.output_dtype));
  }
  if (o.output_dtype != kFloat32) {
    staging_.push_back(spec("inputs", o.input_offsets.size(), kFloat32));
    if (!o.target_offsets.empty()) {
      staging_.push_back(spec("targets", o.target_offsets.size(), kFloat32));
    }
  }
}

void WindowDataset::plan(int64_t sample, int64_t slot, const BatchMemory& memory,
                         ReadPlan& plan) const {
  const int64_t time = first_time_ + sample;
  const bool staged = !staging_.empty();
  plan_output(time, options_.input_offsets, (staged ? memory.staging[0] : memory.outputs[0]), slot,
              plan, sample);
  if (!options_.target_offsets.empty()) {
    plan_output(time, options_.target_offsets, (staged ? memory.staging[1] : memory.outputs[1]),
                slot, plan, sample);
  }
}

void WindowDataset::plan_output(int64_t time, const std::vector<int64_t>& offsets, std::byte* base,
                                int64_t slot, ReadPlan& plan, int64_t sample) const {
  constexpr int64_t kItem = 4;
  const int64_t channels = static_cast<int64_t>(offsets.size()) * step_channels_;
  const int64_t plane = height_ * width_;
  std::byte* slot_base = base + slot * channels * plane * kItem;
  // Size-1 axes (time, level) get any positive stride; lat/lon follow the output layout.
  const int64_t row_stride = options_.channels_last ? width_ * channels * kItem : width_ * kItem;
  const int64_t col_stride = options_.channels_last ? channels * kItem : kItem;
  const int64_t channel_step = options_.channels_last ? kItem : plane * kItem;
  for (size_t oi = 0; oi < offsets.size(); ++oi) {
    const int64_t t = time + offsets[oi];
    const std::string context = fmt::format("sample {} (time {})", sample, t);
    for (const Variable& v : variables_) {
      const int64_t levels = v.has_levels ? static_cast<int64_t>(levels_.size()) : 1;
      for (int64_t li = 0; li < levels; ++li) {
        const int64_t c = static_cast<int64_t>(oi) * step_channels_ + v.channel_start + li;
        StridedView dst;
        dst.data = slot_base + c * channel_step;
        if (v.has_levels) {
          dst.shape = {1, 1, height_, width_};
          dst.byte_strides = {kItem, kItem, row_stride, col_stride};
          const int64_t start[4] = {t, levels_[static_cast<size_t>(li)], 0, 0};
          plan.add(*v.array, start, dst, context);
        } else {
          dst.shape = {1, height_, width_};
          dst.byte_strides = {kItem, row_stride, col_stride};
          const int64_t start[3] = {t, 0, 0};
          plan.add(*v.array, start, dst, context);
        }
      }
    }
  }
}

void WindowDataset::finish(const BatchMemory& memory, ThreadPool* pool) const {
  const bool staged = !staging_.empty();
  if (!staged && mean_.empty()) return;
  const float* mean = mean_.empty() ? nullptr : mean_.data();
  const float* inv_std = inv_std_.empty() ? nullptr : inv_std_.data();
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const OutputSpec& spec = outputs_[k];
    const int64_t elements = spec.sample_elements();
    const int64_t channels = options_.channels_last ? spec.sample_shape[2] : spec.sample_shape[0];
    const ChannelLayout layout = options_.channels_last
                                     ? ChannelLayout{height_ * width_, channels, 1}
                                     : ChannelLayout{1, channels, height_ * width_};
    const std::byte* in = staged ? memory.staging[k] : memory.outputs[k];
    std::byte* out = memory.outputs[k];
    auto one_slot = [&](size_t slot, size_t) {
      const auto s = static_cast<int64_t>(slot);
      normalize_cast(reinterpret_cast<const float*>(in + s * elements * 4),
                     out + s * elements * spec.dtype.size, spec.dtype, layout, mean, inv_std,
                     step_channels_);
    };
    if (pool) {
      pool->parallel_for(static_cast<size_t>(memory.batch_size), one_slot);
    } else {
      for (int64_t s = 0; s < memory.batch_size; ++s) one_slot(static_cast<size_t>(s), 0);
    }
  }
}

std::vector<std::string> WindowDataset::channel_names(size_t output) const {
  const auto& offsets = output == 0 ? options_.input_offsets : options_.target_offsets;
  std::vector<std::string> names;
  for (int64_t offset : offsets) {
    for (const Variable& v : variables_) {
      if (!v.has_levels) {
        names.push_back(fmt::format("{}/{}", v.name, offset_name(offset)));
        continue;
      }
      for (int64_t level : levels_) {
        const std::string level_name =
            level_values_.empty()
                ? fmt::format("level[{}]", level)
                : fmt::format("level={}", level_values_[static_cast<size_t>(level)]);
        names.push_back(fmt::format("{}/{}/{}", v.name, level_name, offset_name(offset)));
      }
    }
  }
  return names;
}

std::string WindowDataset::describe() const {
  std::vector<std::string> names;
  for (const Variable& v : variables_) names.push_back(v.name);
  return fmt::format(
      "variables: {} windows (t = {}..{}), [{}], {} levels, inputs at [{}], targets at [{}], "
      "{} channels per step, {}, {}{}",
      num_samples_, first_time_, first_time_ + num_samples_ - 1, fmt::join(names, ", "),
      levels_.size(), fmt::join(options_.input_offsets, ", "),
      fmt::join(options_.target_offsets, ", "), step_channels_,
      options_.channels_last ? "channels-last" : "channels-first", options_.output_dtype.name(),
      mean_.empty() ? "" : ", normalised");
}

std::shared_ptr<WindowDataset> open_window_dataset(const std::string& path, WindowOptions options) {
  return std::make_shared<WindowDataset>(open_group(path), std::move(options));
}

}  // namespace chute
