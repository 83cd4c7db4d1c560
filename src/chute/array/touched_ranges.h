#pragma once
// The byte ranges of a chunk (C order) that a task's boxes read: for an uncompressed chunk they
// are the only stored bytes worth reading. A 64^3 crop corner in a (1, 64, 64, 64) float32
// chunk touches a few hundred rows of a megabyte; reading from its first to its last byte reads
// the planes in between too.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "chute/array/read_plan.h"

namespace chute {

/// Ranges closer than this are read as one: below it a second request costs more than reading
/// the gap (docs/design/volume-crops.md: measured on page-cache and cold files).
inline constexpr uint64_t kTouchedRangeGap = 4096;

/// [begin, end) byte ranges, sorted, disjoint, separated by more than `max_gap` bytes, that
/// cover every element the targets read from a chunk of `chunk_shape` elements of `item_size`
/// bytes. Ranges closer than `max_gap` are merged (the gap is read too). Replaces `out`.
void touched_ranges(std::span<const ChunkTarget> targets, std::span<const int64_t> chunk_shape,
                    int64_t item_size, uint64_t max_gap,
                    std::vector<std::pair<uint64_t, uint64_t>>& out);

}  // namespace chute
