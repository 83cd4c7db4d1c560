// Zarr v3 `zarr.json` array documents. Codecs are kept verbatim; the codec chain checks them.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <string_view>

#include "chute/format/fill_value.h"
#include "chute/format/json_fields.h"
#include "chute/format/zarr.h"
#include "chute/format/zarr_parse.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using nlohmann::json;

constexpr size_t kMaxRank = 32;

DataType parse_data_type(const FieldReader& reader) {
  const json& value = reader.require("data_type");
  if (value.is_object()) {
    // zarr-python writes NumPy's time types this way; other extension types are refused.
    const auto name = value.find("name");
    const auto config = value.find("configuration");
    if (name != value.end() && name->is_string() &&
        (*name == "numpy.datetime64" || *name == "numpy.timedelta64")) {
      if (config == value.end() || !config->is_object() || !config->contains("unit") ||
          !(*config)["unit"].is_string()) {
        reader.invalid("data_type", "is " + describe_json(value) +
                                        ", expected a configuration with a string 'unit'");
      }
      int64_t scale = 1;
      if (const auto factor = config->find("scale_factor"); factor != config->end()) {
        if (!factor->is_number_integer()) {
          reader.invalid("data_type",
                         "has scale_factor " + describe_json(*factor) + ", expected an integer");
        }
        scale = factor->get<int64_t>();
      }
      try {
        return parse_v3_time_type(name->get<std::string>(), (*config)["unit"].get<std::string>(),
                                  scale);
      } catch (const Error& e) {
        throw e.with_context(reader.where("data_type"));
      }
    }
    fail(ErrorCode::kUnsupported, "{} is an extension data type {}, which chute does not support",
         reader.where("data_type"), describe_json(value));
  }
  if (!value.is_string()) {
    reader.invalid("data_type", "must be a string, found " + describe_json(value));
  }
  try {
    return parse_v3_data_type(value.get<std::string>());
  } catch (const Error& e) {
    throw e.with_context(reader.where("data_type"));
  }
}

std::vector<int64_t> parse_chunk_grid(const FieldReader& reader) {
  FieldReader grid = reader.nested("chunk_grid");
  const std::string grid_name = grid.require_string("name");
  if (grid_name != "regular") {
    fail(ErrorCode::kUnsupported, "{} is '{}', chute supports only 'regular' chunk grids",
         grid.where("name"), grid_name);
  }
  return grid.nested("configuration").require_int_list("chunk_shape", 1);
}

ChunkKeyEncoding parse_chunk_key_encoding(const FieldReader& reader) {
  const json* value = reader.find("chunk_key_encoding");
  if (value == nullptr) return {ChunkKeyKind::kDefault, '/'};
  FieldReader encoding = reader.nested("chunk_key_encoding");
  const std::string kind = encoding.require_string("name");
  ChunkKeyEncoding out;
  if (kind == "default") {
    out = {ChunkKeyKind::kDefault, '/'};
  } else if (kind == "v2") {
    out = {ChunkKeyKind::kV2, '.'};
  } else {
    fail(ErrorCode::kUnsupported, "{} is '{}', expected 'default' or 'v2'", encoding.where("name"),
         kind);
  }
  const json* config = encoding.find("configuration");
  if (config == nullptr || config->is_null()) return out;
  FieldReader configuration = encoding.nested("configuration");
  if (const json* sep = configuration.find("separator"); sep != nullptr) {
    if (*sep == "/") {
      out.separator = '/';
    } else if (*sep == ".") {
      out.separator = '.';
    } else {
      configuration.invalid("separator", "must be \"/\" or \".\", found " + describe_json(*sep));
    }
  }
  return out;
}

std::vector<CodecSpec> parse_codecs(const FieldReader& reader) {
  const json& codecs = reader.require("codecs");
  if (!codecs.is_array() || codecs.empty()) {
    reader.invalid("codecs", "must be a non-empty list of codecs, found " + describe_json(codecs));
  }
  std::vector<CodecSpec> out;
  for (const json& codec : codecs) {
    CodecSpec spec;
    if (codec.is_string()) {
      spec.name = codec.get<std::string>();
    } else if (codec.is_object() && codec.contains("name") && codec["name"].is_string()) {
      spec.name = codec["name"].get<std::string>();
      if (auto config = codec.find("configuration"); config != codec.end() && !config->is_null()) {
        if (!config->is_object()) {
          reader.invalid("codecs", fmt::format("codec '{}' has a configuration that is not an "
                                               "object: {}",
                                               spec.name, describe_json(*config)));
        }
        spec.configuration = *config;
      }
    } else {
      reader.invalid("codecs", "holds an entry without a string \"name\": " + describe_json(codec));
    }
    out.push_back(std::move(spec));
  }
  return out;
}

