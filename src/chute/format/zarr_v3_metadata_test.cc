// Zarr v3 zarr.json array documents.
#include <gtest/gtest.h>

#include <cmath>

#include "chute/format/test_util.h"
#include "chute/format/zarr.h"

namespace chute {
namespace {

using chute::testing::bytes_as;
using chute::testing::expect_error;
using nlohmann::json;

// Written by zarr-python 3.1: NaN fill, dimension names, attributes.
constexpr std::string_view kT2m = R"({
  "shape": [4, 6],
  "data_type": "float32",
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
  "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
  "fill_value": "NaN",
  "codecs": [
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "zstd", "configuration": {"level": 0, "checksum": false}}
  ],
  "attributes": {"units": "K"},
  "dimension_names": ["lat", "lon"],
  "zarr_format": 3,
  "node_type": "array",
  "storage_transformers": []
})";

// Written by zarr-python 3.1 with shards=(4,), chunks=(2,).
constexpr std::string_view kSharded = R"({
  "shape": [5],
  "data_type": "int16",
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
  "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
  "fill_value": 3,
  "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
               {"name": "zstd", "configuration": {"level": 0, "checksum": false}}],
    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
    "index_location": "end"}}],
  "attributes": {},
  "zarr_format": 3,
  "node_type": "array",
  "storage_transformers": []
})";

// A minimal document with one field replaced by `field_json` ("" keeps all).
std::string doc_with(std::string_view key, std::string_view value) {
  json doc = json::parse(kT2m);
  if (value.empty()) {
    doc.erase(std::string(key));
  } else {
    doc[std::string(key)] = json::parse(value);
  }
  return doc.dump();
}

// Written by zarr-python 3.1 for a datetime64[s] array (anemoi's `dates`), NaT as fill value.
TEST(ZarrV3Metadata, DateTimeDocument) {
  json doc = json::parse(kT2m);
  doc["data_type"] = json::parse(
      R"({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}})");
  doc["fill_value"] = json::parse("-9223372036854775808");
  ArrayMetadata md = parse_zarr_v3_array(doc.dump(), "g/dates");
  EXPECT_EQ(md.data_type, time_type(TimeKind::kDateTime, TimeUnit::kSecond));
  EXPECT_EQ(md.data_type.numpy_str(), "<M8[s]");
  EXPECT_EQ(bytes_as<int64_t>(md.fill_value), INT64_MIN);
  doc["data_type"] = json::parse(
      R"({"name": "numpy.timedelta64", "configuration": {"unit": "ms", "scale_factor": 10}})");
  doc["fill_value"] = "NaT";
  md = parse_zarr_v3_array(doc.dump(), "g/steps");
  EXPECT_EQ(md.data_type.numpy_str(), "<m8[10ms]");
  EXPECT_EQ(bytes_as<int64_t>(md.fill_value), INT64_MIN);
}

