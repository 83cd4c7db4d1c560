#include "chute/bench/stats.h"

#include <gtest/gtest.h>

#include <vector>

#include "chute/util/error.h"

namespace chute::bench {
namespace {

TEST(BenchStats, SummaryOfKnownValues) {
  const std::vector<double> values = {4, 1, 3, 2, 5};
  const Summary s = summarize(values);
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(2.5));  // sample std: sum of squares 10 over n-1 = 4
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.p50, 3.0);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);  // NumPy: percentile([1..5], 90) == 4.6
  EXPECT_DOUBLE_EQ(s.p99, 4.96);
}

TEST(BenchStats, PercentileInterpolatesLikeNumpy) {
  const std::vector<double> values = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(percentile(values, 0), 10);
  EXPECT_DOUBLE_EQ(percentile(values, 100), 40);
  EXPECT_DOUBLE_EQ(percentile(values, 50), 25);
  EXPECT_DOUBLE_EQ(percentile(values, 25), 17.5);
}

TEST(BenchStats, SingleValueHasZeroSpread) {
  const std::vector<double> values = {7.5};
  const Summary s = summarize(values);
  EXPECT_DOUBLE_EQ(s.mean, 7.5);
  EXPECT_DOUBLE_EQ(s.std, 0);
  EXPECT_DOUBLE_EQ(s.p99, 7.5);
}

TEST(BenchStats, EmptyInput) {
  EXPECT_EQ(summarize({}).count, 0u);
  EXPECT_THROW(percentile({}, 50), Error);
}

TEST(BenchStats, JsonHasAllFields) {
  const std::vector<double> values = {1, 2};
  const auto json = to_json(summarize(values));
  for (const char* key : {"mean", "std", "min", "max", "p50", "p90", "p99", "count"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(json["mean"].get<double>(), 1.5);
}

}  // namespace
}  // namespace chute::bench
