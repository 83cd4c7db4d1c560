// Zarr v2 .zarray/.zattrs parsing and its mapping onto the v3 codec model.
#include <gtest/gtest.h>

#include <cmath>

#include "chute/format/test_util.h"
#include "chute/format/zarr.h"

namespace chute {
namespace {

using chute::testing::bytes_as;
using chute::testing::expect_error;
using nlohmann::json;

// Written by zarr-python 2.18: order F, big-endian float32, a delta filter, blosc-lz4.
constexpr std::string_view kZarr2FOrder = R"({
    "chunks": [
        2,
        3
    ],
    "compressor": {
        "blocksize": 0,
        "clevel": 5,
        "cname": "lz4",
        "id": "blosc",
        "shuffle": 1
    },
    "dtype": ">f4",
    "fill_value": "NaN",
    "filters": [
        {
            "astype": ">f4",
            "dtype": ">f4",
            "id": "delta"
        }
    ],
    "order": "F",
    "shape": [
        4,
        6
    ],
    "zarr_format": 2
})";

// Written by zarr-python 3 with zarr_format=2.
constexpr std::string_view kZarr3WrittenV2 = R"({
  "shape": [4],
  "chunks": [2],
  "dtype": "|u1",
  "fill_value": 0,
  "order": "C",
  "filters": null,
  "dimension_separator": ".",
  "compressor": null,
  "zarr_format": 2
})";

std::string zarray(std::string_view dtype = "<f4", std::string_view fill = "0",
                   std::string_view extra = "") {
  return fmt::format(R"({{"zarr_format": 2, "shape": [10, 20], "chunks": [5, 7], "dtype": "{}",)"
                     R"( "fill_value": {}, "order": "C", "compressor": null, "filters": null{}}})",
                     dtype, fill, extra);
}

TEST(ZarrV2Metadata, RealZarr2DocumentWithFOrderFilterAndCompressor) {
  ArrayMetadata md =
      parse_zarr_v2_array(kZarr2FOrder, R"({"_ARRAY_DIMENSIONS": ["lat", "lon"]})", "g/t2m");
  EXPECT_EQ(md.zarr_format, 2);
  EXPECT_EQ(md.shape, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(md.chunk_shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(md.data_type, (DataType{DTypeKind::kFloat, 4}));
  EXPECT_TRUE(std::isnan(bytes_as<float>(md.fill_value)));
  ASSERT_EQ(md.codecs.size(), 4u);
  EXPECT_EQ(md.codecs[0].name, "transpose");
  EXPECT_EQ(md.codecs[0].configuration, json::parse(R"({"order": [1, 0]})"));
  EXPECT_EQ(md.codecs[1].name, "delta");
  EXPECT_EQ(md.codecs[1].configuration, json::parse(R"({"astype": ">f4", "dtype": ">f4"})"));
  EXPECT_EQ(md.codecs[2].name, "bytes");
  EXPECT_EQ(md.codecs[2].configuration, json::parse(R"({"endian": "big"})"));
  EXPECT_EQ(md.codecs[3].name, "blosc");
  EXPECT_EQ(md.codecs[3].configuration,
            json::parse(R"({"blocksize": 0, "clevel": 5, "cname": "lz4", "shuffle": 1})"));
  EXPECT_EQ(md.chunk_key_encoding.kind, ChunkKeyKind::kV2);
  EXPECT_EQ(md.chunk_key_encoding.separator, '.');
  EXPECT_EQ(md.dimension_names, (std::vector<std::string>{"lat", "lon"}));
  EXPECT_EQ(md.attributes["_ARRAY_DIMENSIONS"], json::parse(R"(["lat", "lon"])"));
}

TEST(ZarrV2Metadata, RealZarr3WrittenDocumentOneByteTypeNoCompressor) {
  ArrayMetadata md = parse_zarr_v2_array(kZarr3WrittenV2, "{}", "x");
  EXPECT_EQ(md.data_type, (DataType{DTypeKind::kUInt, 1}));
  ASSERT_EQ(md.codecs.size(), 1u);
  EXPECT_EQ(md.codecs[0].name, "bytes");
  EXPECT_EQ(md.codecs[0].configuration, json::object());  // no endian for one-byte types
  EXPECT_TRUE(md.dimension_names.empty());
  EXPECT_EQ(md.attributes, json::object());
}

TEST(ZarrV2Metadata, TransposeOrderIsReversedDims) {
  std::string doc = R"({"zarr_format": 2, "shape": [2, 3, 4, 5], "chunks": [1, 1, 1, 1],
      "dtype": "<i8", "fill_value": 0, "order": "F", "compressor": {"id": "zstd", "level": 3},
      "filters": null})";
  ArrayMetadata md = parse_zarr_v2_array(doc, "", "a");
  ASSERT_EQ(md.codecs.size(), 3u);
  EXPECT_EQ(md.codecs[0].configuration["order"], json::parse("[3, 2, 1, 0]"));
  EXPECT_EQ(md.codecs[1].configuration, json::parse(R"({"endian": "little"})"));
  EXPECT_EQ(md.codecs[2].name, "zstd");
  EXPECT_EQ(md.codecs[2].configuration, json::parse(R"({"level": 3})"));
}

