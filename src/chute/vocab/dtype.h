#pragma once
// Element data types. In memory chute always holds values in native (little-endian) byte order;
// the byte order of stored chunks belongs to the codec chain (the v3 `bytes` codec, or the v2
// dtype's '<'/'>' mapped onto it).

#include <cstdint>
#include <string>
#include <string_view>

namespace chute {

enum class DTypeKind : uint8_t { kBool, kInt, kUInt, kFloat, kComplex, kBFloat };

/// NumPy's datetime64 and timedelta64 hold int64 counts of a unit; chute reads them as such
/// (kind kInt, size 8) and only their name, their NumPy string and equality tell them apart.
enum class TimeKind : uint8_t { kNone, kDateTime, kTimeDelta };
/// NumPy's time units, coarsest first; kGeneric is NumPy's unit-less "M8"/"m8".
enum class TimeUnit : uint8_t {
  kGeneric,
  kYear,
  kMonth,
  kWeek,
  kDay,
  kHour,
  kMinute,
  kSecond,
  kMilli,
  kMicro,
  kNano,
  kPico,
  kFemto,
  kAtto,
};

struct DataType {
  DTypeKind kind = DTypeKind::kFloat;
  uint8_t size = 4;  // bytes per element
  TimeKind time = TimeKind::kNone;
  TimeUnit unit = TimeUnit::kGeneric;  // for datetime64/timedelta64
  int32_t unit_count = 1;              // NumPy's "M8[10s]": 10 seconds per step

  /// The Zarr v3 name: "bool", "int8".."uint64", "float16/32/64", "complex64/128", "bfloat16";
  /// NumPy's name for times: "datetime64[s]", "timedelta64[10ms]".
  std::string name() const;
  /// The NumPy array-interface string in native order: "<f4", "|b1", "|u1", "<c8", "<M8[s]".
  std::string numpy_str() const;
  /// A datetime64 or timedelta64.
  bool is_time() const { return time != TimeKind::kNone; }
  /// The unit of a time type as NumPy spells it inside brackets: "s", "10ms", "" (generic).
  std::string time_unit_str() const;

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

/// The time types of Zarr v3 as zarr-python writes them: `name` "numpy.datetime64" or
/// "numpy.timedelta64" with configuration {"unit": "s", "scale_factor": 1}. Throws
/// kUnsupported for another name and kInvalidMetadata for a unit or scale that is not NumPy's.
DataType parse_v3_time_type(std::string_view name, std::string_view unit, int64_t scale_factor);

/// Parses a v2 typestr such as "<f4", ">i8", "|b1", "<c16", "<M8[s]", "<m8[10ms]"; sets *endian
/// from its first char. Throws kUnsupported naming it when unknown (structured, string types).
DataType parse_v2_data_type(std::string_view typestr, Endian* endian);

/// datetime64 or timedelta64 (`time`) of `unit` × `count`: kind kInt, size 8.
DataType time_type(TimeKind time, TimeUnit unit, int32_t count = 1);
/// The unit named as NumPy does ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps",
/// "fs", "as"; "" and "generic" for kGeneric); false when unknown.
bool parse_time_unit(std::string_view text, TimeUnit* unit);

}  // namespace chute
