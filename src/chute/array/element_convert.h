#pragma once
// Converting stored elements while a read places them (internal: not installed). A read with
// CF decoding (missing values -> NaN, scale_factor, add_offset) converts each decoded chunk in
// the same pass that copies it into the destination, instead of a second pass over the result.
// The array layer knows only the numbers; parsing them from attributes is the caller's
// (python/chute/_cf.py).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "chute/array/strided_view.h"
#include "chute/vocab/dtype.h"

namespace chute {

/// out = decoded(v), NaN where v (as float64) equals one of `missing`, else × scale and then
/// + offset, each only when set, in float64 and rounded after each step: NumPy's order in
/// xarray's decoding (astype, mask, `*= scale_factor`, `+= add_offset`).
struct ElementConvert {
  DataType stored;               // int8..int64, uint8..uint64, float16/32/64
  DataType decoded;              // float32 or float64 (float64 when scaled)
  std::optional<double> scale;   // scale_factor
  std::optional<double> offset;  // add_offset
  std::vector<double> missing;   // stored values that read as NaN: sorted, unique, no NaN
};

/// Throws kInvalidArgument naming `name` when `convert` is not one convert_run does: a stored
/// type above, a float32/float64 decoded type, float64 when scaled.
void check_convert(const ElementConvert& convert, std::string_view name);

/// dst[i × dst_byte_stride] = convert(src[i]) for i < count (src: `count` contiguous stored
/// elements in native byte order).
void convert_run(const ElementConvert& convert, const std::byte* src, int64_t count, std::byte* dst,
                 int64_t dst_byte_stride);

/// strided_copy (strided_copy.h) converting each element: the box [src_start, src_start +
/// dst.shape) of a C-contiguous block of `src_shape` stored elements into `dst` (elements of
/// convert.decoded), one convert_run per innermost run (contiguous dimensions merged).
void strided_transform(const std::byte* src, std::span<const int64_t> src_shape,
                       std::span<const int64_t> src_start, const StridedView& dst,
                       const ElementConvert& convert);

}  // namespace chute
