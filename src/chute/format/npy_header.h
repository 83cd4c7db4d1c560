#pragma once
// The header of a NumPy .npy file (format versions 1.0, 2.0 and 3.0), parsed without I/O so it is
// tested and fuzzed alone: magic "\x93NUMPY", version, header length (uint16 for v1, uint32 for
// v2/v3, little endian), then a Python dict literal {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), } padded to a multiple of 64 bytes.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chute/vocab/dtype.h"

namespace chute {

struct NpyHeader {
  DataType data_type;
  Endian endian = Endian::kLittle;  // kNotApplicable for one-byte types
  bool fortran_order = false;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;  // where the elements start in the file
  int major_version = 1;

  int64_t num_elements() const;
  /// Bytes of element data the file must hold after the header.
  uint64_t data_nbytes() const;
};

/// Bytes of the file the header occupies (preamble included), from at least its first 12
/// bytes; throws kCorruptData naming `name` when they are not an .npy preamble.
uint64_t npy_header_nbytes(std::span<const std::byte> prefix, const std::string& name);

/// Parses the header from the file's first npy_header_nbytes() (or more) bytes. Throws
/// kCorruptData for a malformed header, kUnsupported for structured, object, string or
/// datetime dtypes; messages name `name` and what was expected and found.
NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& name);

}  // namespace chute