TEST(ZarrV3Metadata, RealDocument) {
  ArrayMetadata md = parse_zarr_v3_array(kT2m, "g/t2m");
  EXPECT_EQ(md.zarr_format, 3);
  EXPECT_EQ(md.shape, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(md.chunk_shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(md.data_type, (DataType{DTypeKind::kFloat, 4}));
  EXPECT_TRUE(std::isnan(bytes_as<float>(md.fill_value)));
  ASSERT_EQ(md.codecs.size(), 2u);
  EXPECT_EQ(md.codecs[0].name, "bytes");
  EXPECT_EQ(md.codecs[0].configuration, json::parse(R"({"endian": "little"})"));
  EXPECT_EQ(md.codecs[1].name, "zstd");
  EXPECT_EQ(md.chunk_key_encoding.kind, ChunkKeyKind::kDefault);
  EXPECT_EQ(md.chunk_key_encoding.separator, '/');
  EXPECT_EQ(md.dimension_names, (std::vector<std::string>{"lat", "lon"}));
  EXPECT_EQ(md.attributes, json::parse(R"({"units": "K"})"));
}

TEST(ZarrV3Metadata, ShardedCodecKeptVerbatim) {
  ArrayMetadata md = parse_zarr_v3_array(kSharded, "sub/u");
  EXPECT_EQ(md.chunk_shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(bytes_as<int16_t>(md.fill_value), 3);
  ASSERT_EQ(md.codecs.size(), 1u);
  EXPECT_EQ(md.codecs[0].name, "sharding_indexed");
  EXPECT_EQ(md.codecs[0].configuration["chunk_shape"], json::parse("[2]"));
  EXPECT_EQ(md.codecs[0].configuration["index_codecs"][1], json::parse(R"({"name": "crc32c"})"));
}

TEST(ZarrV3Metadata, CodecWithoutConfigurationAndStringForm) {
  ArrayMetadata md =
      parse_zarr_v3_array(doc_with("codecs", R"([{"name": "bytes"}, "crc32c"])"), "a");
  ASSERT_EQ(md.codecs.size(), 2u);
  EXPECT_EQ(md.codecs[0].configuration, json::object());
  EXPECT_EQ(md.codecs[1].name, "crc32c");
}

TEST(ZarrV3Metadata, ChunkKeyEncodings) {
  auto encoding_of = [](std::string_view value) {
    return parse_zarr_v3_array(doc_with("chunk_key_encoding", value), "a").chunk_key_encoding;
  };
  ChunkKeyEncoding e = encoding_of(R"({"name": "default", "configuration": {"separator": "."}})");
  EXPECT_EQ(e.kind, ChunkKeyKind::kDefault);
  EXPECT_EQ(e.separator, '.');
  e = encoding_of(R"({"name": "default"})");
  EXPECT_EQ(e.separator, '/');
  e = encoding_of(R"({"name": "v2"})");
  EXPECT_EQ(e.kind, ChunkKeyKind::kV2);
  EXPECT_EQ(e.separator, '.');
  e = encoding_of(R"({"name": "v2", "configuration": {"separator": "/"}})");
  EXPECT_EQ(e.separator, '/');
  std::vector<int64_t> coords = {1, 2};
  EXPECT_EQ(chunk_key(e, coords), "1/2");
  e = parse_zarr_v3_array(doc_with("chunk_key_encoding", ""), "a").chunk_key_encoding;
  EXPECT_EQ(e.kind, ChunkKeyKind::kDefault);
}

TEST(ZarrV3Metadata, FillValueEncodings) {
  auto fill_of = [](std::string_view type, std::string_view value) {
    json doc = json::parse(kT2m);
    doc["data_type"] = type;
    doc["fill_value"] = json::parse(value);
    return parse_zarr_v3_array(doc.dump(), "a").fill_value;
  };
  EXPECT_EQ(bytes_as<uint32_t>(fill_of("float32", R"("0x7fc00000")")), 0x7fc00000u);
  EXPECT_EQ(bytes_as<double>(fill_of("float64", R"("-Infinity")")), -INFINITY);
  EXPECT_EQ(bytes_as<uint16_t>(fill_of("float16", "1.5")), 0x3e00);
  EXPECT_EQ(bytes_as<uint16_t>(fill_of("bfloat16", "1.0")), 0x3f80);
  EXPECT_EQ(bytes_as<uint8_t>(fill_of("bool", "false")), 0);
  EXPECT_EQ(bytes_as<uint64_t>(fill_of("uint64", "18446744073709551615")), UINT64_MAX);
  EXPECT_EQ(bytes_as<int8_t>(fill_of("int8", "-5")), -5);
  auto c = fill_of("complex64", "[1.0, 2.0]");
  EXPECT_EQ(bytes_as<uint64_t>(c), 0x400000003f800000u);
}

TEST(ZarrV3Metadata, DimensionNamesWithNulls) {
  ArrayMetadata md = parse_zarr_v3_array(doc_with("dimension_names", R"([null, "lon"])"), "a");
  EXPECT_EQ(md.dimension_names, (std::vector<std::string>{"", "lon"}));
  md = parse_zarr_v3_array(doc_with("dimension_names", ""), "a");
  EXPECT_TRUE(md.dimension_names.empty());
}

TEST(ZarrV3Metadata, ZeroDimensionalArray) {
  json doc = json::parse(kT2m);
  doc["shape"] = json::array();
  doc["chunk_grid"]["configuration"]["chunk_shape"] = json::array();
  doc.erase("dimension_names");
  ArrayMetadata md = parse_zarr_v3_array(doc.dump(), "s");
  EXPECT_EQ(md.rank(), 0u);
  EXPECT_EQ(chunk_key(md.chunk_key_encoding, {}), "c");
}

TEST(ZarrV3Metadata, MalformedDocuments) {
  struct Case {
    std::string doc;
    ErrorCode code;
    std::string_view part;
  };
  const std::vector<Case> cases = {
      {"", ErrorCode::kInvalidMetadata, "zarr.json is not valid JSON"},
      {R"({"shape": [1,)", ErrorCode::kInvalidMetadata, "zarr.json is not valid JSON"},
      {"\"array\"", ErrorCode::kInvalidMetadata, "zarr.json must be a JSON object"},
      {doc_with("zarr_format", "2"), ErrorCode::kInvalidMetadata, "field 'zarr_format' must be 3"},
      {doc_with("zarr_format", R"("3")"), ErrorCode::kInvalidMetadata,
       "field 'zarr_format' must be an integer"},
      {doc_with("node_type", R"("group")"), ErrorCode::kInvalidMetadata,
       "field 'node_type' is 'group', expected 'array'"},
      {doc_with("node_type", ""), ErrorCode::kInvalidMetadata, "field 'node_type' is missing"},
      {doc_with("shape", "[4, -6]"), ErrorCode::kInvalidMetadata,
       "field 'shape' must hold integers >= 0, found -6"},
      {doc_with("shape", "[4]"), ErrorCode::kInvalidMetadata,
       "field 'chunk_grid.configuration.chunk_shape' has 2 entries, shape has 1"},
      {doc_with("shape", R"({"a": 1})"), ErrorCode::kInvalidMetadata,
       "field 'shape' must be a list of integers"},
      {doc_with("data_type", R"("string")"), ErrorCode::kUnsupported,
       "field 'data_type': unsupported data type 'string'"},
      {doc_with("data_type", R"({"name": "numpy.void", "configuration": {}})"),
       ErrorCode::kUnsupported, "extension data type"},
      {doc_with("data_type", R"({"name": "numpy.datetime64"})"), ErrorCode::kInvalidMetadata,
       "expected a configuration with a string 'unit'"},
      {doc_with(
           "data_type",
           R"({"name": "numpy.datetime64", "configuration": {"unit": "x", "scale_factor": 1}})"),
       ErrorCode::kInvalidMetadata, "field 'data_type'"},
      {doc_with(
           "data_type",
           R"({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 1.5}})"),
       ErrorCode::kInvalidMetadata, "scale_factor 1.5"},
      {doc_with("data_type", "5"), ErrorCode::kInvalidMetadata,
       "field 'data_type' must be a string"},
      {doc_with("chunk_grid", R"({"name": "rectilinear", "configuration": {}})"),
       ErrorCode::kUnsupported, "field 'chunk_grid.name' is 'rectilinear'"},
      {doc_with("chunk_grid", R"({"name": "regular"})"), ErrorCode::kInvalidMetadata,
       "field 'chunk_grid.configuration' is missing"},
      {doc_with("chunk_grid", R"({"name": "regular", "configuration": {"chunk_shape": [2, 0]}})"),
       ErrorCode::kInvalidMetadata,
       "field 'chunk_grid.configuration.chunk_shape' must hold integers >= 1"},
      {doc_with("chunk_grid", "[2, 3]"), ErrorCode::kInvalidMetadata,
       "field 'chunk_grid' must be an object"},
      {doc_with("chunk_key_encoding", R"({"name": "hashed"})"), ErrorCode::kUnsupported,
       "field 'chunk_key_encoding.name' is 'hashed'"},
      {doc_with("chunk_key_encoding",
                R"({"name": "default", "configuration": {"separator": "_"}})"),
       ErrorCode::kInvalidMetadata, "field 'chunk_key_encoding.configuration.separator'"},
      {doc_with("fill_value", ""), ErrorCode::kInvalidMetadata, "field 'fill_value' is missing"},
      {doc_with("fill_value", R"("0x7fc0")"), ErrorCode::kInvalidMetadata, "field 'fill_value'"},
      {doc_with("fill_value", "[1, 2]"), ErrorCode::kInvalidMetadata, "field 'fill_value'"},
      {doc_with("codecs", "[]"), ErrorCode::kInvalidMetadata,
       "field 'codecs' must be a non-empty list"},
      {doc_with("codecs", R"([{"configuration": {}}])"), ErrorCode::kInvalidMetadata,
       "field 'codecs' holds an entry without a string \"name\""},
      {doc_with("codecs", R"([{"name": "bytes", "configuration": [1]}])"),
       ErrorCode::kInvalidMetadata, "codec 'bytes' has a configuration that is not an object"},
      {doc_with("attributes", "[]"), ErrorCode::kInvalidMetadata,
       "field 'attributes' must be an object"},
      {doc_with("dimension_names", R"(["a"])"), ErrorCode::kInvalidMetadata,
       "field 'dimension_names' has 1 entries, shape has 2"},
      {doc_with("dimension_names", R"(["a", 3])"), ErrorCode::kInvalidMetadata,
       "field 'dimension_names' must be a list of strings or nulls"},
      {doc_with("storage_transformers", R"([{"name": "x"}])"), ErrorCode::kUnsupported,
       "field 'storage_transformers'"},
      {doc_with("shape", "[9223372036854775807, 9223372036854775807]"), ErrorCode::kInvalidMetadata,
       "more than 2^63 elements"},
      {doc_with("shape", "[9223372036854775808, 1]"), ErrorCode::kInvalidMetadata,
       "field 'shape' must be a list of integers"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.doc);
    expect_error([&] { parse_zarr_v3_array(c.doc, "grp/arr"); }, c.code,
                 {"array 'grp/arr'", c.part});
  }
}

TEST(ZarrV3Metadata, HugeRankIsUnsupported) {
  json doc = json::parse(kT2m);
  doc["shape"] = std::vector<int>(40, 1);
  doc["chunk_grid"]["configuration"]["chunk_shape"] = std::vector<int>(40, 1);
  doc.erase("dimension_names");
  expect_error([&] { parse_zarr_v3_array(doc.dump(), "a"); }, ErrorCode::kUnsupported,
               {"array 'a'", "rank 40"});
}

}  // namespace
}  // namespace chute
