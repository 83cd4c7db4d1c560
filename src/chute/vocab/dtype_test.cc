// Data types, chunk keys and derived sizes of ArrayMetadata.
#include "chute/vocab/dtype.h"

#include <gtest/gtest.h>

#include "chute/array/metadata.h"
#include "chute/format/test_util.h"

namespace chute {
namespace {

using chute::testing::expect_error;

struct TypeCase {
  std::string_view v3_name;
  std::string_view numpy_str;
  DataType type;
};

const TypeCase kTypes[] = {
    {"bool", "|b1", {DTypeKind::kBool, 1}},
    {"int8", "|i1", {DTypeKind::kInt, 1}},
    {"int16", "<i2", {DTypeKind::kInt, 2}},
    {"int32", "<i4", {DTypeKind::kInt, 4}},
    {"int64", "<i8", {DTypeKind::kInt, 8}},
    {"uint8", "|u1", {DTypeKind::kUInt, 1}},
    {"uint16", "<u2", {DTypeKind::kUInt, 2}},
    {"uint32", "<u4", {DTypeKind::kUInt, 4}},
    {"uint64", "<u8", {DTypeKind::kUInt, 8}},
    {"float16", "<f2", {DTypeKind::kFloat, 2}},
    {"float32", "<f4", {DTypeKind::kFloat, 4}},
    {"float64", "<f8", {DTypeKind::kFloat, 8}},
    {"complex64", "<c8", {DTypeKind::kComplex, 8}},
    {"complex128", "<c16", {DTypeKind::kComplex, 16}},
};

TEST(DType, V3NamesRoundTrip) {
  for (const TypeCase& c : kTypes) {
    SCOPED_TRACE(c.v3_name);
    EXPECT_EQ(parse_v3_data_type(c.v3_name), c.type);
    EXPECT_EQ(c.type.name(), c.v3_name);
    EXPECT_EQ(c.type.numpy_str(), c.numpy_str);
  }
  DataType bf16 = parse_v3_data_type("bfloat16");
  EXPECT_EQ(bf16, (DataType{DTypeKind::kBFloat, 2}));
  EXPECT_EQ(bf16.name(), "bfloat16");
}

TEST(DType, V2TypestrsInBothByteOrders) {
  for (const TypeCase& c : kTypes) {
    SCOPED_TRACE(c.numpy_str);
    std::string body(c.numpy_str.substr(1));
    for (char order : {'<', '>', '|'}) {
      Endian endian = Endian::kLittle;
      EXPECT_EQ(parse_v2_data_type(order + body, &endian), c.type);
      EXPECT_EQ(endian, order == '<'   ? Endian::kLittle
                        : order == '>' ? Endian::kBig
                                       : Endian::kNotApplicable);
    }
  }
  EXPECT_EQ(parse_v2_data_type(">f8", nullptr), (DataType{DTypeKind::kFloat, 8}));
}

TEST(DType, UnknownTypesAreUnsupportedAndNamed) {
  for (std::string_view name : {"float128", "string", "", "Float32", "int", "r16"}) {
    expect_error([&] { parse_v3_data_type(name); }, ErrorCode::kUnsupported,
                 {"'" + std::string(name) + "'"});
  }
  for (std::string_view typestr :
       {"|S10",  "<M8[xs]", "<m8[]", "<M8[0s]", "<M8[10]", "<M8s", "<M4[s]",
        "<m8[s", "|O",      "<U5",   "|V8",     "<f3",     "<i3",  "<c4",
        "|b2",   "f4",      "<f",    "=f4",     "<f4x",    "<f16", ""}) {
    expect_error([&] { parse_v2_data_type(typestr, nullptr); }, ErrorCode::kUnsupported,
                 {"'" + std::string(typestr) + "'"});
  }
}

TEST(DType, TimeTypesInEveryUnit) {
  const std::pair<std::string_view, TimeUnit> units[] = {
      {"Y", TimeUnit::kYear},   {"M", TimeUnit::kMonth},  {"W", TimeUnit::kWeek},
      {"D", TimeUnit::kDay},    {"h", TimeUnit::kHour},   {"m", TimeUnit::kMinute},
      {"s", TimeUnit::kSecond}, {"ms", TimeUnit::kMilli}, {"us", TimeUnit::kMicro},
      {"ns", TimeUnit::kNano},  {"ps", TimeUnit::kPico},  {"fs", TimeUnit::kFemto},
      {"as", TimeUnit::kAtto},
  };
  for (const auto& [text, unit] : units) {
    SCOPED_TRACE(text);
    for (char code : {'M', 'm'}) {
      const TimeKind time = code == 'M' ? TimeKind::kDateTime : TimeKind::kTimeDelta;
      const std::string typestr = std::string("<") + code + "8[" + std::string(text) + "]";
      Endian endian = Endian::kNotApplicable;
      const DataType type = parse_v2_data_type(typestr, &endian);
      EXPECT_EQ(type, time_type(time, unit));
      EXPECT_EQ(endian, Endian::kLittle);
      EXPECT_EQ(type.kind, DTypeKind::kInt);  // read as int64 counts
      EXPECT_EQ(type.size, 8);
      EXPECT_EQ(type.numpy_str(), typestr);
      EXPECT_EQ(type.name(), std::string(code == 'M' ? "datetime64[" : "timedelta64[") +
                                 std::string(text) + "]");
      EXPECT_EQ(parse_v2_data_type(">" + typestr.substr(1), &endian), type);
      EXPECT_EQ(endian, Endian::kBig);
      const std::string v3 = code == 'M' ? "numpy.datetime64" : "numpy.timedelta64";
      EXPECT_EQ(parse_v3_time_type(v3, text, 1), type);
    }
  }
  // A count of units, and NumPy's generic unit.
  const DataType tens = parse_v2_data_type("<m8[10ms]", nullptr);
  EXPECT_EQ(tens, time_type(TimeKind::kTimeDelta, TimeUnit::kMilli, 10));
  EXPECT_EQ(tens.numpy_str(), "<m8[10ms]");
  EXPECT_EQ(parse_v3_time_type("numpy.timedelta64", "ms", 10), tens);
  const DataType generic = parse_v2_data_type("<M8", nullptr);
  EXPECT_EQ(generic, time_type(TimeKind::kDateTime, TimeUnit::kGeneric));
  EXPECT_EQ(generic.numpy_str(), "<M8");
  EXPECT_EQ(parse_v3_time_type("numpy.datetime64", "generic", 1), generic);
  // Different units or kinds are different types; none equals plain int64.
  EXPECT_NE(parse_v2_data_type("<M8[s]", nullptr), parse_v2_data_type("<M8[ns]", nullptr));
  EXPECT_NE(parse_v2_data_type("<M8[s]", nullptr), parse_v2_data_type("<m8[s]", nullptr));
  EXPECT_NE(parse_v2_data_type("<M8[s]", nullptr), kInt64);
}

TEST(DType, BadV3TimeTypesAreNamed) {
  expect_error([] { parse_v3_time_type("numpy.datetime64", "sec", 1); },
               ErrorCode::kInvalidMetadata, {"numpy.datetime64", "'sec'"});
  expect_error([] { parse_v3_time_type("numpy.timedelta64", "s", 0); }, ErrorCode::kInvalidMetadata,
               {"scale_factor 0"});
  expect_error([] { parse_v3_time_type("numpy.datetime32", "s", 1); }, ErrorCode::kUnsupported,
               {"numpy.datetime32"});
}

TEST(ChunkKey, V3DefaultEncoding) {
  std::vector<int64_t> coords = {1, 2, 30};
  EXPECT_EQ(chunk_key({ChunkKeyKind::kDefault, '/'}, coords), "c/1/2/30");
  EXPECT_EQ(chunk_key({ChunkKeyKind::kDefault, '.'}, coords), "c.1.2.30");
  EXPECT_EQ(chunk_key({ChunkKeyKind::kDefault, '/'}, {}), "c");
  EXPECT_EQ(chunk_key({ChunkKeyKind::kDefault, '.'}, {}), "c");
}

TEST(ChunkKey, V2Encoding) {
  std::vector<int64_t> coords = {1, 2};
  EXPECT_EQ(chunk_key({ChunkKeyKind::kV2, '.'}, coords), "1.2");
  EXPECT_EQ(chunk_key({ChunkKeyKind::kV2, '/'}, coords), "1/2");
  std::vector<int64_t> one = {7};
  EXPECT_EQ(chunk_key({ChunkKeyKind::kV2, '.'}, one), "7");
  EXPECT_EQ(chunk_key({ChunkKeyKind::kV2, '.'}, {}), "0");
}

TEST(ArrayMetadataSizes, ElementsAndChunkBytes) {
  ArrayMetadata md;
  md.shape = {10, 20, 3};
  md.chunk_shape = {4, 5, 3};
  md.data_type = {DTypeKind::kComplex, 16};
  EXPECT_EQ(md.rank(), 3u);
  EXPECT_EQ(md.num_elements(), 600);
  EXPECT_EQ(md.chunk_nbytes(), 4 * 5 * 3 * 16);
  ArrayMetadata scalar;
  scalar.data_type = {DTypeKind::kInt, 2};
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_EQ(scalar.chunk_nbytes(), 2);
  md.shape = {0, 20, 3};
  EXPECT_EQ(md.num_elements(), 0);
}

}  // namespace
}  // namespace chute
