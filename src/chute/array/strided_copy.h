#pragma once
// Moving elements between a C-contiguous block (a decoded chunk) and a strided destination.
// Adjacent dimensions that are contiguous in both source and destination are merged, so a box
// whose rows are contiguous runs as one memcpy per row (or one memcpy for the whole box).
// Nothing is allocated: the loop state lives in fixed-size arrays of kMaxCopyRank entries.

#include <cstddef>
#include <cstdint>
#include <span>

#include "chute/array/strided_view.h"
#include "chute/util/stream_copy.h"  // stream_bytes, stream_fence (used beside the copies)

namespace chute {

/// Views of higher rank are rejected with kUnsupported.
inline constexpr size_t kMaxCopyRank = 32;

/// Copies the box [src_start, src_start + dst.shape) of a C-contiguous block of `src_shape`
/// elements of `item_size` bytes at `src` into `dst`.
/// Preconditions: src_shape, src_start and dst have the same rank; the box lies inside
/// src_shape; dst's elements do not overlap each other or the source.
void strided_copy(const std::byte* src, std::span<const int64_t> src_shape,
                  std::span<const int64_t> src_start, const StridedView& dst, int64_t item_size);

/// The transpose kernels strided_copy may use. kBest (the default): 8 x 8 blocks transposed in
/// registers where the CPU has them (4-byte elements with AVX2, checked once at run time, else
/// SSE2 4 x 4; 2-byte elements with SSE2), for short and long source strides alike. kPortable:
/// the scalar kernels only, as on a CPU without them (the destination walked in order for
/// short strides, scalar 8 x 8 tiles for long ones). Process-wide; tests and
/// cube_symmetry_bench compare the two. Not to be switched while copies run.
enum class CopyKernels { kBest, kPortable };
void set_copy_kernels(CopyKernels kernels);

/// One stream of an interleaved copy: at every step of the shared outer loop, `bytes`
/// contiguous bytes go from `src` to `dst` (both advanced by the outer loop's strides).
struct InterleavedRun {
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;
  int64_t bytes = 0;
};

/// For each index i of `outer_shape` in C order, and for each run in the order given, copies
/// run.bytes from run.src + i·src_strides to run.dst + i·dst_strides (strides in bytes, one per
/// outer dimension). This gathers chunks that split a destination's innermost dimension into
/// short runs: the destination is written front to back, each line once, while the sources are
/// read as parallel sequential streams.
/// Preconditions: outer_shape, dst_strides and src_strides have the same rank; no destination
/// byte is written twice and none overlaps a source.
void interleaved_copy(std::span<const InterleavedRun> runs, std::span<const int64_t> outer_shape,
                      std::span<const int64_t> dst_strides, std::span<const int64_t> src_strides);

/// Sets every element of `dst` to the `value.size()` bytes of `value` (one element).
/// Precondition: dst's elements do not overlap each other.
void strided_fill(const StridedView& dst, std::span<const std::byte> value);

}  // namespace chute
