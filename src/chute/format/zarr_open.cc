// Opening single Zarr arrays from a store or a local path.

#include <fmt/format.h>

#include "chute/format/hdf5.h"
#include "chute/format/json_fields.h"
#include "chute/format/npy.h"
#include "chute/format/zarr.h"
#include "chute/format/zarr_parse.h"
#include "chute/store/caching_store.h"
#include "chute/store/open_store.h"
#include "chute/store/reference_store.h"
#include "chute/util/error.h"
#include "chute/util/json_limits.h"

namespace chute {

using nlohmann::json;

std::optional<std::string> read_store_text(const Store& store, const std::string& key) {
  ByteBuffer buffer;
  if (!store.read(key, buffer)) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(buffer.data()), buffer.size());
}

std::string store_location(const Store& store, const std::string& prefix) {
  return join_key(store.describe(), prefix);
}

namespace {

bool is_group_node(const json& doc) {
  if (!doc.is_object()) return false;
  auto it = doc.find("node_type");
  return it != doc.end() && *it == "group";
}

bool store_has_group(const Store& store, const std::string& prefix) {
  if (store.size(join_key(prefix, ".zgroup"))) return true;
  auto text = read_store_text(store, join_key(prefix, "zarr.json"));
  if (!text) return false;
  check_json_limits(*text, fmt::format("'{}': zarr.json", store_location(store, prefix)));
  json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return is_group_node(doc);
}

std::string strip_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

StorePtr open_path_store(const std::string& path, const CacheOptions& cache) {
  return with_cache(open_store(path), cache);
}

ArrayPtr try_open_zarr_array(StorePtr store, const std::string& prefix, const std::string& name) {
  ArrayMetadata metadata;
  try {
    if (auto text = read_store_text(*store, join_key(prefix, "zarr.json"))) {
      json doc = parse_json_document(*text, fmt::format("array '{}': zarr.json", name));
      if (is_group_node(doc)) return nullptr;
      metadata = parse_zarr_v3_array_json(doc, name);
    } else if (auto zarray = read_store_text(*store, join_key(prefix, ".zarray"))) {
      auto zattrs = read_store_text(*store, join_key(prefix, ".zattrs"));
      metadata = parse_zarr_v2_array(*zarray, zattrs.value_or(""), name);
    } else {
      return nullptr;
    }
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidMetadata, "array '{}': invalid metadata: {}", name, e.what());
  }
  return std::make_shared<Array>(std::move(store), prefix, std::move(metadata), name);
}

ArrayPtr open_zarr_array(StorePtr store, const std::string& prefix, const std::string& name) {
  if (ArrayPtr array = try_open_zarr_array(store, prefix, name)) return array;
  const std::string location = store_location(*store, prefix);
  if (store_has_group(*store, prefix)) {
    fail(ErrorCode::kInvalidArgument, "'{}' is a Zarr group, not an array; open it as a group",
         location);
  }
  fail(ErrorCode::kNotFound, "no Zarr array at '{}' (no zarr.json or .zarray)", location);
}

namespace {

// HDF5 and .npy are read through the local file APIs; over a URL they are refused clearly.
void refuse_single_file_url(const std::string& location, const char* kind) {
  fail(ErrorCode::kUnsupported,
       "'{}': {} files are read from local paths only; over a URL chute reads Zarr stores "
       "(copy the file locally, or convert it to Zarr)",
       location, kind);
}

bool looks_like_hdf5_url(const std::string& url) {
  for (const char* ext : {".h5/", ".hdf5/", ".he5/", ".nc/"}) {
    if ((url + "/").find(ext) != std::string::npos) return true;
  }
  return false;
}

// "refs.json/temperature" -> ("refs.json", "temperature") when a leading part of `path` is a
// reference set (reference_store.h); ("refs.json", "") for the set itself.
std::optional<std::pair<std::string, std::string>> split_reference_path(const std::string& path) {
  if (is_reference_location(path)) return std::pair{path, std::string()};
  for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
       slash = path.rfind('/', slash - 1)) {
    const std::string head = path.substr(0, slash);
    if (is_reference_location(head)) return std::pair{head, path.substr(slash + 1)};
  }
  return std::nullopt;
}

