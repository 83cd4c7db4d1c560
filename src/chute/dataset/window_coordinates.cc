// WindowDataset: the dates and the grid computed forcings need, found in the store itself when
// the caller gives none (C++ users and `chute bench --windows`; chute.windows() passes them).
#include <fmt/format.h>

#include "chute/dataset/cf_time.h"
#include "chute/dataset/window_axes.h"
#include "chute/dataset/window_dataset.h"
#include "chute/util/error.h"

namespace chute {

namespace {

/// The 1-D coordinate of `size` values for an axis: the variable's own dimension name first,
/// then the usual names. Throws kInvalidArgument naming the group and the names tried.
const Array& find_coordinate(const Group& group, const std::string& dimension,
                             std::initializer_list<const char*> aliases, int64_t size,
                             const char* what) {
  std::vector<std::string> names = {dimension};
  for (const char* alias : aliases) {
    if (alias != dimension) names.emplace_back(alias);
  }
  for (const std::string& name : names) {
    auto it = group.arrays.find(name);
    if (it != group.arrays.end() && it->second->rank() == 1 &&
        it->second->metadata().shape[0] == size) {
      return *it->second;
    }
  }
  fail(ErrorCode::kInvalidArgument,
       "computed forcings need the {} coordinate: group '{}' has no 1-D array of {} values named "
       "{}",
       what, group.name, size, fmt::join(names, " or "));
}

}  // namespace

void WindowDataset::find_computed_forcing_coordinates(const Group& group) {
  WindowOptions& o = options_;
  if (o.computed_forcings.empty()) return;
  const Variable* timed = nullptr;
  for (const auto& v : variables_) {
    if (v->time_axis >= 0) {
      timed = v.get();
      break;
    }
  }
  if (timed == nullptr) return;  // the constructor refuses this already
  const AxisPositions axes = find_weather_axes(*timed->array, timed->name);
  if (o.time_seconds.empty()) {
    if (!o.time_map.empty()) {
      fail(ErrorCode::kInvalidArgument,
           "computed forcings with a time_map need time_seconds (the date of every mapped step)");
    }
    const Array& time = find_coordinate(group, axes.names[static_cast<size_t>(axes.time)],
                                        {"time", "valid_time"}, time_length_, "time");
    o.time_seconds = decode_cf_times(time, time.name());
    for (size_t i = 0; i < o.time_seconds.size(); ++i) {
      if (o.time_seconds[i] == kNotATime) {
        fail(ErrorCode::kInvalidArgument,
             "time coordinate '{}' has a missing date at index {}: computed forcings need every "
             "date",
             time.name(), i);
      }
    }
  }
  if (o.lat_values.empty()) {
    o.lat_values = read_as_doubles(find_coordinate(group, axes.names[static_cast<size_t>(axes.lat)],
                                                   {"lat", "latitude"}, full_height_, "latitude"));
  }
  if (o.lon_values.empty()) {
    o.lon_values = read_as_doubles(find_coordinate(group, axes.names[static_cast<size_t>(axes.lon)],
                                                   {"lon", "longitude"}, full_width_, "longitude"));
  }
}

}  // namespace chute
