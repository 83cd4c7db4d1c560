#include "chute/format/hdf5_types.h"

#include <algorithm>

#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

using Class = h5native::Datatype::Class;

Endian order_of(const h5native::Datatype& type) {
  return type.big_endian ? Endian::kBig : Endian::kLittle;
}

[[noreturn]] void unsupported(const std::string& where, const std::string& what) {
  fail(ErrorCode::kUnsupported,
       "{}: unsupported HDF5 data type ({}); chute reads bool, integers, floats and complex", where,
       what);
}

// Strings are read as NumPy arrays on their own (hdf5_strings.h), never as numeric input.
[[noreturn]] void not_numeric_strings(const std::string& where) {
  fail(ErrorCode::kInvalidArgument,
       "{}: a string variable; strings are read as NumPy arrays (chute.open, Group), never as "
       "numeric arrays or batch input",
       where);
}

bool same_float(const h5native::Datatype& a, const h5native::Datatype& b) {
  return a.cls == Class::kFloat && b.cls == Class::kFloat && a.size == b.size &&
         a.big_endian == b.big_endian && a.precision == b.precision &&
         a.exponent_size == b.exponent_size && a.mantissa_size == b.mantissa_size;
}

}  // namespace

DataType data_type(const h5native::Datatype& type, Endian* endian, const std::string& where) {
  const uint32_t size = type.size;
  switch (type.cls) {
    case Class::kFixedPoint: {
      if (size != 1 && size != 2 && size != 4 && size != 8) unsupported(where, "odd integer size");
      *endian = size == 1 ? Endian::kNotApplicable : order_of(type);
      return {type.is_signed ? DTypeKind::kInt : DTypeKind::kUInt, static_cast<uint8_t>(size)};
    }
    case Class::kFloat:
      if (size != 2 && size != 4 && size != 8) unsupported(where, "odd float size");
      *endian = order_of(type);
      return {DTypeKind::kFloat, static_cast<uint8_t>(size)};
    case Class::kEnum:
      // h5py's bool: an enum of a one-byte integer with members FALSE = 0 and TRUE = 1.
      if (size == 1 && type.members == 2 && !type.enum_names.empty() &&
          type.enum_names[0] == "FALSE") {
        *endian = Endian::kNotApplicable;
        return {DTypeKind::kBool, 1};
      }
      unsupported(where, "enum");
    case Class::kCompound:
      // h5py's complex: {r: float, i: float} packed.
      if (type.fields.size() == 2 && (size == 8 || size == 16) && type.fields[0].offset == 0 &&
          type.fields[1].offset == size / 2 && type.fields[0].type->size == size / 2 &&
          same_float(*type.fields[0].type, *type.fields[1].type)) {
        *endian = order_of(*type.fields[0].type);
        return {DTypeKind::kComplex, static_cast<uint8_t>(size)};
      }
      unsupported(where, "compound");
    case Class::kComplex:
      if (type.base && type.base->cls == Class::kFloat && (size == 8 || size == 16) &&
          type.base->size == size / 2) {
        *endian = order_of(*type.base);
        return {DTypeKind::kComplex, static_cast<uint8_t>(size)};
      }
      unsupported(where, "complex of an odd size");
    case Class::kString:
      not_numeric_strings(where);
    case Class::kVarLen:
      if (type.vlen_string) not_numeric_strings(where);
      unsupported(where, "variable-length");
    default:
      unsupported(where, type.class_name());
  }
}

std::vector<std::byte> fill_value(const h5native::FillValue& fill, const DataType& data_type,
                                  Endian endian) {
  std::vector<std::byte> value(data_type.size, std::byte{0});
  if (!fill.value || fill.value->size() != data_type.size) return value;
  value = *fill.value;
  if (endian == Endian::kBig) {
    const size_t unit =
        data_type.kind == DTypeKind::kComplex ? data_type.size / 2u : data_type.size;
    for (size_t at = 0; at + unit <= value.size(); at += unit) {
      std::reverse(value.begin() + static_cast<ptrdiff_t>(at),
                   value.begin() + static_cast<ptrdiff_t>(at + unit));
    }
  }
  return value;
}

void unpack_nbit_fill_value(std::vector<std::byte>& value, const h5native::Datatype& type) {
  using Class = h5native::Datatype::Class;
  const size_t size = value.size();
  if (type.cls != Class::kFixedPoint || size == 0 || size > 8 || type.precision == 0 ||
      type.precision + type.bit_offset > 8 * size) {
    return;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) v |= static_cast<uint64_t>(value[i]) << (8 * i);
  const unsigned precision = type.precision;
  v >>= type.bit_offset;
  if (precision < 64) {
    v &= (uint64_t{1} << precision) - 1;
    if (type.is_signed && (v >> (precision - 1)) & 1) v |= ~uint64_t{0} << precision;
  }
  for (size_t i = 0; i < size; ++i) value[i] = static_cast<std::byte>(v >> (8 * i));
}

}  // namespace chute::hdf5
