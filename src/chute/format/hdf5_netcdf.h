#pragma once
// NetCDF-4 on HDF5: the dimensions of a dataset, read from the dimension scales netCDF-C,
// h5netcdf and h5py attach (DIMENSION_LIST on a variable, REFERENCE_LIST and _Netcdf4Dimid on a
// scale, _Netcdf4Coordinates on a multi-dimensional coordinate variable), and which datasets
// only carry a dimension ("This is a netCDF dimension but not a netCDF variable").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chute/format/hdf5_library.h"

namespace chute::hdf5 {

struct DimensionScale {
  std::string name;    // the dimension's name: the scale dataset's own (prefix _nc4_non_coord_ off)
  int64_t length = 0;  // its current length: the longest extent of the scale and every dataset
                       // attached to it along that axis (an unlimited dimension grows with any)
};

/// What one open learns about scales, so a group of many variables reads each scale once.
struct NetcdfScales {
  std::map<haddr_t, DimensionScale> by_address;
  std::optional<std::map<int64_t, haddr_t>> by_dimid;  // _Netcdf4Dimid of every scale, on demand
};

/// One dimension per axis of `dataset` (nullopt where none is attached); empty when the dataset
/// has no dimension scales at all. Throws nothing for missing or malformed attributes (those
/// axes stay unnamed); kCorruptData naming `where` only when a scale cannot be opened.
std::vector<std::optional<DimensionScale>> dataset_dimensions(hid_t file, hid_t dataset,
                                                              NetcdfScales& scales,
                                                              const std::string& where);

/// True when `dataset` is a dimension scale with no variable of its own: netCDF-C's and
/// h5netcdf's NAME "This is a netCDF dimension but not a netCDF variable".
bool is_dimension_only(hid_t dataset);

/// The value of string attribute `name` of `object` (fixed or variable length), else nullopt.
std::optional<std::string> string_attribute(hid_t object, const char* name);

}  // namespace chute::hdf5
