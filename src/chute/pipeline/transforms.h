#pragma once
// Transforms applied to a batch after its reads: per-channel normalisation and the cast from
// float32 to float16 / bfloat16 (round to nearest, ties to even; NaN stays NaN, overflow gives
// infinity), in one pass, in place or into a second buffer.

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "chute/array/dtype.h"
#include "chute/util/float16.h"

namespace chute {

/// Layout of float32 values seen as (outer, channels, inner) in C order: channels-last data
/// (batch, lat, lon, C) is (batch·lat·lon, C, 1); channels-first (batch, C, lat, lon) is
/// (batch, C, lat·lon).
struct ChannelLayout {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  int64_t elements() const { return outer * channels * inner; }
};

/// out[o, c, i] = cast((in[o, c, i] - mean[c % mean_count]) * inv_std[c % mean_count]) for
/// out_type float32, float16 or bfloat16 (throws kUnsupported otherwise). `mean`/`inv_std` may be
/// null (no normalisation); else they hold `mean_count` values, mean_count dividing channels
/// (the same statistics repeat over time offsets). `in` and `out` may be the same memory
/// (out_type float32 only: a narrower cast in place would overwrite unread input), else they
/// must not overlap.
void normalize_cast(const float* in, std::byte* out, DataType out_type, const ChannelLayout& layout,
                    const float* mean, const float* inv_std, int64_t mean_count);

}  // namespace chute
