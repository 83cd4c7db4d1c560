// The MPI communicator's collectives, sub-communicators, agreement on failure and the rank report.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "chute/dist/all_ranks.h"
#include "chute/dist/env.h"
#include "chute/dist/mpi_test_support.h"
#include "chute/dist/rank_report.h"
#include "chute/util/error.h"

namespace chute::dist {
namespace {

using testing::world;

TEST(MpiComm, RankAndSizeMatchTheLauncherEnvironment) {
  RankInfo env = detect_rank_from_env();
  EXPECT_EQ(world().rank(), env.rank);
  EXPECT_EQ(world().size(), env.world_size);
  EXPECT_GE(world().size(), 2) << "run under mpirun -np 2 or more";
  EXPECT_EQ(world().backend(), "mpi");
}

TEST(MpiComm, MakeCommChoosesMpiUnderALauncher) {
  EXPECT_TRUE(mpi_backend_available());
  EXPECT_TRUE(launched_by_mpi());
  std::unique_ptr<Comm> comm = make_comm();
  EXPECT_EQ(comm->backend(), "mpi");
  EXPECT_EQ(comm->rank(), world().rank());
  EXPECT_EQ(comm->size(), world().size());
  comm->barrier();
}

TEST(MpiComm, Reductions) {
  const int r = world().rank();
  const int n = world().size();
  EXPECT_EQ(world().allreduce_i64(r + 1, ReduceOp::kSum), int64_t{n} * (n + 1) / 2);
  EXPECT_EQ(world().allreduce_i64(r, ReduceOp::kMax), n - 1);
  EXPECT_EQ(world().allreduce_i64(r - 5, ReduceOp::kMin), -5);
  EXPECT_EQ(world().allreduce_i64(int64_t{1} << 40, ReduceOp::kSum), (int64_t{1} << 40) * n);
  EXPECT_DOUBLE_EQ(world().allreduce_f64(0.5 * r, ReduceOp::kSum), 0.25 * n * (n - 1));
  EXPECT_DOUBLE_EQ(world().allreduce_f64(1.5 * r, ReduceOp::kMax), 1.5 * (n - 1));
  EXPECT_DOUBLE_EQ(world().allreduce_f64(-1.0 * r, ReduceOp::kMin), -1.0 * (n - 1));
}

TEST(MpiComm, Gathers) {
  const int r = world().rank();
  const int n = world().size();
  std::vector<int64_t> ints = world().allgather_i64(100 + r);
  std::vector<double> reals = world().allgather_f64(0.25 * r);
  ASSERT_EQ(ints.size(), static_cast<size_t>(n));
  ASSERT_EQ(reals.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(ints[i], 100 + i);
    EXPECT_EQ(reals[i], 0.25 * i);
  }
  // Byte strings of different lengths, with a zero byte, and an empty one on rank 1.
  std::string mine =
      r == 1 ? std::string() : std::string(static_cast<size_t>(r) * 1000 + 3, 'a' + r);
  if (!mine.empty()) mine[0] = '\0';
  std::vector<std::string> all = world().gather_to_root(mine);
  if (r == 0) {
    ASSERT_EQ(all.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      std::string expected =
          i == 1 ? std::string() : std::string(static_cast<size_t>(i) * 1000 + 3, 'a' + i);
      if (!expected.empty()) expected[0] = '\0';
      EXPECT_EQ(all[i], expected) << "from rank " << i;
    }
  } else {
    EXPECT_TRUE(all.empty());
  }
}

TEST(MpiComm, BroadcastFromRoot) {
  const int r = world().rank();
  std::string sent =
      r == 0 ? std::string(100000, 'x') + "end" : "ignored on rank " + std::to_string(r);
  EXPECT_EQ(world().broadcast_from_root(sent), std::string(100000, 'x') + "end");
  EXPECT_EQ(world().broadcast_from_root(r == 0 ? "" : "not empty"), "");
}

TEST(MpiComm, FirstRanksMakesASubCommunicator) {
  const int r = world().rank();
  for (int k = 1; k <= world().size(); ++k) {
    std::unique_ptr<Comm> sub = world().first_ranks(k);
    EXPECT_EQ(sub != nullptr, r < k);
    if (sub) {
      EXPECT_EQ(sub->rank(), r);
      EXPECT_EQ(sub->size(), k);
      EXPECT_EQ(sub->allreduce_i64(1, ReduceOp::kSum), k);
    }
    world().barrier();
  }
  EXPECT_THROW(world().first_ranks(0), Error);
  EXPECT_THROW(world().first_ranks(world().size() + 1), Error);
}

TEST(MpiAllRanks, AFailureOnOneRankReachesEveryRank) {
  const int n = world().size();
  const int failing = n - 1;
  try {
    run_on_all_ranks(world(), "opening data", [&] {
      if (world().rank() == failing) fail(ErrorCode::kNotFound, "no array at /missing");
    });
    ADD_FAILURE() << "expected every rank to throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kNotFound);
    EXPECT_EQ(std::string(error.what()), "opening data failed on rank " + std::to_string(failing) +
                                             " of " + std::to_string(n) + ": no array at /missing");
  }
  // Several ranks failing: the lowest one is named, the others counted.
  try {
    run_on_all_ranks(world(), "step", [&] {
      if (world().rank() >= 1) throw std::runtime_error("rank " + std::to_string(world().rank()));
    });
    ADD_FAILURE() << "expected every rank to throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInternal);
    std::string expected = "step failed on rank 1 of " + std::to_string(n);
    if (n > 2) expected += " (and on " + std::to_string(n - 2) + " other rank(s))";
    EXPECT_EQ(std::string(error.what()), expected + ": rank 1");
  }
  int calls = 0;
  run_on_all_ranks(world(), "nothing", [&] { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(MpiRankReport, AggregateIsTheSumOfTheRanksAndSpreadIsMaxOverMin) {
  const int r = world().rank();
  const int n = world().size();
  std::vector<RankMetric> mine = {{"samples_per_s", 100.0 + 10 * r, Combine::kSum},
                                  {"startup_s", 1.0 + r, Combine::kMax},
                                  {"s_per_batch", 0.5 / (r + 1), Combine::kMax},
                                  {"cpu", 2.0 * r, Combine::kMean}};
  RankReport report = gather_rank_report(world(), mine);
  EXPECT_EQ(report.world_size, n);
  const MetricAcrossRanks* rate = report.find("samples_per_s");
  ASSERT_NE(rate, nullptr);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(rate->per_rank[i], 100.0 + 10 * i);
    sum += rate->per_rank[i];
  }
  EXPECT_DOUBLE_EQ(rate->aggregate, sum);
  EXPECT_DOUBLE_EQ(rate->spread(), (100.0 + 10 * (n - 1)) / 100.0);
  EXPECT_DOUBLE_EQ(report.find("startup_s")->aggregate, static_cast<double>(n));
  EXPECT_DOUBLE_EQ(report.find("s_per_batch")->aggregate, 0.5);
  EXPECT_DOUBLE_EQ(report.find("cpu")->aggregate, static_cast<double>(n - 1));
  // JSON round trip keeps everything.
  RankReport back = rank_report_from_json(report.to_json());
  EXPECT_EQ(back.to_json(), report.to_json());
  std::string table = report.render("per rank");
  EXPECT_NE(table.find("spread"), std::string::npos);
  EXPECT_NE(table.find("all"), std::string::npos);
}

TEST(MpiRankReport, DifferentMetricListsFailOnEveryRank) {
  std::vector<RankMetric> mine = {{"a", 1, Combine::kSum}};
  if (world().rank() == 1) mine.push_back({"b", 2, Combine::kSum});
  EXPECT_THROW(gather_rank_report(world(), mine), Error);
}

TEST(MpiRankSweep, RunsOnTheFirstKRanksAndComputesScaling) {
  const int n = world().size();
  std::vector<int> counts;
  for (int k = 1; k <= n; ++k) counts.push_back(k);
  std::vector<int> sizes_seen;
  std::vector<RankScalingRow> rows = run_rank_sweep(world(), counts, [&](Comm& sub) {
    EXPECT_LT(world().rank(), sub.size());
    sizes_seen.push_back(sub.size());
    // Each rank reads 10 samples/s; a global batch takes 1 s divided by the rank count.
    return std::vector<RankMetric>{
        {std::string(kSamplesPerS), 10.0, Combine::kSum},
        {std::string(kSecondsPerBatch), 1.0 / sub.size(), Combine::kMax},
        {std::string(kStartupSeconds), 0.1 * (sub.rank() + 1), Combine::kMax}};
  });
  ASSERT_EQ(rows.size(), counts.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const int k = counts[i];
    EXPECT_EQ(rows[i].ranks, k);
    EXPECT_DOUBLE_EQ(rows[i].samples_per_s, 10.0 * k);
    EXPECT_DOUBLE_EQ(rows[i].global_batch_s, 1.0 / k);
    EXPECT_DOUBLE_EQ(rows[i].startup_s, 0.1 * k);
    EXPECT_DOUBLE_EQ(rows[i].speedup, k);
    EXPECT_DOUBLE_EQ(rows[i].efficiency, 1.0);
    EXPECT_EQ(rows[i].report.world_size, k);
  }
  // Rank r took part in the steps with k > r.
  std::vector<int> expected;
  for (int k : counts) {
    if (world().rank() < k) expected.push_back(k);
  }
  EXPECT_EQ(sizes_seen, expected);
  const std::string table = render_rank_scaling(rows);
  EXPECT_NE(table.find("efficiency"), std::string::npos);
}

TEST(MpiRankSweep, AnErrorInOneStepReachesTheRanksThatWaited) {
  const int n = world().size();
  std::vector<int> counts = {1};  // only rank 0 measures; the others wait and must learn the error
  try {
    run_rank_sweep(world(), counts, [&](Comm& sub) -> std::vector<RankMetric> {
      if (sub.rank() == 0) fail(ErrorCode::kIoError, "disk gone");
      return {};
    });
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kIoError);
    EXPECT_NE(std::string(error.what()).find("disk gone"), std::string::npos);
  }
  // Too many ranks asked for: the same error on every rank, before any collective.
  std::vector<int> too_many = {n + 1};
  EXPECT_THROW(run_rank_sweep(world(), too_many, [](Comm&) { return std::vector<RankMetric>{}; }),
               Error);
}

}  // namespace
}  // namespace chute::dist
