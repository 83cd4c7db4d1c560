// Fill values in every JSON encoding, written as native-order element bytes.
#include "chute/format/fill_value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>

#include "chute/format/test_util.h"

namespace chute {
namespace {

using chute::testing::bytes_as;
using chute::testing::expect_error;
using nlohmann::json;

std::vector<std::byte> encode(const json& value, DataType type) {
  return encode_fill_value(value, type, "array 'a': zarr.json field 'fill_value'");
}

TEST(FillValue, HalfConversionKnownPatterns) {
  EXPECT_EQ(float_to_half_bits(0.0), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.0), 0x3c00);
  EXPECT_EQ(float_to_half_bits(1.5), 0x3e00);
  EXPECT_EQ(float_to_half_bits(-2.0), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0), 0x7bff);  // largest finite
  EXPECT_EQ(float_to_half_bits(65519.0), 0x7bff);  // rounds down to it
  EXPECT_EQ(float_to_half_bits(65520.0), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(float_to_half_bits(1e10), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-1e10), 0xfc00);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0, -26)), 0x0000);  // underflows
  EXPECT_EQ(float_to_half_bits(0.1), 0x2e66);
  EXPECT_EQ(float_to_half_bits(1.0 + std::ldexp(1.0, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_half_bits(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<double>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<double>::quiet_NaN()), 0x7e00);
}

TEST(FillValue, HalfRoundTripsEveryFinitePattern) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    double value = half_bits_to_double(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(float_to_half_bits(value), bits) << value;
  }
}

TEST(FillValue, BFloat16) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_bits(-2.5), 0xc020);
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<double>::quiet_NaN()), 0x7fc0);
  EXPECT_EQ(bytes_as<uint16_t>(encode("Infinity", kBFloat16)), 0x7f80);
}

TEST(FillValue, FloatsFromNumbersAndSpecialStrings) {
  EXPECT_EQ(bytes_as<float>(encode(1.5, kFloat32)), 1.5f);
  EXPECT_EQ(bytes_as<float>(encode(3, kFloat32)), 3.0f);
  EXPECT_EQ(bytes_as<double>(encode(-1e300, kFloat64)), -1e300);
  EXPECT_EQ(bytes_as<float>(encode(1e300, kFloat32)), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bytes_as<float>(encode("NaN", kFloat32))));
  EXPECT_TRUE(std::isnan(bytes_as<double>(encode("NaN", kFloat64))));
  EXPECT_EQ(bytes_as<uint32_t>(encode("NaN", kFloat32)), 0x7fc00000u);
  EXPECT_EQ(bytes_as<double>(encode("Infinity", kFloat64)),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(bytes_as<float>(encode("-Infinity", kFloat32)),
            -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bytes_as<uint16_t>(encode(1.5, kFloat16)), 0x3e00);
  EXPECT_EQ(bytes_as<uint16_t>(encode("NaN", kFloat16)), 0x7e00);
  EXPECT_EQ(bytes_as<uint16_t>(encode("-Infinity", kFloat16)), 0xfc00);
}

TEST(FillValue, HexBitPatterns) {
  EXPECT_EQ(bytes_as<uint32_t>(encode("0x7fc00001", kFloat32)), 0x7fc00001u);
  EXPECT_EQ(bytes_as<float>(encode("0x3f800000", kFloat32)), 1.0f);
  EXPECT_EQ(bytes_as<uint64_t>(encode("0x7ff8000000000000", kFloat64)), 0x7ff8000000000000u);
  EXPECT_EQ(bytes_as<uint16_t>(encode("0x7E00", kFloat16)), 0x7e00);
  expect_error([] { encode("0x7fc0", kFloat32); }, ErrorCode::kInvalidMetadata,
               {"field 'fill_value'", "0x7fc0", "float32"});
  expect_error([] { encode("0xzzzzzzzz", kFloat32); }, ErrorCode::kInvalidMetadata, {"hex"});
}

TEST(FillValue, NullIsZeros) {
  for (DataType type :
       {kFloat32, kFloat16, DataType{DTypeKind::kComplex, 16}, DataType{DTypeKind::kBool, 1}}) {
    std::vector<std::byte> bytes = encode(nullptr, type);
    EXPECT_EQ(bytes, std::vector<std::byte>(type.size, std::byte{0}));
  }
}

