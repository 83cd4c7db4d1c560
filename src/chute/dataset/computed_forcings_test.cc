#include "chute/dataset/computed_forcings.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace chute {
namespace {

// A run over any part of the grid gives, bit for bit, the point-by-point values: from a row's
// middle, across row ends, several whole rows, one point.
TEST(ComputedForcings, RunEqualsEveryPointOfTheGrid) {
  const std::vector<double> lats = {89.5, 60, 12.25, 0, -33.3, -90, 45};
  const std::vector<double> lons = {0, 17.5, 90, 179.75, 180, 270.5, 359, -12, 33, 300};
  const auto height = static_cast<int64_t>(lats.size());
  const auto width = static_cast<int64_t>(lons.size());
  // Before 1970, in a leap year, at a year's end and start, at midday and at midnight UTC.
  const std::vector<int64_t> times = {-86400 * 400 - 1234, 0,          951782400 + 43200,
                                      1704067199,          1704067200, 1719835200 + 3 * 3600 + 17};
  const ComputedForcing kinds[] = {ComputedForcing::kCosLocalTime, ComputedForcing::kSinLocalTime,
                                   ComputedForcing::kCosDayOfYear, ComputedForcing::kSinDayOfYear,
                                   ComputedForcing::kToa};
  const int64_t runs[][2] = {{0, 70}, {3, 4}, {7, 9}, {9, 1}, {0, 10}, {15, 31}, {69, 1}, {28, 5}};
  for (ComputedForcing kind : kinds) {
    for (int64_t seconds : times) {
      for (const auto& r : runs) {
        const int64_t p0 = r[0], n = r[1];
        ASSERT_LE(p0 + n, height * width);
        std::vector<float> out(static_cast<size_t>(n), -1.0f);
        computed_forcing_run(kind, seconds, lats, lons, p0, n, out.data());
        for (int64_t i = 0; i < n; ++i) {
          const int64_t y = (p0 + i) / width, x = (p0 + i) % width;
          const auto expected = static_cast<float>(computed_forcing(
              kind, seconds, lats[static_cast<size_t>(y)], lons[static_cast<size_t>(x)]));
          ASSERT_EQ(std::memcmp(&out[static_cast<size_t>(i)], &expected, sizeof(float)), 0)
              << "kind " << static_cast<int>(kind) << " t " << seconds << " p " << p0 + i;
        }
      }
    }
  }
}

// toa_radiation is zero on the night side and S0 · E0 · cos θ on the day side: at the
// subsolar point near the March equinox, noon UTC on the equator at longitude 0 is close to
// the solar constant, and midnight there is 0.
TEST(ComputedForcings, ToaRadiationIsTheFluxOnTheDaySideOnly) {
  const int64_t equinox_noon = 1710936000;  // 2024-03-20 12:00 UTC
  EXPECT_NEAR(computed_forcing(ComputedForcing::kToa, equinox_noon, 0, 0), 1361.0, 40.0);
  EXPECT_EQ(computed_forcing(ComputedForcing::kToa, equinox_noon, 0, 180), 0.0);
  EXPECT_EQ(computed_forcing(ComputedForcing::kToa, equinox_noon - 43200, 0, 0), 0.0);
}

}  // namespace
}  // namespace chute
