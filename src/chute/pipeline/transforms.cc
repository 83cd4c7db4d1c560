#include "chute/pipeline/transforms.h"

#include <bit>
#include <cmath>

#include "chute/util/error.h"

namespace chute {

uint16_t float_to_half(float value) {
  // After F. Giesen's float_to_half_fast3_rtne: subnormal results are rounded by the FPU (adding
  // 0.5 puts the half subnormal unit 2^-24 at the float's last mantissa bit); normal results are
  // rebiased and rounded with a +0xfff (+1 when odd) carry into bit 13.
  uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = bits & 0x80000000u;
  bits ^= sign;
  uint32_t out;
  if (bits >= (127u + 16u) << 23) {                // |value| >= 65536, inf or NaN
    out = bits > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN stays (quiet) NaN, the rest is inf
  } else if (bits < 113u << 23) {                  // below 2^-14: subnormal half or zero
    const float magic = 0.5f;
    const float sum = std::bit_cast<float>(bits) + magic;
    out = std::bit_cast<uint32_t>(sum) - std::bit_cast<uint32_t>(magic);
  } else {
    const uint32_t odd = (bits >> 13) & 1u;
    bits += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    out = bits >> 13;  // a carry into exponent 31 gives inf, as rounding should
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_bfloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

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
