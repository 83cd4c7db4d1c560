#include "chute/dataset/window_axes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "chute/dataset/cf_decoding.h"
#include "chute/util/error.h"

namespace chute {

bool weather_axis_of(const std::string& n, WeatherAxis* axis) {
  if (n == "time" || n == "valid_time") {
    *axis = WeatherAxis::kTime;
  } else if (n == "level" || n == "pressure_level" || n == "isobaricInhPa" || n == "plev" ||
             n == "lev") {
    *axis = WeatherAxis::kLevel;
  } else if (n == "lat" || n == "latitude") {
    *axis = WeatherAxis::kLat;
  } else if (n == "lon" || n == "longitude") {
    *axis = WeatherAxis::kLon;
  } else {
    return false;
  }
  return true;
}

AxisPositions find_weather_axes(const Array& array, const std::string& name) {
  const ArrayMetadata& meta = array.metadata();
  const int rank = static_cast<int>(meta.rank());
  AxisPositions p;
  const bool named = !meta.dimension_names.empty() &&
                     std::none_of(meta.dimension_names.begin(), meta.dimension_names.end(),
                                  [](const std::string& s) { return s.empty(); });
  if (!named) {
    if (rank == 4) {
      p.names = {"time", "level", "lat", "lon"};
    } else if (rank == 3) {
      p.names = {"time", "lat", "lon"};
    } else if (rank == 2) {
      p.names = {"lat", "lon"};
    } else {
      fail(ErrorCode::kInvalidArgument,
           "variable '{}' has shape [{}] and no dimension names, expected (time, lat, lon), "
           "(time, level, lat, lon) or (lat, lon)",
           name, fmt::join(meta.shape, ", "));
    }
  } else {
    p.names = meta.dimension_names;
  }
  for (int d = 0; d < rank; ++d) {
    WeatherAxis axis;
    if (!weather_axis_of(p.names[static_cast<size_t>(d)], &axis)) {
      fail(ErrorCode::kInvalidArgument,
           "variable '{}' has dimensions ({}): '{}' is not a time (time, valid_time), level "
           "(level, pressure_level, isobaricInhPa, plev, lev), latitude (lat, latitude) or "
           "longitude (lon, longitude) dimension",
           name, fmt::join(p.names, ", "), p.names[static_cast<size_t>(d)]);
    }
    int* slot = axis == WeatherAxis::kTime    ? &p.time
                : axis == WeatherAxis::kLevel ? &p.level
                : axis == WeatherAxis::kLat   ? &p.lat
                                              : &p.lon;
    if (*slot >= 0) {
      fail(ErrorCode::kInvalidArgument, "variable '{}' has dimensions ({}): two of them are {}",
           name, fmt::join(p.names, ", "), p.names[static_cast<size_t>(d)]);
    }
    *slot = d;
  }
  if (p.lat < 0 || p.lon < 0) {
    fail(ErrorCode::kInvalidArgument,
         "variable '{}' has dimensions ({}), expected a latitude and a longitude dimension", name,
         fmt::join(p.names, ", "));
  }
  return p;
}

namespace {

std::string member_names(const Group& group) {
  std::vector<std::string> names;
  for (const auto& [name, array] : group.arrays) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

const ArrayPtr& find_group_array(const Group& group, const std::string& name, const char* what) {
  auto it = group.arrays.find(name);
  if (it == group.arrays.end()) {
    if (std::find(group.strings.begin(), group.strings.end(), name) != group.strings.end()) {
      fail(ErrorCode::kInvalidArgument,
           "{} '{}' of group '{}' is a string variable: strings are labels (read them with "
           "chute.open or the group), never batch input",
           what, name, group.name);
    }
    fail(ErrorCode::kInvalidArgument, "{} '{}' is not an array of group '{}' (it has: {})", what,
         name, group.name, member_names(group));
  }
  return it->second;
}

std::vector<double> read_as_doubles(const Array& array) {
  const ArrayMetadata& meta = array.metadata();
  if (!detail::is_decodable(meta.data_type)) {
    fail(ErrorCode::kUnsupported, "array '{}' has dtype {}, expected a number type", array.name(),
         meta.data_type.name());
  }
  const int64_t n = meta.num_elements();
  std::vector<std::byte> raw(static_cast<size_t>(n * meta.data_type.size));
  std::vector<int64_t> start(meta.rank(), 0);
  array.read(start, StridedView::contiguous(raw.data(), meta.shape, meta.data_type.size));
  std::vector<float> as_float(static_cast<size_t>(n));
  // Exact for the values coordinates and statistics hold in float64 too: widen per element.
  std::vector<double> values(static_cast<size_t>(n));
  detail::ChannelDecode plain;
  plain.stored = meta.data_type;
  if (meta.data_type == DataType{DTypeKind::kFloat, 8}) {
    std::memcpy(values.data(), raw.data(), raw.size());
    return values;
  }
  if ((meta.data_type.kind == DTypeKind::kInt || meta.data_type.kind == DTypeKind::kUInt) &&
      meta.data_type.size == 8) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t v;
      std::memcpy(&v, raw.data() + i * 8, 8);
      values[static_cast<size_t>(i)] = meta.data_type.kind == DTypeKind::kInt
                                           ? static_cast<double>(v)
                                           : static_cast<double>(static_cast<uint64_t>(v));
    }
    return values;
  }
  detail::decode_run(raw.data(), n, plain, reinterpret_cast<std::byte*>(as_float.data()), 1,
                     DataType{DTypeKind::kFloat, 4});
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = as_float[static_cast<size_t>(i)];
  return values;
}

}  // namespace chute