TEST(ZarrV2Metadata, FiltersKeepTheirOrderBeforeBytesAndCompressor) {
  std::string doc =
      zarray("<f8", "null",
             R"(, "filters": [{"id": "fixedscaleoffset", "offset": 0, "scale": 10, "dtype": "<f8",)"
             R"( "astype": "<i2"}, {"id": "shuffle", "elementsize": 2}])");
  doc = doc.replace(doc.find(R"("filters": null, )"), 17, "");
  doc = doc.replace(doc.find(R"("compressor": null)"), 18,
                    R"("compressor": {"id": "gzip", "level": 1})");
  ArrayMetadata md = parse_zarr_v2_array(doc, "", "a");
  std::vector<std::string> names;
  for (const CodecSpec& spec : md.codecs) names.push_back(spec.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fixedscaleoffset", "shuffle", "bytes", "gzip"}));
  EXPECT_EQ(md.codecs[1].configuration, json::parse(R"({"elementsize": 2})"));
  EXPECT_EQ(md.codecs[3].configuration, json::parse(R"({"level": 1})"));
}

TEST(ZarrV2Metadata, EveryDtypeAndByteOrderMapsOntoBytesEndian) {
  for (std::string_view dtype : {"<i2", ">i2", "<u4", ">u8", "<f2", ">f2", "<f8", ">c8", "<c16"}) {
    SCOPED_TRACE(dtype);
    ArrayMetadata md = parse_zarr_v2_array(zarray(dtype), "", "a");
    EXPECT_EQ(md.codecs.back().configuration["endian"], dtype[0] == '>' ? "big" : "little");
  }
  for (std::string_view dtype : {"|b1", "|i1", "|u1"}) {
    ArrayMetadata md = parse_zarr_v2_array(zarray(dtype, "null"), "", "a");
    EXPECT_FALSE(md.codecs.back().configuration.contains("endian"));
  }
}

// zarr-python 2 and 3 write datetime64/timedelta64 fill values as int64 counts (NaT the least).
TEST(ZarrV2Metadata, TimeTypesWithTheirFillValues) {
  ArrayMetadata md = parse_zarr_v2_array(zarray("<M8[s]", "-9223372036854775808"), "", "dates");
  EXPECT_EQ(md.data_type, time_type(TimeKind::kDateTime, TimeUnit::kSecond));
  EXPECT_EQ(md.codecs.back().configuration["endian"], "little");
  EXPECT_EQ(chute::testing::bytes_as<int64_t>(md.fill_value), INT64_MIN);
  md = parse_zarr_v2_array(zarray(">m8[10ms]", R"("NaT")"), "", "steps");
  EXPECT_EQ(md.data_type, time_type(TimeKind::kTimeDelta, TimeUnit::kMilli, 10));
  EXPECT_EQ(md.codecs.back().configuration["endian"], "big");
  EXPECT_EQ(chute::testing::bytes_as<int64_t>(md.fill_value), INT64_MIN);
  md = parse_zarr_v2_array(zarray("<M8[ns]", "0"), "", "t");
  EXPECT_EQ(chute::testing::bytes_as<int64_t>(md.fill_value), 0);
}

TEST(ZarrV2Metadata, FillValues) {
  EXPECT_EQ(
      bytes_as<double>(parse_zarr_v2_array(zarray("<f8", R"("-Infinity")"), "", "a").fill_value),
      -INFINITY);
  EXPECT_EQ(
      bytes_as<float>(parse_zarr_v2_array(zarray("<f4", R"("Infinity")"), "", "a").fill_value),
      INFINITY);
  EXPECT_EQ(bytes_as<uint16_t>(parse_zarr_v2_array(zarray("<f2", "1.5"), "", "a").fill_value),
            0x3e00);
  EXPECT_EQ(bytes_as<int16_t>(parse_zarr_v2_array(zarray(">i2", "-7"), "", "a").fill_value), -7);
  EXPECT_EQ(bytes_as<uint8_t>(parse_zarr_v2_array(zarray("|b1", "true"), "", "a").fill_value), 1);
  EXPECT_EQ(bytes_as<double>(parse_zarr_v2_array(zarray("<f8", "null"), "", "a").fill_value), 0.0);
  auto c = parse_zarr_v2_array(zarray("<c16", "[1.0, 2.0]"), "", "a").fill_value;
  EXPECT_EQ(bytes_as<double>(std::vector<std::byte>(c.begin(), c.begin() + 8)), 1.0);
  EXPECT_EQ(bytes_as<double>(std::vector<std::byte>(c.begin() + 8, c.end())), 2.0);
}

TEST(ZarrV2Metadata, DimensionSeparatorAndZeroDim) {
  ArrayMetadata md =
      parse_zarr_v2_array(zarray("<f4", "0", R"(, "dimension_separator": "/")"), "", "a");
  EXPECT_EQ(md.chunk_key_encoding.separator, '/');
  // zarr-python 2 writes 0-d arrays like this.
  ArrayMetadata scalar = parse_zarr_v2_array(
      R"({"chunks": [], "compressor": null, "dtype": "|b1", "fill_value": true, "filters": null,
          "order": "C", "shape": [], "zarr_format": 2})",
      "", "s");
  EXPECT_EQ(scalar.rank(), 0u);
  EXPECT_EQ(chunk_key(scalar.chunk_key_encoding, {}), "0");
}

