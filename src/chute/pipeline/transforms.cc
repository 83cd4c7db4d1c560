#include "chute/pipeline/transforms.h"

#include <bit>
#include <cmath>

#include "chute/util/error.h"

namespace chute {

namespace {

template <typename Out, typename Convert>
void run(const float* in, Out* out, const ChannelLayout& layout, const float* mean,
         const float* inv_std, int64_t mean_count, Convert convert) {
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t c = 0; c < layout.channels; ++c) {
      const float m = mean ? mean[c % mean_count] : 0.0f;
      const float s = inv_std ? inv_std[c % mean_count] : 1.0f;
      const int64_t base = (o * layout.channels + c) * layout.inner;
      for (int64_t i = 0; i < layout.inner; ++i) out[base + i] = convert((in[base + i] - m) * s);
    }
  }
}

}  // namespace

void normalize_cast(const float* in, std::byte* out, DataType out_type, const ChannelLayout& layout,
                    const float* mean, const float* inv_std, int64_t mean_count) {
  if ((mean || inv_std) && (mean_count < 1 || layout.channels % mean_count != 0)) {
    fail(ErrorCode::kInvalidArgument, "{} channel statistics do not divide {} channels", mean_count,
         layout.channels);
  }
  if (out_type == DataType{DTypeKind::kFloat, 4}) {
    if (!mean && !inv_std && reinterpret_cast<const std::byte*>(in) == out) return;
    run(in, reinterpret_cast<float*>(out), layout, mean, inv_std, mean_count,
        [](float v) { return v; });
  } else if (out_type == DataType{DTypeKind::kFloat, 2}) {
    run(in, reinterpret_cast<uint16_t*>(out), layout, mean, inv_std, mean_count, float_to_half);
  } else if (out_type == DataType{DTypeKind::kBFloat, 2}) {
    run(in, reinterpret_cast<uint16_t*>(out), layout, mean, inv_std, mean_count, float_to_bfloat16);
  } else {
    fail(ErrorCode::kUnsupported,
         "cast from float32 to {} is not supported (float32, float16, "
         "bfloat16 are)",
         out_type.name());
  }
}

}  // namespace chute
