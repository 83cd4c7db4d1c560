#pragma once
// HDF5 (and NetCDF-4) string datasets read whole: fixed-length strings, variable-length strings
// through the global heap, NetCDF char arrays. Strings are labels and coordinates (ERA5's
// `expver`, station names), read apart from the numeric read engine: never batch input.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chute/format/hdf5_native/messages.h"

namespace chute {

struct StringDataset {
  std::string name;  // file/dataset, for messages
  std::vector<int64_t> shape;
  std::vector<std::string> dimension_names;  // empty, or one per axis ("" where unnamed)
  nlohmann::json attributes = nlohmann::json::object();
  bool variable_length = false;
  uint32_t size = 0;  // bytes of one fixed-length string
  bool utf8 = false;  // the stored character set: UTF-8, else ASCII
  /// Row-major: fixed-length ones up to their first NUL (space-padded ones without trailing
  /// spaces), variable-length ones as stored; unwritten elements are "".
  std::vector<std::string> values;
};

/// True for the string data types (fixed-length, and variable-length strings).
bool is_hdf5_string(const h5native::Datatype& type);

/// Reads the string dataset `dataset` of the HDF5 file `file` whole. kInvalidArgument naming
/// it when it is no string dataset; kCorruptData naming file, dataset and element for a bad heap
/// reference; kUnsupported for a filter chute does not decode.
StringDataset read_hdf5_strings(const std::string& file, const std::string& dataset);

/// The string dataset at `path` ("file.nc/expver"), or nullopt when `path` is not an HDF5 string
/// dataset.
std::optional<StringDataset> open_strings(const std::string& path);

}  // namespace chute
