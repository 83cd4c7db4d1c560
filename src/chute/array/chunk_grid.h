#pragma once
// Arithmetic on a regular chunk grid: how many chunks per dimension, where a chunk sits in
// row-major order, and formatting a chunk's key without allocating.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chute/array/metadata.h"

namespace chute {

/// ceil(shape / chunk_shape) per dimension. Precondition: same rank, chunk extents > 0.
std::vector<int64_t> chunk_grid_shape(std::span<const int64_t> shape,
                                      std::span<const int64_t> chunk_shape);

/// The number of chunks of a grid of `grid_shape`; nullopt when it does not fit in int64 (such
/// a grid cannot be indexed: linear_chunk_index would overflow).
std::optional<int64_t> chunk_count(std::span<const int64_t> grid_shape);

/// Row-major position of `coords` in a grid of `grid_shape` chunks (0 for rank 0).
int64_t linear_chunk_index(std::span<const int64_t> coords, std::span<const int64_t> grid_shape);

/// Appends `prefix` joined (as join_key does) with chunk_key(encoding, coords) to `out`; reusing
/// `out` across chunks avoids an allocation per key.
void append_chunk_key(std::string& out, std::string_view prefix, const ChunkKeyEncoding& encoding,
                      std::span<const int64_t> coords);

}  // namespace chute
