// Opening single Zarr arrays from a store or a local path.

#include <fmt/format.h>

#include "chute/format/format.h"
#include "chute/format/json_fields.h"
#include "chute/format/zarr.h"
#include "chute/format/zarr_parse.h"
#include "chute/store/caching_store.h"
#include "chute/store/open_store.h"
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

}  // namespace

bool store_has_group(const Store& store, const std::string& prefix) {
  if (store.size(join_key(prefix, ".zgroup"))) return true;
  auto text = read_store_text(store, join_key(prefix, "zarr.json"));
  if (!text) return false;
  check_json_limits(*text, fmt::format("'{}': zarr.json", store_location(store, prefix)));
  json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return is_group_node(doc);
}

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

// Zarr takes every path the formats asked before it leave: a folder, a store URL, or a path that
// does not exist (whose error then names the Zarr metadata it lacks).
class ZarrStoreFormat final : public Format {
 public:
  std::string_view name() const override { return "zarr"; }
  std::optional<FormatMatch> recognise(const std::string& path) const override {
    return FormatMatch{path, ""};
  }
  ArrayPtr open_array(const FormatMatch&, const std::string& path,
                      const CacheOptions& cache) const override;
  Group open_group(const FormatMatch&, const std::string& path,
                   const CacheOptions& cache) const override {
    return open_zarr_group(open_path_store(path, cache), "", path);
  }
  bool is_group(const FormatMatch&, const std::string& path) const override {
    try {
      return store_has_group(*open_store(path), "");
    } catch (const Error& e) {
      if (is_transient(e.code())) throw;  // a store failing now is not "not a group"
      return false;
    }
  }
};

ArrayPtr ZarrStoreFormat::open_array(const FormatMatch&, const std::string& clean,
                                     const CacheOptions& cache) const {
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
  fail(ErrorCode::kNotFound, "no Zarr array at '{}' (no zarr.json or .zarray)", clean);
}

}  // namespace

const Format& zarr_store_format() {
  static const ZarrStoreFormat format;
  return format;
}

}  // namespace chute
