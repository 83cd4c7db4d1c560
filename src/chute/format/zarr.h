#pragma once
// Opening Zarr v2 and v3 arrays and groups from a store (open.h opens any path). Metadata documents
// are parsed into ArrayMetadata without I/O (parse_* functions) so they are tested and fuzzed
// alone.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chute/array/array.h"
#include "chute/format/group.h"
#include "chute/store/caching_store.h"

namespace chute {

/// Parses a v2 `.zarray` document (plus optional `.zattrs` text, may be empty). `name` is used in
/// error messages. Throws kInvalidMetadata / kUnsupported naming the field.
ArrayMetadata parse_zarr_v2_array(std::string_view zarray_json, std::string_view zattrs_json,
                                  const std::string& name);
/// Parses a v3 `zarr.json` array document.
ArrayMetadata parse_zarr_v3_array(std::string_view zarr_json, const std::string& name);

/// Opens the array at `prefix` in `store` (v3 zarr.json, else v2 .zarray). kNotFound if neither.
ArrayPtr open_zarr_array(StorePtr store, const std::string& prefix, const std::string& name);

/// Opens the group at `prefix` with all its arrays, recursively; uses consolidated metadata
/// (v2 .zmetadata, v3 consolidated_metadata) when present, else lists the store.
Group open_zarr_group(StorePtr store, const std::string& prefix, const std::string& name);

/// The store for a local Zarr path, behind a cache when `cache` names a folder. (Where URL
/// stores plug in: the one place an opener turns a location into a store.)
StorePtr open_path_store(const std::string& path, const CacheOptions& cache);

}  // namespace chute
