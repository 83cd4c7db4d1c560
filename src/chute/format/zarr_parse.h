#pragma once
// Internal to format/: Zarr metadata parsers working on already-parsed JSON (shared by the string
// entry points in zarr.h and by the group openers, which get member documents out of consolidated
// metadata), and small store helpers shared by the array and group openers.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chute/array/array.h"
#include "chute/array/metadata.h"

namespace chute {

/// `zattrs` may be null (no .zattrs). Throws kInvalidMetadata / kUnsupported naming `name`.
ArrayMetadata parse_zarr_v2_array_json(const nlohmann::json& zarray, const nlohmann::json& zattrs,
                                       const std::string& name);
ArrayMetadata parse_zarr_v3_array_json(const nlohmann::json& zarr_json, const std::string& name);

/// Checks rank and that element and chunk byte counts fit in int64; `context` names the document.
void check_array_sizes(const ArrayMetadata& metadata, const std::string& context);

/// The value at `key` as text, or nullopt when missing.
std::optional<std::string> read_store_text(const Store& store, const std::string& key);

/// "<store>/<prefix>", for messages about locations.
std::string store_location(const Store& store, const std::string& prefix);

/// Opens the array at `prefix`, or returns nullptr when there is no array metadata there
/// (no zarr.json with node_type array and no .zarray). Malformed metadata still throws.
ArrayPtr try_open_zarr_array(StorePtr store, const std::string& prefix, const std::string& name);

/// Whether the store holds a Zarr v2 or v3 group at `prefix`.
bool store_has_group(const Store& store, const std::string& prefix);

/// Looks `member` up in the consolidated metadata of the group at `group_prefix`; nullptr when the
/// group has no consolidated metadata or it does not list the member as an array.
ArrayPtr open_consolidated_member(StorePtr store, const std::string& group_prefix,
                                  const std::string& member, const std::string& name);

}  // namespace chute
