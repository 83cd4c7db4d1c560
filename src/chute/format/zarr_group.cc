// Opening Zarr groups with all their arrays: from consolidated metadata (v2 .zmetadata, v3
// consolidated_metadata inside zarr.json) when present, else by listing the store.

#include <fmt/format.h>

#include <optional>
#include <set>

#include "chute/format/json_fields.h"
#include "chute/format/zarr.h"
#include "chute/format/zarr_parse.h"
#include "chute/util/error.h"
#include "chute/util/interrupt.h"

namespace chute {
namespace {

using nlohmann::json;

constexpr int kMaxGroupDepth = 64;

std::string member_name(const std::string& group_name, const std::string& path) {
  return group_name.empty() ? path : group_name + "/" + path;
}

// Members come from documents that could name any key; refuse paths that leave the group.
void check_member_path(const std::string& path, const std::string& context) {
  bool ok = !path.empty() && path.front() != '/' && path.back() != '/';
  size_t start = 0;
  while (ok && start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string_view part(path.data() + start, end - start);
    ok = !part.empty() && part != "." && part != "..";
    start = end + 1;
  }
  if (!ok) {
    fail(ErrorCode::kInvalidMetadata, "{} names an invalid member path '{}'", context, path);
  }
}

// Collects members while opening, then hands out a Group with sorted, unique subgroups.
struct GroupBuilder {
  StorePtr store;
  std::string prefix;
  Group group;
  std::set<std::string> subgroups;

