#include "chute/array/chunk_grid.h"

#include <fmt/format.h>

#include <iterator>

#include "chute/util/checked.h"

namespace chute {

std::vector<int64_t> chunk_grid_shape(std::span<const int64_t> shape,
                                      std::span<const int64_t> chunk_shape) {
  std::vector<int64_t> grid(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    // Not (shape + chunk - 1) / chunk: that sum overflows for extents near 2^63.
    grid[d] = shape[d] / chunk_shape[d] + (shape[d] % chunk_shape[d] != 0);
  }
  return grid;
}

std::optional<int64_t> chunk_count(std::span<const int64_t> grid_shape) {
  return checked_product(grid_shape);
}

int64_t linear_chunk_index(std::span<const int64_t> coords, std::span<const int64_t> grid_shape) {
  int64_t index = 0;
  for (size_t d = 0; d < coords.size(); ++d) index = index * grid_shape[d] + coords[d];
  return index;
}

void append_chunk_key(std::string& out, std::string_view prefix, const ChunkKeyEncoding& encoding,
                      std::span<const int64_t> coords) {
  if (!prefix.empty()) {
    out.append(prefix);
    if (prefix.back() != '/') out += '/';
  }
  auto sink = std::back_inserter(out);
  if (encoding.kind == ChunkKeyKind::kDefault) {
    out += 'c';
    for (int64_t c : coords) fmt::format_to(sink, "{}{}", encoding.separator, c);
    return;
  }
  if (coords.empty()) {
    out += '0';
    return;
  }
  for (size_t d = 0; d < coords.size(); ++d) {
    if (d > 0) out += encoding.separator;
    fmt::format_to(sink, "{}", coords[d]);
  }
}

}  // namespace chute
