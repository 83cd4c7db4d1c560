#pragma once
// Sizes computed from metadata a file or a user controls (extents, counts, byte offsets): each
// product and sum reports overflow instead of wrapping around, so a hostile header becomes a
// clear error rather than a small number that later indexes past a table.

#include <cstdint>
#include <optional>
#include <span>

namespace chute {

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// `start` times the product of `values` (all >= 0); nullopt when it does not fit in int64. A
/// zero anywhere makes the product 0 whatever the other values are.
inline std::optional<int64_t> checked_product(std::span<const int64_t> values, int64_t start = 1) {
  for (int64_t v : values) {
    if (v == 0) return 0;
  }
  int64_t n = start;
  for (int64_t v : values) {
    if (v < 0 || __builtin_mul_overflow(n, v, &n)) return std::nullopt;
  }
  return n;
}

}  // namespace chute
