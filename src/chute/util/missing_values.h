#pragma once
// The stored values CF decoding reads as missing (_FillValue and a missing_value list), kept
// sorted and unique so that matching one element is a binary search: decoding stays linear in
// the data however long the list is (a list of millions made it data × list).

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace chute {

/// Sorts `values`, drops duplicates and NaNs (a NaN stays NaN without a comparison).
inline void normalize_missing(std::vector<double>& values) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

/// Whether `x` is one of `sorted` (as normalize_missing leaves it).
inline bool is_missing_value(std::span<const double> sorted, double x) {
  if (sorted.size() <= 8) {
    bool found = false;
    for (double m : sorted) found |= x == m;
    return found;
  }
  // NaN compares neither below nor above anything: the search would "find" it.
  return !std::isnan(x) && std::binary_search(sorted.begin(), sorted.end(), x);
}

}  // namespace chute
