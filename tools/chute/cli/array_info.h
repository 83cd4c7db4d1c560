#pragma once
// What `chute info` reports, gathered once as JSON so the human table and `--json` show the same
// facts. Scanning the stored chunks costs one size() call per chunk (or shard) of the grid.

#include <nlohmann/json.hpp>
#include <string>

#include "chute/array/array.h"
#include "chute/format/group.h"

namespace chute::cli {

/// The fill value as JSON: numbers, true/false, "NaN"/"Infinity"/"-Infinity", [re, im] for
/// complex types.
nlohmann::json fill_value_json(const ArrayMetadata& metadata);

/// Keys: name, node_type ("array"), format ("zarr", "hdf5", "npy"), zarr_format (2 or 3;
/// null for other formats), shape, chunk_shape, inner_chunk_shape (or
/// null), dtype, numpy_dtype, fill_value, dimension_names, codecs (describe()), codec_specs,
/// chunks {grid, count, stored, decoded_nbytes, inner_decoded_nbytes, stored_nbytes_mean,
/// stored_nbytes_min, stored_nbytes_max}, logical_nbytes, stored_nbytes, ratio, attributes.
nlohmann::json array_info(const Array& array, const std::string& name);

/// Keys: name, node_type ("group"), format, zarr_format, attributes, groups (member group paths),
/// arrays (array_info of every member array, name = its path in the group), totals {arrays,
/// logical_nbytes, stored_nbytes, ratio}.
nlohmann::json group_info(const Group& group, const std::string& name);

}  // namespace chute::cli
