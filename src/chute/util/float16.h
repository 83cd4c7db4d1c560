#pragma once
// Scalar casts between float32 and the 16-bit floats (IEEE binary16, bfloat16), used by every
// layer that converts elements: the array layer's converting reads and the pipeline's casts.

#include <bit>
#include <cmath>
#include <cstdint>

namespace chute {

/// IEEE 754 binary16 from float32, round to nearest even. Inline: the per-element casts of
/// the placement passes call it in their inner loops.
inline uint16_t float_to_half(float value) {
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

inline float half_to_float(uint16_t bits) {
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

/// bfloat16 (the top 16 bits of a float32) from float32, round to nearest even.
/// Branch-free, so that loops over it vectorise.
inline uint16_t float_to_bfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t quiet_nan = (bits >> 16) | 0x40u;
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace chute
