#pragma once
// Where a read lands: a strided view into caller memory (a NumPy array, a slot of a batch
// buffer, a channel of a stacked sample). Strides are in bytes and may be any values, negative
// and permuted ones included (a crop placed rotated or reflected: dataset/cube_symmetry.h), as
// long as no two elements of the view overlap; `data` points at element [0, 0, ...].

#include <cstddef>
#include <cstdint>
#include <vector>

namespace chute {

struct StridedView {
  std::byte* data = nullptr;
  std::vector<int64_t> shape;
  std::vector<int64_t> byte_strides;

  /// A C-contiguous view of `shape` elements of `item_size` bytes at `data`.
  static StridedView contiguous(std::byte* data, std::vector<int64_t> shape, int64_t item_size);
  /// True when the view is C-contiguous for elements of `item_size` bytes.
  bool is_contiguous(int64_t item_size) const;
};

}  // namespace chute
