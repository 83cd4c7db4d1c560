#pragma once
// Checks for option structs (CropOptions, WindowOptions, LoaderOptions, CacheOptions,
// HttpOptions): each failure is kInvalidArgument naming the owner, the field, the value and
// the allowed range, e.g. "crops: size[1] = 0 is outside [1, 2147483648]".

#include <fmt/format.h>

#include <string_view>

#include "chute/util/error.h"

namespace chute::detail {

/// Throws unless low <= value <= high (a NaN is never inside).
template <typename T>
void check_option_range(std::string_view owner, std::string_view field, T value, T low, T high,
                        std::string_view note = "") {
  if (value >= low && value <= high) return;
  fail(ErrorCode::kInvalidArgument, "{}: {} = {} is outside [{}, {}]{}", owner, field, value, low,
       high, note);
}

/// Throws with "<owner>: <field> = <value> <requirement>" unless `ok`.
template <typename T>
void check_option(bool ok, std::string_view owner, std::string_view field, const T& value,
                  std::string_view requirement) {
  if (ok) return;
  fail(ErrorCode::kInvalidArgument, "{}: {} = {} {}", owner, field, value, requirement);
}

}  // namespace chute::detail
