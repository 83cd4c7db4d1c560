#include "chute/vocab/dtype.h"

#include <charconv>

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

}  // namespace

std::string DataType::name() const {
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

DataType parse_v2_data_type(std::string_view typestr, Endian* endian) {
  auto unsupported = [&]() -> DataType {
    fail(ErrorCode::kUnsupported,
         "unsupported data type '{}' (expected a NumPy typestr of a bool, integer, float or "
         "complex type such as '<f4', '>i8', '|b1')",
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
