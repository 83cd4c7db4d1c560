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
  for (std::string_view typestr : {"|S10", "<M8[ns]", "<m8[s]", "|O", "<U5", "|V8", "<f3", "<i3",
                                   "<c4", "|b2", "f4", "<f", "=f4", "<f4x", "<f16", ""}) {
    expect_error([&] { parse_v2_data_type(typestr, nullptr); }, ErrorCode::kUnsupported,
                 {"'" + std::string(typestr) + "'"});
  }
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
