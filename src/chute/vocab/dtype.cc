#include "chute/vocab/dtype.h"

#include <charconv>
#include <cstdint>
#include <iterator>

#include "chute/util/error.h"

namespace chute {
namespace {

struct NamedType {
  std::string_view name;
  DataType type;
};

constexpr NamedType kV3Types[] = {
    {"bool", {DTypeKind::kBool, 1}},         {"int8", {DTypeKind::kInt, 1}},
    {"int16", {DTypeKind::kInt, 2}},         {"int32", {DTypeKind::kInt, 4}},
    {"int64", {DTypeKind::kInt, 8}},         {"uint8", {DTypeKind::kUInt, 1}},
    {"uint16", {DTypeKind::kUInt, 2}},       {"uint32", {DTypeKind::kUInt, 4}},
    {"uint64", {DTypeKind::kUInt, 8}},       {"float16", {DTypeKind::kFloat, 2}},
    {"float32", {DTypeKind::kFloat, 4}},     {"float64", {DTypeKind::kFloat, 8}},
    {"complex64", {DTypeKind::kComplex, 8}}, {"complex128", {DTypeKind::kComplex, 16}},
    {"bfloat16", {DTypeKind::kBFloat, 2}},
};

bool valid_size(DTypeKind kind, int size) {
  switch (kind) {
    case DTypeKind::kBool:
      return size == 1;
    case DTypeKind::kInt:
    case DTypeKind::kUInt:
      return size == 1 || size == 2 || size == 4 || size == 8;
    case DTypeKind::kFloat:
      return size == 2 || size == 4 || size == 8;
    case DTypeKind::kComplex:
      return size == 8 || size == 16;
    case DTypeKind::kBFloat:
      return size == 2;
  }
  return false;
}

constexpr std::string_view kUnitNames[] = {"",  "Y",  "M",  "W",  "D",  "h",  "m",
                                           "s", "ms", "us", "ns", "ps", "fs", "as"};

// "s", "10ms", "" (generic) -> unit and count; false when not NumPy's.
bool parse_unit_with_count(std::string_view text, TimeUnit* unit, int32_t* count) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  *count = 1;
  if (digits > 0) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + digits, *count);
    if (ec != std::errc() || end != text.data() + digits || *count < 1) return false;
    if (digits == text.size()) return false;  // a count without a unit
  }
  return parse_time_unit(text.substr(digits), unit);
}

}  // namespace

bool parse_time_unit(std::string_view text, TimeUnit* unit) {
  if (text == "generic") text = "";
  for (size_t i = 0; i < std::size(kUnitNames); ++i) {
    if (kUnitNames[i] == text) {
      *unit = static_cast<TimeUnit>(i);
      return true;
    }
  }
  return false;
}

DataType time_type(TimeKind time, TimeUnit unit, int32_t count) {
  DataType type{DTypeKind::kInt, 8};
  type.time = time;
  type.unit = unit;
  type.unit_count = count;
  return type;
}

std::string DataType::time_unit_str() const {
  std::string unit_name(kUnitNames[static_cast<size_t>(unit)]);
  if (unit_count != 1) return std::to_string(unit_count) + unit_name;
  return unit_name;
}

std::string DataType::name() const {
  if (is_time()) {
    const std::string unit_text = time_unit_str();
    const std::string base = time == TimeKind::kDateTime ? "datetime64" : "timedelta64";
    return unit_text.empty() ? base : base + "[" + unit_text + "]";
  }
  const std::string bits = std::to_string(8 * static_cast<int>(size));
  switch (kind) {
    case DTypeKind::kBool:
      return "bool";
    case DTypeKind::kInt:
      return "int" + bits;
    case DTypeKind::kUInt:
      return "uint" + bits;
    case DTypeKind::kFloat:
      return "float" + bits;
    case DTypeKind::kComplex:
      return "complex" + bits;
    case DTypeKind::kBFloat:
      return "bfloat16";
  }
  return "unknown";
}

