#pragma once
// HDF5 data types, as the native reader decodes them, as chute data types: integers, floats,
// h5py's bool (an enum of int8 with FALSE/TRUE) and complex (a compound of two equal floats "r",
// "i", or HDF5 2.0's complex class), in either byte order.

#include <cstddef>
#include <string>
#include <vector>

#include "chute/format/hdf5_native/messages.h"
#include "chute/vocab/dtype.h"

namespace chute::hdf5 {

/// Throws kUnsupported naming `where` and the HDF5 type class when it has no chute equivalent;
/// kInvalidArgument for strings (read apart: hdf5_strings.h).
DataType data_type(const h5native::Datatype& type, Endian* endian, const std::string& where);

/// The dataset's fill value in native byte order (zeros when none is defined).
std::vector<std::byte> fill_value(const h5native::FillValue& fill, const DataType& data_type,
                                  Endian endian);

/// `value` (a fill value in native byte order) as the n-bit filter's decoding gives elements of
/// `type`: an integer of reduced precision at a bit offset is stored shifted, with padding bits,
/// and the filter's decoding (codec/nbit_codec.cc) shifts it down and sign-extends it, as
/// libhdf5's conversion does. The fill value is stored in the same form. Other types unchanged.
void unpack_nbit_fill_value(std::vector<std::byte>& value, const h5native::Datatype& type);

}  // namespace chute::hdf5
