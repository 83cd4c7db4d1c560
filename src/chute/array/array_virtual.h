#pragma once
// Arrays whose elements are mapped piece by piece from boxes of other arrays (an HDF5 virtual
// dataset): a piece maps a product of per-axis runs of this array onto runs of a source
// array's axes; elements no piece maps read as the fill value. ReadPlan::add turns a box of
// such an array into boxes of its sources in the same plan, so each source's own chunk source
// (chunked HDF5, contiguous, Zarr) does its part and shared chunks are read once.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chute/array/array.h"

namespace chute {

/// `length` consecutive indices from `target` (this array) land on those from `source`.
struct VirtualRun {
  int64_t target = 0;
  int64_t source = 0;
  int64_t length = 0;
};

struct VirtualPiece {
  ArrayPtr source;
  /// Per axis of this array: the source axis its runs land on, or -1 for an axis the piece
  /// covers one index of (one run of length 1; its `source` is unused).
  std::vector<int> source_axis;
  /// Per source axis: the index read along it when no axis of this array lands on it.
  std::vector<int64_t> source_index;
  /// Per axis of this array: disjoint runs in increasing target order.
  std::vector<std::vector<VirtualRun>> runs;
};

struct VirtualMap {
  /// Ordered by where they start along axis 0.
  std::vector<VirtualPiece> pieces;
  /// Per piece (in that order): the end along axis 0 of it and every piece before it, so a box
  /// finds the pieces it meets without looking at all of them (years stacked along time).
  std::vector<int64_t> reach;
};

/// An array of `metadata` (its chunk shape is the read grid reported to callers sizing work)
/// made of `pieces`. `placeholder` is an array of the same metadata whose every element is the
/// fill value, nothing stored: what the array reports as its chunk source (keys, stored sizes);
/// without one, the first piece's source (then of this array's rank and grid). Throws
/// kInvalidArgument naming `name` and the piece's source when a piece leaves this array or its
/// source; kUnsupported when its source's dtype differs or two pieces overlap.
ArrayPtr virtual_array(std::vector<VirtualPiece> pieces, ArrayMetadata metadata,
                       const std::string& name, ArrayPtr placeholder);

class ReadPlan;
struct ElementConvert;

/// ReadPlan::add for a virtual array: fills what no piece maps (at once, so before any task of
/// the plan runs), then adds the boxes of its sources to `plan`.
void add_virtual_box(ReadPlan& plan, const Array& array, std::span<const int64_t> start,
                     const StridedView& dst, std::string context, const ElementConvert* convert);

}  // namespace chute
