#include "chute/dataset/store_join.h"

#include <fmt/format.h>

#include <cmath>

#include "chute/dataset/window_axes.h"
#include "chute/util/error.h"

namespace chute {

namespace {

bool is_coordinate_name(const std::string& name) {
  WeatherAxis axis;
  return weather_axis_of(name, &axis);
}

std::string units_of(const Array& array) {
  const auto& attrs = array.metadata().attributes;
  auto it = attrs.find("units");
  return it != attrs.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void check_same_coordinate(const Group& a, const Group& b, const std::string& name) {
  const Array& x = *a.arrays.at(name);
  const Array& y = *b.arrays.at(name);
  auto differ = [&](const std::string& what) {
    fail(ErrorCode::kInvalidArgument, "stores '{}' and '{}' disagree on coordinate '{}': {}",
         a.name, b.name, name, what);
  };
  if (x.metadata().shape != y.metadata().shape) {
    differ(fmt::format("{} values against {}", x.metadata().num_elements(),
                       y.metadata().num_elements()));
  }
  if (units_of(x) != units_of(y)) {
    differ(fmt::format("units '{}' against '{}'", units_of(x), units_of(y)));
  }
  const std::vector<double> u = read_as_doubles(x), v = read_as_doubles(y);
  for (size_t i = 0; i < u.size(); ++i) {
    if (u[i] != v[i] && !(std::isnan(u[i]) && std::isnan(v[i]))) {
      differ(fmt::format("value {} is {} against {}", i, u[i], v[i]));
    }
  }
}

}  // namespace

Group join_stores(const std::vector<Group>& groups) {
  if (groups.empty()) fail(ErrorCode::kInvalidArgument, "join_stores: no stores");
  Group joined = groups[0];
  std::map<std::string, std::string> owner;  // array -> the store it came from
  for (const auto& [name, array] : joined.arrays) owner[name] = groups[0].name;
  for (size_t g = 1; g < groups.size(); ++g) {
    const Group& next = groups[g];
    joined.name += "+" + next.name;
    for (const auto& [name, array] : next.arrays) {
      auto found = joined.arrays.find(name);
      if (found == joined.arrays.end()) {
        joined.arrays[name] = array;
        owner[name] = next.name;
        continue;
      }
      if (is_coordinate_name(name)) {
        const Group* first = nullptr;
        for (const Group& earlier : groups) {
          if (earlier.name == owner[name]) first = &earlier;
        }
        check_same_coordinate(*first, next, name);
        continue;
      }
      fail(ErrorCode::kInvalidArgument,
           "array '{}' is in both stores '{}' and '{}' (join stores whose variables differ)", name,
           owner[name], next.name);
    }
  }
  return joined;
}

}  // namespace chute
