#pragma once
// Element data types. In memory chute always holds values in native (little-endian) byte order;
// the byte order of stored chunks belongs to the codec chain (the v3 `bytes` codec, or the v2
// dtype's '<'/'>' mapped onto it).

#include <cstdint>
#include <string>
#include <string_view>

namespace chute {

enum class DTypeKind : uint8_t { kBool, kInt, kUInt, kFloat, kComplex, kBFloat };

struct DataType {
  DTypeKind kind = DTypeKind::kFloat;
  uint8_t size = 4;  // bytes per element

  /// The Zarr v3 name: "bool", "int8".."uint64", "float16/32/64", "complex64/128", "bfloat16".
  std::string name() const;
  /// The NumPy array-interface string in native order: "<f4", "|b1", "|u1", "<c8".
  std::string numpy_str() const;

  bool operator==(const DataType&) const = default;
};

/// The data types that code and tests name most often.
inline constexpr DataType kUInt8{DTypeKind::kUInt, 1};
inline constexpr DataType kInt16{DTypeKind::kInt, 2};
inline constexpr DataType kInt32{DTypeKind::kInt, 4};
inline constexpr DataType kInt64{DTypeKind::kInt, 8};
inline constexpr DataType kFloat16{DTypeKind::kFloat, 2};
inline constexpr DataType kBFloat16{DTypeKind::kBFloat, 2};
inline constexpr DataType kFloat32{DTypeKind::kFloat, 4};
inline constexpr DataType kFloat64{DTypeKind::kFloat, 8};
inline constexpr DataType kComplex128{DTypeKind::kComplex, 16};

enum class Endian : uint8_t { kLittle, kBig, kNotApplicable };

/// Parses a v3 data type name; throws kUnsupported naming it when unknown.
DataType parse_v3_data_type(std::string_view name);

/// Parses a v2 typestr such as "<f4", ">i8", "|b1", "<c16"; sets *endian from its first char.
/// Throws kUnsupported naming it when unknown (structured, string, datetime types).
DataType parse_v2_data_type(std::string_view typestr, Endian* endian);

}  // namespace chute
