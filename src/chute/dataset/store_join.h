#pragma once
// Several weather stores seen as one group (pressure levels in one store, single levels in
// another, as ERA5 is often split): their arrays are joined by name after checking that the
// coordinates they share (time/valid_time, lat/latitude, lon/longitude, and the level
// coordinates) hold the same values.

#include <string>
#include <vector>

#include "chute/format/group.h"

namespace chute {

/// Joins `groups` (named by their paths in messages) into one. Throws kInvalidArgument naming
/// both stores and the coordinate when a shared coordinate differs in length, values or units,
/// and naming both stores and the array when a non-coordinate array is in two of them.
Group join_stores(const std::vector<Group>& groups);

}  // namespace chute