std::string DataType::numpy_str() const {
  if (is_time()) {
    const std::string unit_text = time_unit_str();
    const std::string base = time == TimeKind::kDateTime ? "<M8" : "<m8";
    return unit_text.empty() ? base : base + "[" + unit_text + "]";
  }
  const std::string bytes = std::to_string(static_cast<int>(size));
  switch (kind) {
    case DTypeKind::kBool:
      return "|b1";
    case DTypeKind::kInt:
      return (size == 1 ? "|i" : "<i") + bytes;
    case DTypeKind::kUInt:
      return (size == 1 ? "|u" : "<u") + bytes;
    case DTypeKind::kFloat:
      return "<f" + bytes;
    case DTypeKind::kComplex:
      return "<c" + bytes;
    case DTypeKind::kBFloat:
      // NumPy has no bfloat16: expose it as two raw bytes per element.
      return "<V2";
  }
  return "|V" + bytes;
}

DataType parse_v3_data_type(std::string_view name) {
  for (const NamedType& entry : kV3Types) {
    if (entry.name == name) return entry.type;
  }
  fail(ErrorCode::kUnsupported,
       "unsupported data type '{}' (expected bool, int8..int64, uint8..uint64, float16/32/64, "
       "complex64/128 or bfloat16)",
       name);
}

DataType parse_v3_time_type(std::string_view name, std::string_view unit, int64_t scale_factor) {
  TimeKind time;
  if (name == "numpy.datetime64") {
    time = TimeKind::kDateTime;
  } else if (name == "numpy.timedelta64") {
    time = TimeKind::kTimeDelta;
  } else {
    fail(ErrorCode::kUnsupported,
         "unsupported data type '{}' (expected numpy.datetime64 or numpy.timedelta64)", name);
  }
  TimeUnit parsed;
  if (!parse_time_unit(unit, &parsed)) {
    fail(ErrorCode::kInvalidMetadata,
         "data type {} has unit '{}', expected one of Y, M, W, D, h, m, s, ms, us, ns, ps, fs, "
         "as or generic",
         name, unit);
  }
  if (scale_factor < 1 || scale_factor > INT32_MAX) {
    fail(ErrorCode::kInvalidMetadata,
         "data type {} has scale_factor {}, expected an integer in [1, 2147483647]", name,
         scale_factor);
  }
  return time_type(time, parsed, static_cast<int32_t>(scale_factor));
}

DataType parse_v2_data_type(std::string_view typestr, Endian* endian) {
  auto unsupported = [&]() -> DataType {
    fail(ErrorCode::kUnsupported,
         "unsupported data type '{}' (expected a NumPy typestr of a bool, integer, float, "
         "complex, datetime64 or timedelta64 type such as '<f4', '>i8', '|b1', '<M8[s]')",
         typestr);
  };
  if (typestr.size() < 3) return unsupported();
  Endian order;
  switch (typestr[0]) {
    case '<':
      order = Endian::kLittle;
      break;
    case '>':
      order = Endian::kBig;
      break;
    case '|':
      order = Endian::kNotApplicable;
      break;
    default:
      return unsupported();
  }
  if ((typestr[1] == 'M' || typestr[1] == 'm') && typestr[2] == '8') {
    TimeUnit unit = TimeUnit::kGeneric;
    int32_t count = 1;
    std::string_view rest = typestr.substr(3);
    if (!rest.empty()) {
      if (rest.size() < 3 || rest.front() != '[' || rest.back() != ']' ||
          !parse_unit_with_count(rest.substr(1, rest.size() - 2), &unit, &count)) {
        return unsupported();
      }
    }
    if (endian != nullptr) *endian = order;
    return time_type(typestr[1] == 'M' ? TimeKind::kDateTime : TimeKind::kTimeDelta, unit, count);
  }
  DTypeKind kind;
  switch (typestr[1]) {
    case 'b':
      kind = DTypeKind::kBool;
      break;
    case 'i':
      kind = DTypeKind::kInt;
      break;
    case 'u':
      kind = DTypeKind::kUInt;
      break;
    case 'f':
      kind = DTypeKind::kFloat;
      break;
    case 'c':
      kind = DTypeKind::kComplex;
      break;
    default:
      return unsupported();
  }
  int size = 0;
  std::string_view digits = typestr.substr(2);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
  if (ec != std::errc() || end != digits.data() + digits.size() || !valid_size(kind, size)) {
    return unsupported();
  }
  if (endian != nullptr) *endian = order;
  return DataType{kind, static_cast<uint8_t>(size)};
}

}  // namespace chute
