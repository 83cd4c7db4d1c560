// WindowDataset: the normalisation statistics of every variable, from explicit values, arrays
// of the group named by suffix or pattern, or a `chute stats` group (window_dataset.h).
#include <fmt/format.h>

#include <cmath>

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
  auto check = [](const Variable& v) {
    for (size_t i = 0; i < v.mean.size(); ++i) {
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
    for (const auto& [suffix, out] :
         {std::pair{&mean_pattern, &v.mean}, {&std_pattern, &v.stddev}}) {
      // "_mean" names "temperature_mean"; a pattern with {} ("mean/{}") names "mean/temperature".
      const size_t slot = suffix->find("{}");
      const std::string name = slot == std::string::npos
                                   ? v.name + *suffix
                                   : std::string(*suffix).replace(slot, 2, v.name);
      std::vector<double> values =
          read_as_doubles(*find_group_array(source, name, "statistics array"));
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

}  // namespace chute
