#pragma once
// Opening an array or a group by its path, whatever its format: a Zarr folder (or a group
// member "group/x"), an HDF5 or NetCDF-4 file ("file.nc/var", "file.h5/grp/x"), a NumPy .npy
// file; Zarr also over a URL. Each format says what it recognises (format.h); the first that
// recognises the path opens it.

#include <string>

#include "chute/array/array.h"
#include "chute/format/group.h"
#include "chute/store/caching_store.h"

namespace chute {

/// Opens the array at `path`. Throws kNotFound when nothing is there, kInvalidArgument when it
/// is a group. Uses default_cache_options() (no cache unless the process set one).
ArrayPtr open_array(const std::string& path);
/// Opens the group at `path` with all its arrays, recursively.
Group open_group(const std::string& path);
/// The same with a Zarr store's reads going through a node-local cache (see CachingStore);
/// HDF5 and .npy files are read directly.
ArrayPtr open_array(const std::string& path, const CacheOptions& cache);
Group open_group(const std::string& path, const CacheOptions& cache);

/// True when `path` is a group (a Zarr group, an HDF5 file or group).
bool is_group(const std::string& path);

/// The name of the format that recognises `path` ("zarr", "hdf5", "npy"), without opening it.
std::string format_name(const std::string& path);

}  // namespace chute
