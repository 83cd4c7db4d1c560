#pragma once
// NetCDF-4 on HDF5: the dimensions of a dataset, read from the dimension scales netCDF-C,
// h5netcdf and h5py attach (DIMENSION_LIST on a variable, REFERENCE_LIST and _Netcdf4Dimid on a
// scale, _Netcdf4Coordinates on a multi-dimensional coordinate variable), and which datasets
// only carry a dimension ("This is a netCDF dimension but not a netCDF variable"). Read by the
// native reader: object references are object header addresses.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chute/format/hdf5_native/file.h"

namespace chute::hdf5 {

struct DimensionScale {
  std::string name;    // the dimension's name: the scale dataset's own (prefix _nc4_non_coord_ off)
  int64_t length = 0;  // its current length: the longest extent of the scale and every dataset
                       // attached to it along that axis (an unlimited dimension grows with any)
};

/// What one open learns about scales, so a group of many variables reads each scale once.
struct NetcdfScales {
  const h5native::File* file = nullptr;  // the file the addresses below are in
  std::map<uint64_t, DimensionScale> by_address;
  std::map<uint64_t, std::vector<uint64_t>> extents;  // of datasets, by header address
  // Hard links of the groups looked in so far (group path -> link address -> name).
  std::map<std::string, std::map<uint64_t, std::string>> links;
  std::optional<std::map<uint64_t, std::string>> names;  // every object's name, on demand
  std::optional<std::map<int64_t, uint64_t>> by_dimid;   // _Netcdf4Dimid of every scale
};

/// One dimension per axis of the dataset `dataset` of `file` of rank `rank` whose attributes are
/// `attributes` (nullopt where none is attached); empty when it has no dimension scales at all.
/// Missing or malformed attributes leave axes unnamed; kCorruptData naming `where` when an
/// attached scale cannot be read.
std::vector<std::optional<DimensionScale>> dataset_dimensions(
    const h5native::File& file, const h5native::Object& dataset, size_t rank,
    const std::vector<h5native::Attribute>& attributes, NetcdfScales& scales,
    const std::string& where);

/// True when a dataset with `attributes` is a dimension scale with no variable of its own:
/// netCDF-C's and h5netcdf's NAME "This is a netCDF dimension but not a netCDF variable".
bool is_dimension_only(const h5native::File& file,
                       const std::vector<h5native::Attribute>& attributes);

/// The value of the string attribute `name` (fixed or variable length, one element), else nullopt.
std::optional<std::string> string_attribute(const h5native::File& file,
                                            const std::vector<h5native::Attribute>& attributes,
                                            std::string_view name);

}  // namespace chute::hdf5