std::vector<std::string> parse_dimension_names(const FieldReader& reader, size_t rank) {
  const json* names = reader.find("dimension_names");
  if (names == nullptr || names->is_null()) return {};
  if (!names->is_array()) {
    reader.invalid("dimension_names",
                   "must be a list of strings or nulls, found " + describe_json(*names));
  }
  if (names->size() != rank) {
    reader.invalid("dimension_names",
                   fmt::format("has {} entries, shape has {}", names->size(), rank));
  }
  std::vector<std::string> out;
  for (const json& item : *names) {
    if (item.is_null()) {
      out.emplace_back();
    } else if (item.is_string()) {
      out.push_back(item.get<std::string>());
    } else {
      reader.invalid("dimension_names",
                     "must be a list of strings or nulls, found " + describe_json(*names));
    }
  }
  return out;
}

}  // namespace

void check_array_sizes(const ArrayMetadata& md, const std::string& context) {
  if (md.shape.size() > kMaxRank) {
    fail(ErrorCode::kUnsupported, "{}: rank {} exceeds the maximum of {}", context, md.shape.size(),
         kMaxRank);
  }
  int64_t elements = 1;
  for (int64_t extent : md.shape) {
    if (extent != 0 && elements > INT64_MAX / extent) {
      fail(ErrorCode::kInvalidMetadata, "{}: shape {} has more than 2^63 elements", context,
           fmt::join(md.shape, ", "));
    }
    elements *= extent;
  }
  int64_t chunk_bytes = md.data_type.size;
  for (int64_t extent : md.chunk_shape) {
    if (chunk_bytes > INT64_MAX / extent) {
      fail(ErrorCode::kInvalidMetadata, "{}: chunk shape {} holds more than 2^63 bytes", context,
           fmt::join(md.chunk_shape, ", "));
    }
    chunk_bytes *= extent;
  }
}

namespace {

// Fields of an array's zarr.json that chute reads. Any other top-level field is an extension
// (Zarr v3 spec): a reader must refuse it unless it is an object with "must_understand": false,
// as zarr-python does; reading on would risk returning data the writer meant differently.
constexpr std::string_view kKnownArrayFields[] = {
    "zarr_format",         "node_type",  "shape",  "data_type",  "chunk_grid",
    "chunk_key_encoding",  "fill_value", "codecs", "attributes", "dimension_names",
    "storage_transformers"};

void check_extensions(const json& doc, const FieldReader& reader) {
  for (const auto& [key, value] : doc.items()) {
    if (std::find(std::begin(kKnownArrayFields), std::end(kKnownArrayFields), key) !=
        std::end(kKnownArrayFields)) {
      continue;
    }
    if (value.is_object()) {
      auto must = value.find("must_understand");
      if (must != value.end() && must->is_boolean() && !must->get<bool>()) continue;
    }
    fail(ErrorCode::kUnsupported,
         "{} is an extension chute does not know, and it does not say \"must_understand\": "
         "false: {}",
         reader.where(key), describe_json(value));
  }
}

}  // namespace

ArrayMetadata parse_zarr_v3_array_json(const json& doc, const std::string& name) {
  const std::string context = fmt::format("array '{}': zarr.json", name);
  FieldReader reader(doc, context);
  check_extensions(doc, reader);
  if (reader.require_integer("zarr_format") != 3) {
    reader.invalid("zarr_format",
                   "must be 3, found " + describe_json(reader.require("zarr_format")));
  }
  const std::string node_type = reader.require_string("node_type");
  if (node_type != "array") {
    reader.invalid("node_type", fmt::format("is '{}', expected 'array'", node_type));
  }
  ArrayMetadata md;
  md.zarr_format = 3;
  md.shape = reader.require_int_list("shape", 0);
  md.data_type = parse_data_type(reader);
  md.chunk_shape = parse_chunk_grid(reader);
  if (md.chunk_shape.size() != md.shape.size()) {
    reader.invalid(
        "chunk_grid.configuration.chunk_shape",
        fmt::format("has {} entries, shape has {}", md.chunk_shape.size(), md.shape.size()));
  }
  md.chunk_key_encoding = parse_chunk_key_encoding(reader);
  md.fill_value =
      encode_fill_value(reader.require("fill_value"), md.data_type, reader.where("fill_value"));
  md.codecs = parse_codecs(reader);
  if (const json* attributes = reader.find("attributes");
      attributes != nullptr && !attributes->is_null()) {
    if (!attributes->is_object()) {
      reader.invalid("attributes", "must be an object, found " + describe_json(*attributes));
    }
    md.attributes = *attributes;
  }
  md.dimension_names = parse_dimension_names(reader, md.shape.size());
  if (const json* transformers = reader.find("storage_transformers");
      transformers != nullptr && !transformers->is_null()) {
    if (!transformers->is_array()) {
      reader.invalid("storage_transformers",
                     "must be a list, found " + describe_json(*transformers));
    }
    if (!transformers->empty()) {
      fail(ErrorCode::kUnsupported, "{} is {}: chute supports no storage transformers",
           reader.where("storage_transformers"), describe_json(*transformers));
    }
  }
  check_array_sizes(md, context);
  return md;
}

ArrayMetadata parse_zarr_v3_array(std::string_view zarr_json, const std::string& name) {
  try {
    json doc = parse_json_document(zarr_json, fmt::format("array '{}': zarr.json", name));
    return parse_zarr_v3_array_json(doc, name);
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidMetadata, "array '{}': invalid zarr.json: {}", name, e.what());
  }
}

}  // namespace chute
