#pragma once
// Moving elements between a C-contiguous block (a decoded chunk) and a strided destination.
// Adjacent dimensions that are contiguous in both source and destination are merged, so a box
// whose rows are contiguous runs as one memcpy per row (or one memcpy for the whole box).
// Nothing is allocated: the loop state lives in fixed-size arrays of kMaxCopyRank entries.

#include <cstddef>
#include <cstdint>
#include <span>

#include "chute/array/strided_view.h"

namespace chute {

/// Views of higher rank are rejected with kUnsupported.
inline constexpr size_t kMaxCopyRank = 32;

/// Copies the box [src_start, src_start + dst.shape) of a C-contiguous block of `src_shape`
/// elements of `item_size` bytes at `src` into `dst`.
/// Preconditions: src_shape, src_start and dst have the same rank; the box lies inside
/// src_shape; dst's elements do not overlap each other or the source.
void strided_copy(const std::byte* src, std::span<const int64_t> src_shape,
                  std::span<const int64_t> src_start, const StridedView& dst, int64_t item_size);

/// Sets every element of `dst` to the `value.size()` bytes of `value` (one element).
/// Precondition: dst's elements do not overlap each other.
void strided_fill(const StridedView& dst, std::span<const std::byte> value);

}  // namespace chute
