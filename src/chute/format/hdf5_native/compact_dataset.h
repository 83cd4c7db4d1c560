#pragma once
// Compact HDF5 datasets: the values are stored inside the dataset's object header (read by the
// native reader) and served as one chunk from memory.

#include <string>

#include "chute/array/array.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/vocab/dtype.h"

namespace chute::hdf5 {

/// The compact dataset described by `info` (its layout holds the values) as an array of
/// `metadata` (type, shape, fill value, attributes; elements stored in `endian` order).
/// Throws kCorruptData naming `where` when the stored bytes do not hold the shape.
ArrayPtr open_compact(const h5native::Dataset& info, ArrayMetadata metadata, Endian endian,
                      const std::string& name, const std::string& where);

}  // namespace chute::hdf5
