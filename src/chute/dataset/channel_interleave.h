#pragma once
// The channels-last interleave of the windows' placement pass (window_finish.cc): rows of
// already cast values (one row per channel, pixels contiguous) written per pixel.

#include <cstddef>
#include <cstdint>

// Internal: not part of the stable API.
namespace chute::detail {

/// Channels interleaved per pixel by one call of interleave_rows.
inline constexpr int64_t kInterleaveGroup = 8;

/// dst[(p × channels + j) × item] = tile[(j × tile_stride + p) × item] for p < n, j < group
/// (group <= kInterleaveGroup): `group` consecutive channels, each a row of `item`-byte values
/// (item 2 or 4), written into a channels-last output one run of `group` values per pixel.
/// Eight channels of 2- or 4-byte values go through SIMD transposes where the target has them
/// (x86 SSE2); the result is the same byte copy either way.
void interleave_rows(const std::byte* tile, int64_t tile_stride, int64_t group, int64_t n,
                     std::byte* dst, int64_t channels, int64_t item);

}  // namespace chute::detail