TEST(FillValue, Integers) {
  EXPECT_EQ(bytes_as<int8_t>(encode(-128, {DTypeKind::kInt, 1})), -128);
  EXPECT_EQ(bytes_as<uint8_t>(encode(255, {DTypeKind::kUInt, 1})), 255);
  EXPECT_EQ(bytes_as<int16_t>(encode(-3, {DTypeKind::kInt, 2})), -3);
  EXPECT_EQ(bytes_as<int64_t>(encode(std::numeric_limits<int64_t>::min(), {DTypeKind::kInt, 8})),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(bytes_as<uint64_t>(encode(json::parse("18446744073709551615"), {DTypeKind::kUInt, 8})),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(bytes_as<int32_t>(encode(7.0, {DTypeKind::kInt, 4})), 7);
  for (const auto& [value_in, type_in] : std::vector<std::pair<json, DataType>>{
           {128, {DTypeKind::kInt, 1}},
           {256, {DTypeKind::kUInt, 1}},
           {-1, {DTypeKind::kUInt, 4}},
           {-32769, {DTypeKind::kInt, 2}},
           {json::parse("9223372036854775808"), {DTypeKind::kInt, 8}},
           {1.5, {DTypeKind::kInt, 4}},
           {"NaN", {DTypeKind::kInt, 4}},
           {true, {DTypeKind::kUInt, 2}},
       }) {
    const json value = value_in;  // lambdas cannot capture structured bindings in C++20
    const DataType type = type_in;
    SCOPED_TRACE(value.dump());
    expect_error([&] { encode(value, type); }, ErrorCode::kInvalidMetadata,
                 {"field 'fill_value'", type.name()});
  }
}

TEST(FillValue, Bools) {
  EXPECT_EQ(bytes_as<uint8_t>(encode(true, {DTypeKind::kBool, 1})), 1);
  EXPECT_EQ(bytes_as<uint8_t>(encode(false, {DTypeKind::kBool, 1})), 0);
  EXPECT_EQ(bytes_as<uint8_t>(encode(1, {DTypeKind::kBool, 1})), 1);
  expect_error(
      [] {
        encode("true", {DTypeKind::kBool, 1});
      },
      ErrorCode::kInvalidMetadata, {"true or false"});
  expect_error([] { encode(2, {DTypeKind::kBool, 1}); }, ErrorCode::kInvalidMetadata, {"bool"});
}

TEST(FillValue, Complex) {
  auto c64 = bytes_as<std::complex<float>>(encode({1.0, 2.0}, {DTypeKind::kComplex, 8}));
  EXPECT_EQ(c64, std::complex<float>(1.0f, 2.0f));
  auto c128 = bytes_as<std::complex<double>>(
      encode(json::parse(R"(["NaN", "-Infinity"])"), {DTypeKind::kComplex, 16}));
  EXPECT_TRUE(std::isnan(c128.real()));
  EXPECT_EQ(c128.imag(), -std::numeric_limits<double>::infinity());
  auto real_only = bytes_as<std::complex<double>>(encode(4.0, {DTypeKind::kComplex, 16}));
  EXPECT_EQ(real_only, std::complex<double>(4.0, 0.0));
  auto hex = bytes_as<std::complex<float>>(
      encode(json::parse(R"(["0x3f800000", 0])"), {DTypeKind::kComplex, 8}));
  EXPECT_EQ(hex, std::complex<float>(1.0f, 0.0f));
  expect_error(
      [] {
        encode(json::parse("[1, 2, 3]"), {DTypeKind::kComplex, 8});
      },
      ErrorCode::kInvalidMetadata, {"[real, imaginary]", "complex64"});
}

TEST(FillValue, WrongTypesForFloats) {
  for (const json& value : {json("nan"), json(true), json::object(), json("1.5")}) {
    SCOPED_TRACE(value.dump());
    expect_error([&] { encode(value, kFloat32); }, ErrorCode::kInvalidMetadata,
                 {"array 'a': zarr.json field 'fill_value'"});
  }
}

}  // namespace
}  // namespace chute