  void add_array(const std::string& path, ArrayMetadata metadata) {
    const std::string name = member_name(group.name, path);
    group.arrays.emplace(
        path, std::make_shared<Array>(store, join_key(prefix, path), std::move(metadata), name));
  }
  Group finish() {
    group.groups.assign(subgroups.begin(), subgroups.end());
    return std::move(group);
  }
};

std::string node_type_of(const json& doc) {
  if (!doc.is_object()) return {};
  auto it = doc.find("node_type");
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The `metadata` object of an inline consolidated_metadata, or nullptr when there is none.
const json* v3_consolidated_members(const json& group_doc, const std::string& context) {
  auto it = group_doc.find("consolidated_metadata");
  if (it == group_doc.end() || it->is_null()) return nullptr;
  FieldReader consolidated(*it, context, "consolidated_metadata.");
  if (const json* kind = consolidated.find("kind"); kind != nullptr && *kind != "inline") {
    return nullptr;
  }
  const json& members = consolidated.require("metadata");
  if (!members.is_object()) {
    consolidated.invalid("metadata", "must be an object, found " + describe_json(members));
  }
  return &members;
}

// Adds the members of a v3 consolidated document; `base` is the path of the group whose
// document this is, relative to the opened group (nested consolidated groups recurse).
void add_v3_consolidated(GroupBuilder& builder, const json& members, const std::string& base,
                         const std::string& context, int depth) {
  if (depth > kMaxGroupDepth) {
    fail(ErrorCode::kInvalidMetadata, "{}: groups nest deeper than {} levels", context,
         kMaxGroupDepth);
  }
  for (const auto& [key, doc] : members.items()) {
    check_interrupt();
    check_member_path(key, context + " field 'consolidated_metadata.metadata'");
    const std::string path = join_key(base, key);
    const std::string type = node_type_of(doc);
    if (type == "array") {
      if (builder.group.arrays.count(path) == 0) {
        builder.add_array(path,
                          parse_zarr_v3_array_json(doc, member_name(builder.group.name, path)));
      }
    } else if (type == "group") {
      builder.subgroups.insert(path);
      if (const json* nested = v3_consolidated_members(doc, context)) {
        add_v3_consolidated(builder, *nested, path, context, depth + 1);
      }
    } else {
      fail(ErrorCode::kInvalidMetadata,
           "{} field 'consolidated_metadata.metadata' entry '{}' has no node_type 'array' or "
           "'group': {}",
           context, key, describe_json(doc));
    }
  }
}

// The member path of a consolidated v2 key "<path>/<suffix>", or nullopt for other keys.
std::optional<std::string> strip_member_suffix(const std::string& key, std::string_view suffix) {
  if (key.size() <= suffix.size() + 1 ||
      key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0 ||
      key[key.size() - suffix.size() - 1] != '/') {
    return std::nullopt;
  }
  return key.substr(0, key.size() - suffix.size() - 1);
}

void add_v2_consolidated(GroupBuilder& builder, const json& zmetadata, const std::string& context) {
  FieldReader reader(zmetadata, context);
  const json& members = reader.require("metadata");
  if (!members.is_object()) {
    reader.invalid("metadata", "must be an object, found " + describe_json(members));
  }
  for (auto it = members.begin(); it != members.end(); ++it) {
    check_interrupt();
    if (auto path = strip_member_suffix(it.key(), ".zarray")) {
      check_member_path(*path, context + " field 'metadata'");
      auto attrs = members.find(*path + "/.zattrs");
      const json zattrs = attrs == members.end() ? json(nullptr) : *attrs;
      builder.add_array(*path, parse_zarr_v2_array_json(it.value(), zattrs,
                                                        member_name(builder.group.name, *path)));
    } else if (auto group_path = strip_member_suffix(it.key(), ".zgroup")) {
      check_member_path(*group_path, context + " field 'metadata'");
      builder.subgroups.insert(*group_path);
    }
  }
}

// Lists the store below the group, following member groups of the same format.
void add_listed_members(GroupBuilder& builder, const std::string& path, int depth) {
  if (depth > kMaxGroupDepth) {
    fail(ErrorCode::kInvalidMetadata, "group '{}': groups nest deeper than {} levels",
         builder.group.name, kMaxGroupDepth);
  }
  const Store& store = *builder.store;
  for (const std::string& child : store.list(join_key(builder.prefix, path))) {
    check_interrupt();
    if (child.empty() || child.front() == '.' || child == "zarr.json") continue;
    const std::string child_path = join_key(path, child);
    const std::string child_prefix = join_key(builder.prefix, child_path);
    const std::string name = member_name(builder.group.name, child_path);
    if (builder.group.zarr_format == 3) {
      auto text = read_store_text(store, join_key(child_prefix, "zarr.json"));
      if (!text) continue;
      json doc = parse_json_document(*text, fmt::format("node '{}': zarr.json", name));
      const std::string type = node_type_of(doc);
      if (type == "group") {
        builder.subgroups.insert(child_path);
        add_listed_members(builder, child_path, depth + 1);
      } else {
        builder.add_array(child_path, parse_zarr_v3_array_json(doc, name));
      }
    } else if (auto zarray = read_store_text(store, join_key(child_prefix, ".zarray"))) {
      auto zattrs = read_store_text(store, join_key(child_prefix, ".zattrs"));
      builder.add_array(child_path, parse_zarr_v2_array(*zarray, zattrs.value_or(""), name));
    } else if (store.size(join_key(child_prefix, ".zgroup"))) {
      builder.subgroups.insert(child_path);
      add_listed_members(builder, child_path, depth + 1);
    }
  }
}

Group open_v3_group(GroupBuilder& builder, const std::string& text) {
  const std::string context = fmt::format("group '{}': zarr.json", builder.group.name);
  json doc = parse_json_document(text, context);
  FieldReader reader(doc, context);
  if (reader.require_integer("zarr_format") != 3) {
    reader.invalid("zarr_format",
                   "must be 3, found " + describe_json(reader.require("zarr_format")));
  }
  const std::string type = reader.require_string("node_type");
  if (type == "array") {
    fail(ErrorCode::kInvalidArgument, "'{}' is a Zarr array, not a group",
         store_location(*builder.store, builder.prefix));
  }
  if (type != "group") reader.invalid("node_type", fmt::format("is '{}', expected 'group'", type));
  builder.group.zarr_format = 3;
  if (const json* attributes = reader.find("attributes"); attributes && !attributes->is_null()) {
    if (!attributes->is_object()) {
      reader.invalid("attributes", "must be an object, found " + describe_json(*attributes));
    }
    builder.group.attributes = *attributes;
  }
  if (const json* members = v3_consolidated_members(doc, context)) {
    add_v3_consolidated(builder, *members, "", context, 0);
  } else {
    add_listed_members(builder, "", 0);
  }
  return builder.finish();
}

Group open_v2_group(GroupBuilder& builder, const std::string& zgroup_text) {
  const std::string& name = builder.group.name;
  const std::string context = fmt::format("group '{}': .zgroup", name);
  json zgroup = parse_json_document(zgroup_text, context);
  FieldReader reader(zgroup, context);
  if (reader.require_integer("zarr_format") != 2) {
    reader.invalid("zarr_format",
                   "must be 2, found " + describe_json(reader.require("zarr_format")));
  }
  builder.group.zarr_format = 2;
  const Store& store = *builder.store;
  if (auto zattrs = read_store_text(store, join_key(builder.prefix, ".zattrs"));
      zattrs && zattrs->find_first_not_of(" \t\r\n") != std::string::npos) {
    json attributes = parse_json_document(*zattrs, fmt::format("group '{}': .zattrs", name));
    if (!attributes.is_object()) {
      fail(ErrorCode::kInvalidMetadata, "group '{}': .zattrs must be a JSON object, found {}", name,
           describe_json(attributes));
    }
    builder.group.attributes = std::move(attributes);
  }
  if (auto zmetadata = read_store_text(store, join_key(builder.prefix, ".zmetadata"))) {
    const std::string zcontext = fmt::format("group '{}': .zmetadata", name);
    add_v2_consolidated(builder, parse_json_document(*zmetadata, zcontext), zcontext);
  } else {
    add_listed_members(builder, "", 0);
  }
  return builder.finish();
}

}  // namespace

Group open_zarr_group(StorePtr store, const std::string& prefix, const std::string& name) {
  GroupBuilder builder{store, prefix, Group{}, {}};
  builder.group.name = name;
  try {
    if (auto text = read_store_text(*store, join_key(prefix, "zarr.json"))) {
      return open_v3_group(builder, *text);
    }
    if (auto text = read_store_text(*store, join_key(prefix, ".zgroup"))) {
      return open_v2_group(builder, *text);
    }
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidMetadata, "group '{}': invalid metadata: {}", name, e.what());
  }
  if (store->size(join_key(prefix, ".zarray"))) {
    fail(ErrorCode::kInvalidArgument, "'{}' is a Zarr array, not a group",
         store_location(*store, prefix));
  }
  fail(ErrorCode::kNotFound, "no Zarr group at '{}' (no zarr.json or .zgroup)",
       store_location(*store, prefix));
}

ArrayPtr open_consolidated_member(StorePtr store, const std::string& group_prefix,
                                  const std::string& member, const std::string& name) {
  try {
    if (auto text = read_store_text(*store, join_key(group_prefix, "zarr.json"))) {
      const std::string context = fmt::format("group of '{}': zarr.json", name);
      json doc = parse_json_document(*text, context);
      if (!doc.is_object()) return nullptr;
      const json* members = v3_consolidated_members(doc, context);
      if (members == nullptr) return nullptr;
      auto it = members->find(member);
      if (it == members->end() || node_type_of(*it) != "array") return nullptr;
      return std::make_shared<Array>(store, join_key(group_prefix, member),
                                     parse_zarr_v3_array_json(*it, name), name);
    }
    if (auto text = read_store_text(*store, join_key(group_prefix, ".zmetadata"))) {
      const std::string context = fmt::format("group of '{}': .zmetadata", name);
      json doc = parse_json_document(*text, context);
      if (!doc.is_object() || !doc.contains("metadata") || !doc["metadata"].is_object()) {
        return nullptr;
      }
      const json& members = doc["metadata"];
      auto zarray = members.find(member + "/.zarray");
      if (zarray == members.end()) return nullptr;
      auto zattrs = members.find(member + "/.zattrs");
      return std::make_shared<Array>(
          store, join_key(group_prefix, member),
          parse_zarr_v2_array_json(*zarray, zattrs == members.end() ? json(nullptr) : *zattrs,
                                   name),
          name);
    }
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidMetadata, "array '{}': invalid consolidated metadata: {}", name,
         e.what());
  }
  return nullptr;
}

}  // namespace chute
