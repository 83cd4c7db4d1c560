#pragma once
// Arrays made of other arrays, for datasets spread over many files: members joined along axis
// 0 (one time axis over per-year files), or one index of an axis of another array (a channel
// of a stacked fields[T, C, H, W] array seen as its own (T, H, W) variable). ReadPlan::add
// turns a box of such an array into boxes of its members in the same plan, so a box spanning
// two files is planned, read and decoded together, with each member's own chunk source
// (Zarr, HDF5, mapped .npy) doing its part.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chute/array/array.h"

namespace chute {

struct VirtualMap;

struct ArrayJoin {
  /// Concatenation along axis 0: member i holds indices [starts[i], starts[i + 1]).
  std::vector<ArrayPtr> members;
  std::vector<int64_t> starts;  // members.size() + 1 entries, starts[0] == 0
  /// A slice (members empty): index `index` of axis `axis` of `parent`.
  ArrayPtr parent;
  int axis = -1;
  int64_t index = 0;
  /// Pieces of other arrays (array_virtual.h; members: their distinct sources).
  std::shared_ptr<const VirtualMap> mapped;
};

/// Joins `members` along axis 0. They must agree on rank, dtype, fill value and every extent
/// but the first; throws kInvalidArgument naming `name`, the member and the difference.
ArrayPtr concat_arrays(const std::vector<ArrayPtr>& members, const std::string& name);

/// Index `index` of axis `axis` of `parent` as an array of one rank less; its dimension names
/// and attributes are the parent's without that axis. Throws kOutOfRange naming the parent.
ArrayPtr slice_array(ArrayPtr parent, int axis, int64_t index, const std::string& name);

}  // namespace chute
