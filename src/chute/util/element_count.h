#pragma once
// The number of elements of a shape (the product of its extents; 1 for a scalar).

#include <cstdint>
#include <span>

namespace chute {

inline int64_t element_count(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

}  // namespace chute
