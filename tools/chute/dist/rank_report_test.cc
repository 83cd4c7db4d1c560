#include "chute/dist/rank_report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "chute/util/error.h"

namespace chute::dist {
namespace {

TEST(DistRanksAxis, TakesRanksAndKeepsTheOtherAxes) {
  std::vector<std::string> args = {"ranks=1,2,4"};
  EXPECT_EQ(take_ranks_axis(args), (std::vector<int>{1, 2, 4}));
  EXPECT_TRUE(args.empty());

  args = {"threads=1,2 ranks=2,1,2", "prefetch=1"};
  EXPECT_EQ(take_ranks_axis(args), (std::vector<int>{2, 1}));
  EXPECT_EQ(args, (std::vector<std::string>{"threads=1,2", "prefetch=1"}));

  args = {"ranks=1,2,threads=4,8"};
  EXPECT_EQ(take_ranks_axis(args), (std::vector<int>{1, 2}));
  EXPECT_EQ(args, (std::vector<std::string>{"threads=4,8"}));

  args = {"threads=1,2"};
  EXPECT_TRUE(take_ranks_axis(args).empty());
  EXPECT_EQ(args, (std::vector<std::string>{"threads=1,2"}));

  for (const char* bad : {"ranks=0", "ranks=two", "ranks=1,-2", "ranks="}) {
    std::vector<std::string> b = {bad};
    EXPECT_THROW(take_ranks_axis(b), Error) << bad;
  }
}

TEST(DistRanksAxis, PerRankBatchRoundsUp) {
  EXPECT_EQ(per_rank_batch(16, 1), 16);
  EXPECT_EQ(per_rank_batch(16, 4), 4);
  EXPECT_EQ(per_rank_batch(16, 3), 6);
  EXPECT_EQ(per_rank_batch(1, 4), 1);
  EXPECT_THROW(per_rank_batch(0, 2), Error);
  EXPECT_THROW(per_rank_batch(4, 0), Error);
}

TEST(DistRankScaling, SpeedupAndEfficiencyAgainstTheFewestRanks) {
  std::vector<RankScalingRow> rows(3);
  rows[0].ranks = 4, rows[0].samples_per_s = 300;
  rows[1].ranks = 1, rows[1].samples_per_s = 100;
  rows[2].ranks = 2, rows[2].samples_per_s = 200;
  compute_rank_scaling(rows);
  EXPECT_DOUBLE_EQ(rows[0].speedup, 3);
  EXPECT_DOUBLE_EQ(rows[0].efficiency, 0.75);
  EXPECT_DOUBLE_EQ(rows[1].speedup, 1);
  EXPECT_DOUBLE_EQ(rows[2].efficiency, 1);
  const std::string table = render_rank_scaling(rows);
  EXPECT_NE(table.find("speedup"), std::string::npos);
  EXPECT_NE(table.find("75"), std::string::npos);  // 75% efficiency
  EXPECT_EQ(to_json(rows).size(), 3u);
}

TEST(DistRankReport, OneRankReportsItself) {
  LocalComm comm;
  std::vector<RankMetric> metrics = {{"samples_per_s", 42, Combine::kSum},
                                     {"startup_s", 1.5, Combine::kMax}};
  RankReport report = gather_rank_report(comm, metrics);
  ASSERT_EQ(report.metrics.size(), 2u);
  EXPECT_EQ(report.world_size, 1);
  EXPECT_EQ(report.find("samples_per_s")->aggregate, 42);
  EXPECT_EQ(report.find("samples_per_s")->spread(), 1);
  EXPECT_EQ(report.find("missing"), nullptr);
  EXPECT_EQ(rank_report_from_json(report.to_json()).to_json(), report.to_json());

  MetricAcrossRanks zero_min{"x", Combine::kSum, {0, 2}, 2, 0, 2};
  EXPECT_TRUE(std::isnan(zero_min.spread()));
  EXPECT_TRUE(report.to_json()["metrics"]["startup_s"]["spread"].is_number());
}

TEST(DistRankSweep, OneProcessSweepsOneRankAndRejectsMore) {
  LocalComm comm;
  std::vector<int> one = {1};
  auto measure = [](Comm&) {
    return std::vector<RankMetric>{{std::string(kSamplesPerS), 5, Combine::kSum},
                                   {std::string(kSecondsPerBatch), 0.2, Combine::kMax},
                                   {std::string(kStartupSeconds), 0.1, Combine::kMax}};
  };
  std::vector<RankScalingRow> rows = run_rank_sweep(comm, one, measure);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].samples_per_s, 5);
  EXPECT_EQ(rows[0].global_batch_s, 0.2);
  std::vector<int> two = {1, 2};
  try {
    run_rank_sweep(comm, two, measure);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("mpirun -np 2"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace chute::dist