void refuse_parquet_references(const std::string& path) {
  if (is_parquet_reference_folder(path)) {
    fail(ErrorCode::kUnsupported,
         "'{}' is a Parquet reference set (kerchunk); chute's core reads JSON reference files: "
         "open it from Python with pyarrow installed (chute.open_group), or write the "
         "references as JSON",
         path);
  }
}

}  // namespace

ArrayPtr open_array(const std::string& path) { return open_array(path, default_cache_options()); }

ArrayPtr open_array(const std::string& path, const CacheOptions& cache) {
  const std::string clean = strip_trailing_slashes(path);
  if (auto refs = split_reference_path(clean)) {
    StorePtr store = with_cache(open_reference_store(refs->first), cache);
    if (ArrayPtr array = try_open_zarr_array(store, refs->second, clean)) return array;
    if (ArrayPtr array = open_consolidated_member(store, "", refs->second, clean)) return array;
    if (store_has_group(*store, refs->second)) {
      fail(ErrorCode::kInvalidArgument, "'{}' is a Zarr group, not an array; open it as a group",
           clean);
    }
    fail(ErrorCode::kNotFound, "reference file '{}' holds no array '{}'", refs->first,
         refs->second);
  }
  if (is_url(clean)) {
    if (is_npy_path(clean)) refuse_single_file_url(clean, "NumPy .npy");
    if (looks_like_hdf5_url(clean)) refuse_single_file_url(clean, "HDF5");
  } else {
    if (is_npy_path(clean)) return open_npy(clean);
    if (auto hdf5 = split_hdf5_path(clean)) return open_hdf5(hdf5->first, hdf5->second);
  }
  StorePtr store = open_path_store(clean, cache);
  if (ArrayPtr array = try_open_zarr_array(store, "", clean)) return array;
  if (store_has_group(*store, "")) {
    fail(ErrorCode::kInvalidArgument, "'{}' is a Zarr group, not an array; open it as a group",
         clean);
  }
  // "group/member": walk up to the nearest group, then find the member inside it (its own
  // metadata files, or the group's consolidated metadata).
  // (Over a URL the walk stops at "scheme://host".)
  const size_t root = url_root(clean).size();
  for (size_t slash = clean.rfind('/'); slash != std::string::npos && slash > root;
       slash = clean.rfind('/', slash - 1)) {
    const std::string group_path = clean.substr(0, slash);
    const std::string member = clean.substr(slash + 1);
    StorePtr group_store = open_path_store(group_path, cache);
    if (!store_has_group(*group_store, "")) continue;
    if (ArrayPtr array = try_open_zarr_array(group_store, member, clean)) return array;
    if (ArrayPtr array = open_consolidated_member(group_store, "", member, clean)) return array;
    fail(ErrorCode::kNotFound, "no Zarr array at '{}' (group '{}' has no array member '{}')", clean,
         group_path, member);
  }
  refuse_parquet_references(clean);
  fail(ErrorCode::kNotFound, "no Zarr array at '{}' (no zarr.json or .zarray)", clean);
}

Group open_group(const std::string& path) { return open_group(path, default_cache_options()); }

Group open_group(const std::string& path, const CacheOptions& cache) {
  const std::string clean = strip_trailing_slashes(path);
  if (auto refs = split_reference_path(clean)) {
    return open_zarr_group(with_cache(open_reference_store(refs->first), cache), refs->second,
                           clean);
  }
  if (is_url(clean)) {
    if (looks_like_hdf5_url(clean)) refuse_single_file_url(clean, "HDF5");
  } else if (auto hdf5 = split_hdf5_path(clean)) {
    return open_hdf5_group(hdf5->first, hdf5->second);
  }
  refuse_parquet_references(clean);
  return open_zarr_group(open_path_store(clean, cache), "", clean);
}

bool is_group(const std::string& path) {
  try {
    if (auto hdf5 = is_url(path) ? std::nullopt : split_hdf5_path(strip_trailing_slashes(path))) {
      open_hdf5_group(hdf5->first, hdf5->second);
      return true;
    }
    const std::string clean = strip_trailing_slashes(path);
    if (auto refs = split_reference_path(clean)) {
      return store_has_group(*open_reference_store(refs->first), refs->second);
    }
    return store_has_group(*open_store(clean), "");
  } catch (const Error& e) {
    if (is_transient(e.code())) throw;  // a store failing now is not "not a group"
    return false;
  }
}

}  // namespace chute
