// float16 / bfloat16 conversion (round to nearest even, checked at every midpoint of adjacent
// representable values) and per-channel normalisation in both layouts.

#include "chute/pipeline/transforms.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "chute/util/error.h"

namespace chute {
namespace {

TEST(Transforms, HalfKnownValues) {
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // the midpoint to 65536 rounds to even: inf
  EXPECT_EQ(float_to_half(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);                 // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);                 // tie: to even (zero)
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);                 // tie: to even
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);                 // smallest normal
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);          // tie: to even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);          // tie: to even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11) + 1e-7f), 0x3c01);  // above the tie
  const uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(Transforms, HalfRoundTripsAndRoundsMidpointsToEven) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite non-negative half
    const float f = half_to_float(static_cast<uint16_t>(h));
    ASSERT_EQ(float_to_half(f), h) << h;
    ASSERT_EQ(float_to_half(-f), h | 0x8000) << h;
    if (h + 1 < 0x7c00) {
      const float next = half_to_float(static_cast<uint16_t>(h + 1));
      const float mid = (f + next) / 2;  // exact: halves have 11 significant bits
      const uint32_t even = (h % 2 == 0) ? h : h + 1;
      ASSERT_EQ(float_to_half(mid), even) << h;
      ASSERT_EQ(float_to_half(std::nextafter(mid, 0.0f)), h) << h;
      ASSERT_EQ(float_to_half(std::nextafter(mid, std::numeric_limits<float>::infinity())), h + 1)
          << h;
    }
  }
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
}

TEST(Transforms, BFloat16RoundTripsAndRoundsMidpointsToEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  const uint16_t nan = float_to_bfloat16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bfloat16_to_float(nan)));
  // A signalling NaN whose payload sits in the low bits must not become infinity.
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::bit_cast<float>(0x7f800001u)))));
  for (uint32_t b = 0; b < 0x7f80; b += 7) {
    const float f = bfloat16_to_float(static_cast<uint16_t>(b));
    ASSERT_EQ(float_to_bfloat16(f), b);
    const float next = bfloat16_to_float(static_cast<uint16_t>(b + 1));
    const float mid = std::bit_cast<float>((static_cast<uint32_t>(b) << 16) | 0x8000u);
    ASSERT_GT(mid, f);
    ASSERT_LT(mid, next);
    ASSERT_EQ(float_to_bfloat16(mid), (b % 2 == 0) ? b : b + 1) << b;
    ASSERT_EQ(float_to_bfloat16(std::nextafter(mid, 0.0f)), b) << b;
    ASSERT_EQ(float_to_bfloat16(std::nextafter(mid, std::numeric_limits<float>::infinity())), b + 1)
        << b;
  }
}

TEST(Transforms, NormalizeChannelsLastAndFirst) {
  // 2 pixels x 4 channels, statistics for 2 channels repeated over 2 time offsets.
  const std::vector<float> mean = {1.0f, 10.0f}, inv_std = {0.5f, 0.25f};
  std::vector<float> last = {3, 14, 5, 18, 1, 10, 7, 30};
  normalize_cast(last.data(), reinterpret_cast<std::byte*>(last.data()), {DTypeKind::kFloat, 4},
                 ChannelLayout{2, 4, 1}, mean.data(), inv_std.data(), 2);
  EXPECT_EQ(last, (std::vector<float>{1, 1, 2, 2, 0, 0, 3, 5}));

  // Channels-first (1, 4 channels, 2 pixels).
  std::vector<float> first = {3, 1, 14, 10, 5, 7, 18, 30};
  std::vector<uint16_t> half(8);
  normalize_cast(first.data(), reinterpret_cast<std::byte*>(half.data()), {DTypeKind::kFloat, 2},
                 ChannelLayout{1, 4, 2}, mean.data(), inv_std.data(), 2);
  std::vector<float> back;
  for (uint16_t h : half) back.push_back(half_to_float(h));
  EXPECT_EQ(back, (std::vector<float>{1, 0, 1, 0, 2, 3, 2, 5}));

  std::vector<uint16_t> bf(8);
  normalize_cast(first.data(), reinterpret_cast<std::byte*>(bf.data()), {DTypeKind::kBFloat, 2},
                 ChannelLayout{1, 4, 2}, nullptr, nullptr, 0);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(bfloat16_to_float(bf[i]), first[i]);

  EXPECT_THROW(normalize_cast(first.data(), reinterpret_cast<std::byte*>(bf.data()),
                              {DTypeKind::kInt, 4}, ChannelLayout{1, 4, 2}, nullptr, nullptr, 0),
               Error);
  EXPECT_THROW(
      normalize_cast(first.data(), reinterpret_cast<std::byte*>(bf.data()), {DTypeKind::kFloat, 2},
                     ChannelLayout{1, 4, 2}, mean.data(), inv_std.data(), 3),
      Error);
}

}  // namespace
}  // namespace chute
