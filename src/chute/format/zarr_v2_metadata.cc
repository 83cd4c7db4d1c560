// Zarr v2 `.zarray` + `.zattrs` mapped onto the v3 model: one codec list in encode order,
// [transpose if order F] + filters + [bytes(endian)] + [compressor].

#include <fmt/format.h>

#include "chute/format/fill_value.h"
#include "chute/format/json_fields.h"
#include "chute/format/zarr.h"
#include "chute/format/zarr_parse.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using nlohmann::json;

// A numcodecs config {"id": "blosc", ...} as a CodecSpec named by its id.
CodecSpec numcodecs_spec(const json& config, const FieldReader& reader, const std::string& field) {
  if (!config.is_object()) {
    reader.invalid(field, "must hold codec objects with an \"id\", found " + describe_json(config));
  }
  auto id = config.find("id");
  if (id == config.end() || !id->is_string()) {
    reader.invalid(field, "holds a codec without a string \"id\": " + describe_json(config));
  }
  CodecSpec spec;
  spec.name = id->get<std::string>();
  spec.configuration = config;
  spec.configuration.erase("id");
  return spec;
}

DataType parse_dtype(const FieldReader& reader, Endian* endian) {
  const json& dtype = reader.require("dtype");
  if (dtype.is_array()) {
    fail(ErrorCode::kUnsupported, "{} is a structured type {}, which chute does not support",
         reader.where("dtype"), describe_json(dtype));
  }
  if (!dtype.is_string())
    reader.invalid("dtype", "must be a string, found " + describe_json(dtype));
  try {
    return parse_v2_data_type(dtype.get<std::string>(), endian);
  } catch (const Error& e) {
    throw e.with_context(reader.where("dtype"));
  }
}

std::vector<std::string> array_dimensions(const json& attributes, size_t rank,
                                          const std::string& name) {
  auto it = attributes.find("_ARRAY_DIMENSIONS");
  if (it == attributes.end() || it->is_null()) return {};
  auto bad = [&](const std::string& problem) {
    fail(ErrorCode::kInvalidMetadata, "array '{}': .zattrs field '_ARRAY_DIMENSIONS' {}", name,
         problem);
  };
  if (!it->is_array()) bad("must be a list of strings, found " + describe_json(*it));
  if (it->size() != rank) {
    bad(fmt::format("has {} entries, the array has {} dimensions", it->size(), rank));
  }
  std::vector<std::string> names;
  for (const json& item : *it) {
    if (!item.is_string()) bad("must be a list of strings, found " + describe_json(*it));
    names.push_back(item.get<std::string>());
  }
  return names;
}

}  // namespace

ArrayMetadata parse_zarr_v2_array_json(const json& zarray, const json& zattrs,
                                       const std::string& name) {
  const std::string context = fmt::format("array '{}': .zarray", name);
  FieldReader reader(zarray, context);
  ArrayMetadata md;
  md.zarr_format = 2;
  if (reader.require_integer("zarr_format") != 2) {
    reader.invalid("zarr_format",
                   "must be 2, found " + describe_json(reader.require("zarr_format")));
  }
  md.shape = reader.require_int_list("shape", 0);
  md.chunk_shape = reader.require_int_list("chunks", 1);
  if (md.chunk_shape.size() != md.shape.size()) {
    reader.invalid("chunks", fmt::format("has {} entries, shape has {}", md.chunk_shape.size(),
                                         md.shape.size()));
  }
  Endian endian = Endian::kLittle;
  md.data_type = parse_dtype(reader, &endian);

  bool fortran_order = false;
  if (const json* order = reader.find("order"); order != nullptr && !order->is_null()) {
    if (*order == "F") {
      fortran_order = true;
    } else if (*order != "C") {
      reader.invalid("order", "must be \"C\" or \"F\", found " + describe_json(*order));
    }
  }

  const json* fill = reader.find("fill_value");
  md.fill_value_null = fill == nullptr || fill->is_null();
  md.fill_value =
      encode_fill_value(fill ? *fill : json(nullptr), md.data_type, reader.where("fill_value"));

  md.chunk_key_encoding = {ChunkKeyKind::kV2, '.'};
  if (const json* sep = reader.find("dimension_separator"); sep != nullptr && !sep->is_null()) {
    if (*sep == "/") {
      md.chunk_key_encoding.separator = '/';
    } else if (*sep != ".") {
      reader.invalid("dimension_separator", "must be \".\" or \"/\", found " + describe_json(*sep));
    }
  }

  if (fortran_order && md.shape.size() > 1) {
    json order = json::array();
    for (size_t i = md.shape.size(); i-- > 0;) order.push_back(i);
    md.codecs.push_back({"transpose", {{"order", order}}});
  }
  if (const json* filters = reader.find("filters"); filters != nullptr && !filters->is_null()) {
    if (!filters->is_array()) {
      reader.invalid("filters",
                     "must be null or a list of codecs, found " + describe_json(*filters));
    }
    for (const json& filter : *filters)
      md.codecs.push_back(numcodecs_spec(filter, reader, "filters"));
  }
  CodecSpec bytes{"bytes", json::object()};
  if (md.data_type.size > 1)
    bytes.configuration["endian"] = endian == Endian::kBig ? "big" : "little";
  md.codecs.push_back(std::move(bytes));
  if (const json* compressor = reader.find("compressor");
      compressor != nullptr && !compressor->is_null()) {
    md.codecs.push_back(numcodecs_spec(*compressor, reader, "compressor"));
  }

  if (!zattrs.is_null()) {
    if (!zattrs.is_object()) {
      fail(ErrorCode::kInvalidMetadata, "array '{}': .zattrs must be a JSON object, found {}", name,
           describe_json(zattrs));
    }
    md.attributes = zattrs;
    md.dimension_names = array_dimensions(zattrs, md.shape.size(), name);
  }
  check_array_sizes(md, context);
  return md;
}

ArrayMetadata parse_zarr_v2_array(std::string_view zarray_json, std::string_view zattrs_json,
                                  const std::string& name) {
  try {
    json zarray = parse_json_document(zarray_json, fmt::format("array '{}': .zarray", name));
    json zattrs = nullptr;
    if (zattrs_json.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      zattrs = parse_json_document(zattrs_json, fmt::format("array '{}': .zattrs", name));
    }
    return parse_zarr_v2_array_json(zarray, zattrs, name);
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidMetadata, "array '{}': invalid .zarray: {}", name, e.what());
  }
}

}  // namespace chute
