#include "chute/format/hdf5_types.h"

#include <algorithm>
#include <cstring>

#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

Endian order_of(hid_t type) {
  return H5Tget_order(type) == H5T_ORDER_BE ? Endian::kBig : Endian::kLittle;
}

[[noreturn]] void unsupported(const std::string& where, const std::string& what) {
  fail(ErrorCode::kUnsupported,
       "{}: unsupported HDF5 data type ({}); chute reads bool, integers, floats and complex", where,
       what);
}

}  // namespace

DataType data_type(hid_t type, Endian* endian, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  switch (cls) {
    case H5T_INTEGER: {
      if (size != 1 && size != 2 && size != 4 && size != 8) unsupported(where, "odd integer size");
      *endian = size == 1 ? Endian::kNotApplicable : order_of(type);
      const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
      return {is_signed ? DTypeKind::kInt : DTypeKind::kUInt, static_cast<uint8_t>(size)};
    }
    case H5T_FLOAT:
      if (size != 2 && size != 4 && size != 8) unsupported(where, "odd float size");
      *endian = order_of(type);
      return {DTypeKind::kFloat, static_cast<uint8_t>(size)};
    case H5T_ENUM: {
      // h5py's bool: an enum of a one-byte integer with members FALSE = 0 and TRUE = 1.
      if (size == 1 && H5Tget_nmembers(type) == 2) {
        char* name = H5Tget_member_name(type, 0);
        const bool is_bool = name && std::strcmp(name, "FALSE") == 0;
        H5free_memory(name);
        if (is_bool) {
          *endian = Endian::kNotApplicable;
          return {DTypeKind::kBool, 1};
        }
      }
      unsupported(where, "enum");
    }
    case H5T_COMPOUND: {
      // h5py's complex: {r: float, i: float} packed.
      if (H5Tget_nmembers(type) == 2) {
        Handle r(H5Tget_member_type(type, 0));
        Handle i(H5Tget_member_type(type, 1));
        if (r.valid() && i.valid() && H5Tget_class(r.get()) == H5T_FLOAT &&
            H5Tequal(r.get(), i.get()) > 0 && H5Tget_member_offset(type, 1) == size / 2 &&
            (size == 8 || size == 16)) {
          *endian = order_of(r.get());
          return {DTypeKind::kComplex, static_cast<uint8_t>(size)};
        }
      }
      unsupported(where, "compound");
    }
    case H5T_STRING:
      unsupported(where, "string");
    default:
      unsupported(where, fmt::format("class {}", static_cast<int>(cls)));
  }
}

std::vector<std::byte> fill_value(hid_t dcpl, hid_t type, const DataType& data_type,
                                  Endian endian) {
  std::vector<std::byte> value(data_type.size, std::byte{0});
  H5D_fill_value_t status;
  if (H5Pfill_value_defined(dcpl, &status) < 0 || status == H5D_FILL_VALUE_UNDEFINED) {
    take_error_stack();
    return value;
  }
  if (H5Pget_fill_value(dcpl, type, value.data()) < 0) {
    take_error_stack();
    std::fill(value.begin(), value.end(), std::byte{0});
    return value;
  }
  if (endian == Endian::kBig) {
    const size_t unit =
        data_type.kind == DTypeKind::kComplex ? data_type.size / 2u : data_type.size;
    for (size_t at = 0; at < value.size(); at += unit) {
      std::reverse(value.begin() + static_cast<ptrdiff_t>(at),
                   value.begin() + static_cast<ptrdiff_t>(at + unit));
    }
  }
  return value;
}

}  // namespace chute::hdf5