TEST(ZarrV2Metadata, InconsistentRanksNameArrayAndField) {
  std::string doc = R"({"zarr_format": 2, "shape": [1, 2, 3], "chunks": [1, 2], "dtype": "<f4",
      "fill_value": 0, "order": "C", "compressor": null, "filters": null})";
  expect_error([&] { parse_zarr_v2_array(doc, "", "x/temp"); }, ErrorCode::kInvalidMetadata,
               {"array 'x/temp': .zarray field 'chunks' has 2 entries, shape has 3"});
}

TEST(ZarrV2Metadata, MalformedDocuments) {
  struct Case {
    std::string doc;
    ErrorCode code;
    std::string_view part;
  };
  const std::vector<Case> cases = {
      {"{not json", ErrorCode::kInvalidMetadata, ".zarray is not valid JSON"},
      {"[1, 2]", ErrorCode::kInvalidMetadata, ".zarray must be a JSON object"},
      {R"({"shape": [1], "chunks": [1], "dtype": "<f4"})", ErrorCode::kInvalidMetadata,
       "field 'zarr_format' is missing"},
      {zarray().replace(zarray().find("2,"), 1, "3"), ErrorCode::kInvalidMetadata,
       "field 'zarr_format' must be 2"},
      {zarray().replace(zarray().find("[10, 20]"), 8, "[-1, 20]"), ErrorCode::kInvalidMetadata,
       "field 'shape' must hold integers >= 0, found -1"},
      {zarray().replace(zarray().find("[5, 7]"), 6, "[0, 7]"), ErrorCode::kInvalidMetadata,
       "field 'chunks' must hold integers >= 1, found 0"},
      {zarray().replace(zarray().find("[5, 7]"), 6, R"("5,7")"), ErrorCode::kInvalidMetadata,
       "field 'chunks' must be a list of integers"},
      {zarray().replace(zarray().find("[5, 7]"), 6, "[5.5, 7]"), ErrorCode::kInvalidMetadata,
       "field 'chunks' must be a list of integers"},
      {zarray("|S10"), ErrorCode::kUnsupported, "field 'dtype': unsupported data type '|S10'"},
      {zarray("<M8[xs]"), ErrorCode::kUnsupported, "'<M8[xs]'"},
      {zarray("<M8[s]", R"("soon")"), ErrorCode::kInvalidMetadata, "field 'fill_value'"},
      {zarray().replace(zarray().find(R"("<f4")"), 5, R"([["a", "<f4"], ["b", "<i4"]])"),
       ErrorCode::kUnsupported, "field 'dtype' is a structured type"},
      {zarray().replace(zarray().find(R"("<f4")"), 5, "4"), ErrorCode::kInvalidMetadata,
       "field 'dtype' must be a string"},
      {zarray().replace(zarray().find(R"("C")"), 3, R"("K")"), ErrorCode::kInvalidMetadata,
       "field 'order' must be \"C\" or \"F\""},
      {zarray("<f4", R"("nan")"), ErrorCode::kInvalidMetadata, "field 'fill_value'"},
      {zarray("<i4", "3000000000"), ErrorCode::kInvalidMetadata, "does not fit in int32"},
      {zarray("<f4", "0", R"(, "dimension_separator": "-")"), ErrorCode::kInvalidMetadata,
       "field 'dimension_separator'"},
      {zarray().replace(zarray().find(R"("compressor": null)"), 18, R"("compressor": "zstd")"),
       ErrorCode::kInvalidMetadata, "field 'compressor'"},
      {zarray().replace(zarray().find(R"("compressor": null)"), 18,
                        R"("compressor": {"level": 1})"),
       ErrorCode::kInvalidMetadata, "field 'compressor' holds a codec without a string \"id\""},
      {zarray().replace(zarray().find(R"("filters": null)"), 15, R"("filters": {"id": "x"})"),
       ErrorCode::kInvalidMetadata, "field 'filters' must be null or a list"},
      {zarray().replace(zarray().find("[10, 20]"), 8, "[4294967296, 4294967296]"),
       ErrorCode::kInvalidMetadata, "more than 2^63"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.doc);
    expect_error([&] { parse_zarr_v2_array(c.doc, "", "grp/arr"); }, c.code,
                 {"array 'grp/arr'", c.part});
  }
}

TEST(ZarrV2Metadata, BadAttributes) {
  expect_error([] { parse_zarr_v2_array(zarray(), "[1]", "a"); }, ErrorCode::kInvalidMetadata,
               {"array 'a': .zattrs must be a JSON object"});
  expect_error([] { parse_zarr_v2_array(zarray(), "{", "a"); }, ErrorCode::kInvalidMetadata,
               {"array 'a': .zattrs is not valid JSON"});
  expect_error([] { parse_zarr_v2_array(zarray(), R"({"_ARRAY_DIMENSIONS": ["x"]})", "a"); },
               ErrorCode::kInvalidMetadata,
               {"array 'a': .zattrs field '_ARRAY_DIMENSIONS' has 1 entries, the array has 2"});
  expect_error([] { parse_zarr_v2_array(zarray(), R"({"_ARRAY_DIMENSIONS": ["x", 1]})", "a"); },
               ErrorCode::kInvalidMetadata, {"'_ARRAY_DIMENSIONS' must be a list of strings"});
  // Whitespace-only .zattrs is the same as none.
  EXPECT_EQ(parse_zarr_v2_array(zarray(), " \n", "a").attributes, json::object());
}

}  // namespace
}  // namespace chute
