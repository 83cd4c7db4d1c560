// The kernels of the windows' placement pass: the SIMD channel interleave against a plain loop,
// and decode_run's vectorised path (at most one missing value) against the CF formula computed
// here element by element, for every stored type, stride, block boundary and missing value kind.

#include "chute/dataset/channel_interleave.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "chute/dataset/cf_decoding.h"
#include "chute/pipeline/transforms.h"

namespace chute {
namespace {

template <typename T>
void check_interleave(int64_t group, int64_t n, int64_t channels, int64_t stride) {
  std::vector<T> tile(static_cast<size_t>(detail::kInterleaveGroup * stride));
  for (size_t i = 0; i < tile.size(); ++i) tile[i] = static_cast<T>(i * 2654435761u + 7);
  std::vector<T> out(static_cast<size_t>(n * channels + 1), T{0});
  std::vector<T> want = out;
  detail::interleave_rows(reinterpret_cast<const std::byte*>(tile.data()), stride, group, n,
                          reinterpret_cast<std::byte*>(out.data() + 1), channels, sizeof(T));
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t j = 0; j < group; ++j) want[1 + p * channels + j] = tile[j * stride + p];
  }
  EXPECT_EQ(out, want) << "group " << group << " n " << n << " channels " << channels;
}

TEST(PlacementKernels, InterleaveEqualsThePlainLoop) {
  for (int64_t group : {1, 3, 7, 8}) {
    for (int64_t n : {0, 1, 7, 8, 9, 31, 100}) {
      for (int64_t channels : {group, group + 5, int64_t{111}}) {
        check_interleave<uint16_t>(group, n, channels, n + 3);
        check_interleave<uint32_t>(group, n, channels, n + 1);
      }
    }
  }
}

TEST(PlacementKernels, InterleaveKeepsSignallingNaNBits) {
  const uint32_t snan = 0x7f800001u;
  std::vector<uint32_t> tile(8 * 4, snan);
  std::vector<uint32_t> out(4 * 8, 0);
  detail::interleave_rows(reinterpret_cast<const std::byte*>(tile.data()), 4, 8, 4,
                          reinterpret_cast<std::byte*>(out.data()), 8, 4);
  for (uint32_t v : out) EXPECT_EQ(v, snan);
}

/// decode(x) as the header states it: NaN for a missing value, else x × scale + offset in double
/// rounded once to float; then a NaN replacement, normalisation in float, the cast.
template <typename In>
float reference(In raw, const detail::ChannelDecode& d) {
  const double wide = static_cast<double>(raw);
  bool missing = false;
  for (double m : d.cf.missing) missing = missing || wide == m;
  float value = missing ? std::numeric_limits<float>::quiet_NaN()
                        : static_cast<float>(wide * d.cf.scale + d.cf.offset);
  if (d.replace_nan && std::isnan(value)) value = d.nan_value;
  return (value - d.mean) * d.inv_std;
}

template <typename In>
void check_decode(const std::vector<In>& raw, detail::ChannelDecode d) {
  d.stored = DataType{std::is_floating_point_v<In> ? DTypeKind::kFloat
                      : std::is_signed_v<In>       ? DTypeKind::kInt
                                                   : DTypeKind::kUInt,
                      sizeof(In)};
  const auto n = static_cast<int64_t>(raw.size());
  for (int64_t stride : {1, 3}) {
    std::vector<float> out(static_cast<size_t>(n * stride), -7.0f);
    detail::decode_run(reinterpret_cast<const std::byte*>(raw.data()), n, d,
                       reinterpret_cast<std::byte*>(out.data()), stride,
                       DataType{DTypeKind::kFloat, 4});
    std::vector<uint16_t> bf(static_cast<size_t>(n));
    detail::decode_run(reinterpret_cast<const std::byte*>(raw.data()), n, d,
                       reinterpret_cast<std::byte*>(bf.data()), 1, DataType{DTypeKind::kBFloat, 2});
    for (int64_t i = 0; i < n; ++i) {
      const float want = reference(raw[static_cast<size_t>(i)], d);
      const float got = out[static_cast<size_t>(i * stride)];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << i;
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << i;
      }
      EXPECT_EQ(bf[static_cast<size_t>(i)], float_to_bfloat16(want)) << i;
      if (stride > 1 && i + 1 < n) {
        EXPECT_EQ(out[static_cast<size_t>(i * stride + 1)], -7.0f);
      }
    }
  }
}

template <typename In>
std::vector<In> values(int64_t n, In missing) {
  std::vector<In> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] = i % 37 == 5 ? missing : static_cast<In>((i * 7919) % 2001 - 1000);
  }
  return v;
}

TEST(PlacementKernels, DecodeRunEqualsTheFormulaForEveryKindOfMissingValue) {
  detail::ChannelDecode d;
  d.cf.scale = 0.01, d.cf.offset = 250, d.cf.scaled = true;
  d.mean = 251.5f, d.inv_std = 1.0f / 3.0f;
  for (int64_t n : {0, 1, 255, 256, 257, 700}) {  // around the 256-value blocks
    // int16 packed with its fill value, compared in the stored type
    d.cf.missing = {-32767};
    check_decode(values<int16_t>(n, -32767), d);
    // a fractional or out-of-range missing value matches no integer
    d.cf.missing = {0.5};
    check_decode(values<int16_t>(n, 0), d);
    d.cf.missing = {1e6};
    check_decode(values<int16_t>(n, -1), d);
    // float32 with a representable and an unrepresentable fill value
    d.cf.missing = {-9999.0};
    check_decode(values<float>(n, -9999.0f), d);
    d.cf.missing = {0.1};
    check_decode(values<float>(n, 0.1f), d);
    // uint8, float64, int64 (beyond 2^53 the comparison stays in double)
    d.cf.missing = {255};
    check_decode(values<uint8_t>(n, 255), d);
    d.cf.missing = {-1000};
    check_decode(values<double>(n, -1000.0), d);
    const int64_t big = (int64_t{1} << 60) + 1;
    d.cf.missing = {static_cast<double>(big)};
    check_decode(values<int64_t>(n, big), d);
    check_decode(values<int64_t>(n, big - 1), d);
    // no missing value; a NaN replaced before normalisation
    d.cf.missing.clear();
    check_decode(values<int32_t>(n, 3), d);
    d.cf.missing = {-32767};
    d.replace_nan = true, d.nan_value = 2.5f;
    check_decode(values<int16_t>(n, -32767), d);
    d.replace_nan = false;
  }
}

}  // namespace
}  // namespace chute
