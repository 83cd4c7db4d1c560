#pragma once
// Which axis of a weather variable is time, level, latitude and longitude. Read from the
// dimension names (`_ARRAY_DIMENSIONS` in Zarr v2, `dimension_names` in v3) with the usual
// aliases, in any stored order; arrays without names are taken positionally as
// (time, [level], lat, lon), or (lat, lon) for a 2-D array.

#include <string>
#include <vector>

#include "chute/array/array.h"
#include "chute/format/group.h"

namespace chute {

enum class WeatherAxis { kTime, kLevel, kLat, kLon };

/// The axis a dimension name stands for: time/valid_time; level/pressure_level/isobaricInhPa/
/// plev/lev; lat/latitude; lon/longitude. False for any other name.
bool weather_axis_of(const std::string& dimension_name, WeatherAxis* axis);

/// Positions of the axes in an array (-1 when absent) and their names.
struct AxisPositions {
  int time = -1;
  int level = -1;
  int lat = -1;
  int lon = -1;
  std::vector<std::string> names;  // one per dimension (positional names when the array has none)
};

/// Finds the axes of `array` (variable `name`). Throws kInvalidArgument naming the variable and
/// the dimension when a name is not one of the aliases, an axis appears twice, lat or lon is
/// missing, or an unnamed array is not of rank 2, 3 or 4.
AxisPositions find_weather_axes(const Array& array, const std::string& name);

/// The array `name` of `group`; throws kInvalidArgument naming it (as `what`), the group and
/// the group's arrays when it is missing.
const ArrayPtr& find_group_array(const Group& group, const std::string& name, const char* what);

/// Reads a small array whole (any integer or float dtype) and converts its values to double.
std::vector<double> read_as_doubles(const Array& array);

}  // namespace chute
