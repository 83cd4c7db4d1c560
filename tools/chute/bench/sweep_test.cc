#include "chute/bench/sweep.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chute/util/error.h"

namespace chute::bench {
namespace {

SweepSpec parse(std::vector<std::string> arguments) { return parse_sweep(arguments); }

TEST(BenchSweep, ParsesSeparateAndCombinedAxes) {
  const SweepSpec a = parse({"threads=1,2,4", "prefetch=1,2", "batch=8,16"});
  EXPECT_EQ(a.threads, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(a.prefetch, (std::vector<int>{1, 2}));
  EXPECT_EQ(a.batch_size, (std::vector<int>{8, 16}));
  const SweepSpec b = parse({"threads=1,2,4,prefetch=1,2,batch=8,16"});
  EXPECT_EQ(b.threads, a.threads);
  EXPECT_EQ(b.prefetch, a.prefetch);
  EXPECT_EQ(b.batch_size, a.batch_size);
  const SweepSpec c = parse({"threads=2,1,2 batch_size=4"});
  EXPECT_EQ(c.threads, (std::vector<int>{2, 1}));
  EXPECT_TRUE(c.prefetch.empty());
  EXPECT_EQ(c.batch_size, (std::vector<int>{4}));
}

TEST(BenchSweep, RejectsBadInput) {
  EXPECT_THROW(parse({"threads=0"}), Error);
  EXPECT_THROW(parse({"threads=a"}), Error);
  EXPECT_THROW(parse({"cores=1,2"}), Error);
  EXPECT_THROW(parse({"1,2"}), Error);
  EXPECT_THROW(parse({"threads="}), Error);
  EXPECT_THROW(parse({"threads=1 threads=2"}), Error);
}

TEST(BenchSweep, ExpandsEveryCombinationThreadsFastest) {
  const SweepSpec spec = parse({"threads=1,2 batch=8,16"});
  const auto settings = expand(spec, LoaderSetting{4, 3, 32});
  ASSERT_EQ(settings.size(), 4u);
  EXPECT_EQ(settings[0], (LoaderSetting{1, 3, 8}));
  EXPECT_EQ(settings[1], (LoaderSetting{2, 3, 8}));
  EXPECT_EQ(settings[2], (LoaderSetting{1, 3, 16}));
  EXPECT_EQ(settings[3], (LoaderSetting{2, 3, 16}));
  EXPECT_EQ(expand(SweepSpec{}, LoaderSetting{4, 3, 32}).size(), 1u);
}

TEST(BenchSweep, SpeedupAndEfficiencyPerGroup) {
  std::vector<SweepPoint> points = {
      {{1, 2, 16}, 100}, {{2, 2, 16}, 180}, {{4, 2, 16}, 300},
      {{2, 4, 16}, 200}, {{4, 4, 16}, 360},  // no threads=1 here: base is 2 threads
  };
  const auto rows = scaling_table(points);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_DOUBLE_EQ(rows[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(rows[1].speedup, 1.8);
  EXPECT_DOUBLE_EQ(rows[1].efficiency, 0.9);
  EXPECT_DOUBLE_EQ(rows[2].speedup, 3.0);
  EXPECT_DOUBLE_EQ(rows[2].efficiency, 0.75);
  EXPECT_EQ(rows[3].base_threads, 2);
  EXPECT_DOUBLE_EQ(rows[4].speedup, 1.8);
  EXPECT_DOUBLE_EQ(rows[4].efficiency, 0.9);  // 1.8 over twice the threads of the base
}

TEST(BenchSweep, AmdahlKnownValues) {
  EXPECT_DOUBLE_EQ(amdahl_speedup(0, 8), 8);
  EXPECT_DOUBLE_EQ(amdahl_speedup(1, 8), 1);
  EXPECT_NEAR(amdahl_speedup(0.1, 4), 1 / (0.1 + 0.9 / 4), 1e-12);
}

TEST(BenchSweep, AmdahlFitRecoversSerialFraction) {
  for (double serial : {0.0, 0.05, 0.2, 0.5, 0.9}) {
    std::vector<std::pair<double, double>> data;
    for (double n : {1, 2, 4, 8}) data.emplace_back(n, amdahl_speedup(serial, n));
    const AmdahlFit fit = fit_amdahl(data);
    EXPECT_NEAR(fit.serial_fraction, serial, 1e-6) << serial;
    EXPECT_NEAR(fit.rms_residual, 0, 1e-6);
    EXPECT_NEAR(fit.predicted_speedup_16, amdahl_speedup(serial, 16), 1e-4);
    EXPECT_NEAR(fit.predicted_speedup_64, amdahl_speedup(serial, 64), 1e-4);
  }
}

TEST(BenchSweep, AmdahlFitRelativeToBaseAndNoisy) {
  const double serial = 0.25;
  std::vector<std::pair<double, double>> data;
  for (double n : {2, 4, 8})
    data.emplace_back(n, amdahl_speedup(serial, n) / amdahl_speedup(serial, 2));
  EXPECT_NEAR(fit_amdahl(data, 2).serial_fraction, serial, 1e-6);

  // Symmetric noise around the curve keeps the estimate close.
  std::vector<std::pair<double, double>> noisy = {{1, 1.0},
                                                  {2, amdahl_speedup(0.1, 2) * 1.02},
                                                  {4, amdahl_speedup(0.1, 4) * 0.98},
                                                  {8, amdahl_speedup(0.1, 8) * 1.01},
                                                  {16, amdahl_speedup(0.1, 16) * 0.99}};
  EXPECT_NEAR(fit_amdahl(noisy).serial_fraction, 0.1, 0.02);
}

TEST(BenchSweep, AmdahlFitSuperlinearGivesZeroAndBadInputThrows) {
  std::vector<std::pair<double, double>> superlinear = {{1, 1}, {2, 2.5}, {4, 5}};
  EXPECT_DOUBLE_EQ(fit_amdahl(superlinear).serial_fraction, 0);
  std::vector<std::pair<double, double>> only_base = {{1, 1}};
  EXPECT_THROW(fit_amdahl(only_base), Error);
  std::vector<std::pair<double, double>> negative = {{1, 1}, {2, -1}};
  EXPECT_THROW(fit_amdahl(negative), Error);
}

TEST(BenchSweep, AmdahlFitFromScalingRowsPicksLargestGroup) {
  std::vector<SweepPoint> points;
  for (int n : {1, 2, 4}) {
    points.push_back({{n, 2, 16}, 100 * amdahl_speedup(0.3, n)});
  }
  points.push_back({{1, 4, 16}, 100});
  auto fit = fit_amdahl(scaling_table(points));
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->serial_fraction, 0.3, 1e-6);
  EXPECT_EQ(fit->points, 3u);
  std::vector<SweepPoint> single = {{{1, 2, 16}, 100}, {{1, 4, 16}, 120}};
  EXPECT_FALSE(fit_amdahl(scaling_table(single)).has_value());
}

TEST(BenchSweep, RecommendsCheapestWithinTolerance) {
  std::vector<SweepPoint> points = {
      {{1, 2, 16}, 100}, {{2, 2, 16}, 190}, {{4, 2, 16}, 200}, {{2, 4, 16}, 192}};
  // Best is 200; 190 and 192 are within 5%; the cheapest of those is 2 threads, prefetch 2.
  EXPECT_EQ(recommend(points), 1u);
  EXPECT_EQ(recommend(points, 0.0), 2u);
  EXPECT_EQ(recommend(points, 0.6), 0u);
  EXPECT_THROW(recommend({}), Error);
}

}  // namespace
}  // namespace chute::bench
