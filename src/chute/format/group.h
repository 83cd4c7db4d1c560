#pragma once
// A group of arrays as any format opens it (a Zarr group, an HDF5 file or group, a NetCDF-4
// group): its attributes, its arrays keyed by path relative to the group, its member groups.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chute/array/array.h"

namespace chute {

struct Group {
  std::string name;             // path, for messages
  std::string format = "zarr";  // the format that opened it: "zarr", "hdf5"
  int zarr_format = 3;          // 2 or 3 for Zarr, 0 for other formats
  nlohmann::json attributes = nlohmann::json::object();
  std::map<std::string, ArrayPtr> arrays;  // member path relative to the group -> array
  std::vector<std::string> groups;         // member groups (relative paths)
  /// Members that are not arrays chute reads (a compound or reference dataset), with the reason;
  /// they do not stop the group or its other arrays from opening.
  std::map<std::string, std::string> unsupported;
  /// String datasets (an HDF5 string variable such as ERA5's `expver`): read apart, whole, as
  /// labels (hdf5_strings.h), never as arrays of numbers.
  std::vector<std::string> strings;
};

}  // namespace chute
