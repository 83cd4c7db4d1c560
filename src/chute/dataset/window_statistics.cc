// WindowDataset: the normalisation statistics of every variable, from explicit values, arrays
// of the group named by suffix or pattern, or a `chute stats` group (window_dataset.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

#include "chute/dataset/window_axes.h"
#include "chute/dataset/window_dataset.h"
#include "chute/util/error.h"

namespace chute {

void WindowDataset::load_statistics(const Group& group, const std::vector<std::string>& targets) {
  const WindowOptions& o = options_;
  const bool by_values = !o.mean.empty() || !o.std.empty();
  const bool by_group = !o.statistics.empty();
  const bool by_arrays = !o.mean_suffix.empty() || !o.std_suffix.empty() || by_group;
  if ((by_values && by_arrays) || (by_group && (!o.mean_suffix.empty() || !o.std_suffix.empty()))) {
    fail(ErrorCode::kInvalidArgument,
         "give one of mean/std values, mean/std array suffixes or a statistics group");
  }
  normalise_ = by_values || by_arrays;
  auto chosen = [&](const Variable& v) { return v.level_axis >= 0 ? levels_.size() : size_t{1}; };
  auto check = [floor = o.std_floor](Variable& v) {
    for (size_t i = 0; i < v.mean.size(); ++i) {
      if (v.stddev[i] < floor) v.stddev[i] = floor;  // false for NaN: a NaN std stays NaN
      if (!(v.stddev[i] > 0) || !std::isfinite(v.stddev[i]) || !std::isfinite(v.mean[i])) {
        fail(ErrorCode::kInvalidArgument,
             "variable '{}' channel {}: mean {} and std {} must be finite, std > 0", v.name, i,
             v.mean[i], v.stddev[i]);
      }
    }
  };
  if (by_values) {
    if (!o.forcings.empty() || !o.statics.empty() || targets != o.variables) {
      fail(ErrorCode::kInvalidArgument,
           "mean/std values cover the input variables only; with other target variables, "
           "forcings or statics give mean_suffix/std_suffix statistics arrays");
    }
    size_t expected = 0;
    for (const std::string& name : o.variables) expected += chosen(*find_variable(name));
    if (o.mean.size() != expected || o.std.size() != expected) {
      fail(ErrorCode::kInvalidArgument,
           "expected {} mean and std values (one per channel of a time step), got {} and {}",
           expected, o.mean.size(), o.std.size());
    }
    size_t at = 0;
    for (const std::string& name : o.variables) {
      Variable& v = *find_variable(name);
      v.mean.clear(), v.stddev.clear();
      for (size_t i = 0; i < chosen(v); ++i, ++at) {
        v.mean.push_back(o.mean[at]);
        v.stddev.push_back(o.std[at]);
      }
      check(v);
    }
    return;
  }
  if (!by_arrays) return;
  if (!by_group && (o.mean_suffix.empty() || o.std_suffix.empty())) {
    fail(ErrorCode::kInvalidArgument, "give both mean_suffix and std_suffix");
  }
  const Group stats_group = by_group ? open_group(o.statistics) : Group{};
  const Group& source = by_group ? stats_group : group;
  const std::string mean_pattern = by_group ? "mean/{}" : o.mean_suffix;
  const std::string std_pattern = by_group ? "std/{}" : o.std_suffix;
  for (const auto& vp : variables_) {
    Variable& v = *vp;
    // "_mean" names "temperature_mean"; a pattern with {} ("mean/{}") names "mean/temperature".
    auto array_name = [&](const std::string& pattern) {
      const size_t slot = pattern.find("{}");
      return slot == std::string::npos ? v.name + pattern
                                       : std::string(pattern).replace(slot, 2, v.name);
    };
    const std::string mean_name = array_name(mean_pattern), std_name = array_name(std_pattern);
    const Array& mean_array = *find_group_array(source, mean_name, "statistics array");
    const Array& std_array = *find_group_array(source, std_name, "statistics array");
    // (level, lat, lon) or (lat, lon): per grid point; () or (level,): per channel.
    const bool mean_points = mean_array.rank() >= 2, std_points = std_array.rank() >= 2;
    if (mean_points != std_points) {
      fail(ErrorCode::kInvalidArgument,
           "statistics arrays '{}' (shape [{}]) and '{}' (shape [{}]): one is per grid point, "
           "the other per channel",
           mean_name, fmt::join(mean_array.metadata().shape, ", "), std_name,
           fmt::join(std_array.metadata().shape, ", "));
    }
    if (mean_points) {
      set_point_statistics(v, read_point_statistics(v, mean_array, mean_name),
                           read_point_statistics(v, std_array, std_name), {mean_name, std_name});
      continue;
    }
    for (const auto& [array, out] : {std::pair{&mean_array, &v.mean}, {&std_array, &v.stddev}}) {
      const std::string& name = array == &mean_array ? mean_name : std_name;
      std::vector<double> values = read_as_doubles(*array);
      if (v.level_axis >= 0) {
        if (values.size() != static_cast<size_t>(num_levels_)) {
          fail(ErrorCode::kInvalidArgument, "statistics array '{}' has {} values, expected {}",
               name, values.size(), num_levels_);
        }
        for (int64_t level : levels_) out->push_back(values[static_cast<size_t>(level)]);
      } else {
        if (values.size() != 1) {
          fail(ErrorCode::kInvalidArgument, "statistics array '{}' has {} values, expected 1", name,
               values.size());
        }
        out->push_back(values[0]);
      }
    }
    check(v);
  }
}

std::vector<double> WindowDataset::read_point_statistics(const Variable& v, const Array& array,
                                                         const std::string& name) const {
  const std::vector<int64_t>& shape = array.metadata().shape;
  const std::vector<int64_t> expected =
      v.level_axis >= 0 ? std::vector<int64_t>{num_levels_, full_height_, full_width_}
                        : std::vector<int64_t>{full_height_, full_width_};
  if (shape != expected) {
    fail(ErrorCode::kInvalidArgument,
         "statistics array '{}' has shape [{}]; per grid point, variable '{}' needs [{}] ({}lat, "
         "lon over the whole grid)",
         name, fmt::join(shape, ", "), v.name, fmt::join(expected, ", "),
         v.level_axis >= 0 ? "level, " : "");
  }
  const std::vector<double> values = read_as_doubles(array);
  const std::vector<int64_t> levels = v.level_axis >= 0 ? levels_ : std::vector<int64_t>{0};
  std::vector<double> out;
  out.reserve(levels.size() * static_cast<size_t>(height_ * width_));
  for (int64_t level : levels) {
    for (int64_t y = options_.lat_start; y < options_.lat_start + height_; ++y) {
      const int64_t row = (level * full_height_ + y) * full_width_;
      for (int64_t x = options_.lon_start; x < options_.lon_start + width_; ++x) {
        out.push_back(values[static_cast<size_t>(row + x)]);
      }
    }
  }
  return out;
}

void WindowDataset::set_point_statistics(Variable& v, const std::vector<double>& mean,
                                         const std::vector<double>& stddev,
                                         const std::pair<std::string, std::string>& names) const {
  const int64_t plane = height_ * width_;
  v.point_mean.resize(mean.size());
  v.point_inv_std.resize(mean.size());
  for (size_t i = 0; i < mean.size(); ++i) {
    double s = stddev[i];
    if (s < options_.std_floor) s = options_.std_floor;  // false for NaN: a NaN std stays NaN
    const bool masked = !std::isfinite(mean[i]) || !std::isfinite(s) || !(s > 0);
    if (masked && options_.masked_points == WindowOptions::MaskedPoints::kError) {
      const bool bad_mean = !std::isfinite(mean[i]);
      const auto at = static_cast<int64_t>(i);
      const int64_t level = v.level_axis >= 0 ? levels_[static_cast<size_t>(at / plane)] : -1;
      fail(ErrorCode::kInvalidArgument,
           "statistics array '{}' holds {} at {}lat index {}, lon index {}: per-grid-point "
           "statistics need a finite mean and a std > 0 at every point read (masked_points='nan' "
           "passes NaN on there, std_floor raises a small std)",
           bad_mean ? names.first : names.second, bad_mean ? mean[i] : stddev[i],
           level >= 0 ? fmt::format("level index {}, ", level) : "",
           options_.lat_start + at % plane / width_, options_.lon_start + at % width_);
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    v.point_mean[i] = masked ? nan : static_cast<float>(mean[i]);
    v.point_inv_std[i] = masked ? nan : static_cast<float>(1.0 / s);
  }
}

}  // namespace chute
