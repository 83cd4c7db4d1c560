#pragma once
// Opening a NumPy .npy file as an array: the header is parsed by chute and the elements are read
// straight out of the file (mapped, never loaded whole), in C or Fortran order, either byte order.

#include <string>

#include "chute/array/array.h"

namespace chute {

/// Opens the .npy file at `path`. Throws kNotFound when it does not exist, kCorruptData for a
/// bad header or a file too short for its shape, kUnsupported for structured, string, object
/// or datetime dtypes; every message names the file.
ArrayPtr open_npy(const std::string& path);

/// True when `path` names an .npy file by its extension.
bool is_npy_path(const std::string& path);

}  // namespace chute
