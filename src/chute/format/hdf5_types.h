#pragma once
// HDF5 data types as chute data types: integers, floats, h5py's bool (an enum of int8 with
// FALSE/TRUE) and complex (a compound of two equal floats "r", "i"), in either byte order.

#include <string>
#include <vector>

#include "chute/format/hdf5_library.h"
#include "chute/vocab/dtype.h"

namespace chute::hdf5 {

/// Throws kUnsupported naming `where` and the HDF5 type class when it has no chute equivalent.
DataType data_type(hid_t type, Endian* endian, const std::string& where);

/// The dataset's fill value in native byte order (zeros when none is defined).
std::vector<std::byte> fill_value(hid_t dcpl, hid_t type, const DataType& data_type, Endian endian);

}  // namespace chute::hdf5
