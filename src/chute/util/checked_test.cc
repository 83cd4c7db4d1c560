#include "chute/util/checked.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "chute/array/chunk_grid.h"
#include "chute/util/missing_values.h"

namespace chute {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(Checked, ProductsReportOverflowInsteadOfWrapping) {
  const std::vector<int64_t> fits = {int64_t{1} << 31, int64_t{1} << 31};
  EXPECT_EQ(checked_product(fits), int64_t{1} << 62);
  EXPECT_EQ(checked_product(fits, 2), std::nullopt);  // 2^63
  const std::vector<int64_t> wraps_to_zero = {int64_t{1} << 32, int64_t{1} << 32};
  EXPECT_EQ(checked_product(wraps_to_zero), std::nullopt);
  const std::vector<int64_t> with_zero = {kMax, kMax, 0};
  EXPECT_EQ(checked_product(with_zero), 0);
  const std::vector<int64_t> negative = {-1, 2};
  EXPECT_EQ(checked_product(negative), std::nullopt);
  EXPECT_EQ(checked_mul(kMax, 2), std::nullopt);
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
}

TEST(Checked, GridShapeNearInt64MaxDoesNotOverflow) {
  const std::vector<int64_t> shape = {kMax, 10}, chunks = {2, 3};
  EXPECT_EQ(chunk_grid_shape(shape, chunks), (std::vector<int64_t>{kMax / 2 + 1, 4}));
  const std::vector<int64_t> huge = {int64_t{1} << 32, int64_t{1} << 32};
  EXPECT_EQ(chunk_count(huge), std::nullopt);
  const std::vector<int64_t> big = {int64_t{1} << 27, 10};
  EXPECT_EQ(chunk_count(big), int64_t{10} << 27);
}

TEST(MissingValues, MatchedBySearchAfterSortingAndDeduplicating) {
  std::vector<double> values;
  for (int i = 200'000; i-- > 0;) values.push_back(i * 2.0);
  values.push_back(std::numeric_limits<double>::quiet_NaN());
  values.push_back(4.0);
  normalize_missing(values);
  ASSERT_EQ(values.size(), 200'000u);
  EXPECT_TRUE(std::is_sorted(values.begin(), values.end()));
  EXPECT_TRUE(is_missing_value(values, 0.0));
  EXPECT_TRUE(is_missing_value(values, 399'998.0));
  EXPECT_FALSE(is_missing_value(values, 3.0));
  EXPECT_FALSE(is_missing_value(values, std::numeric_limits<double>::quiet_NaN()));
  std::vector<double> few = {5.0, -1.0};
  normalize_missing(few);
  EXPECT_TRUE(is_missing_value(few, -1.0));
  EXPECT_FALSE(is_missing_value(few, 0.0));
}

}  // namespace
}  // namespace chute
