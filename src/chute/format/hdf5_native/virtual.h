#pragma once
// Virtual dataset mappings: the global heap object a virtual layout points at, decoded into its
// source files, source datasets and the selections that map them (all, regular hyperslabs with
// unlimited counts, lists of blocks).

#include <cstdint>
#include <string>
#include <vector>

#include "chute/format/hdf5_native/bytes.h"

namespace chute::h5native {

struct Selection {
  enum class Kind { kNone = 0, kPoints = 1, kHyperslab = 2, kAll = 3 };
  Kind kind = Kind::kAll;
  size_t rank = 0;
  bool regular = false;
  // Regular hyperslab: per dimension; a count of kUndefined is unlimited.
  std::vector<uint64_t> start, stride, count, block;
  // Irregular hyperslab: blocks as (first, last) corners, rank values each.
  std::vector<uint64_t> block_first, block_last;
};

struct VirtualMapping {
  std::string file;     // "." for the virtual dataset's own file; may hold %b and %% patterns
  std::string dataset;  // path in that file
  Selection source;
  Selection target;  // in the virtual dataset
};

/// Decodes a serialized dataspace selection.
Selection decode_selection(Cursor& in);

/// Decodes the global heap object of a virtual layout, verifying its checksum.
std::vector<VirtualMapping> decode_virtual_mappings(Cursor& in);

}  // namespace chute::h5native
