#include "chute/dist/comm.h"

#include <gtest/gtest.h>

#include "chute/dist/all_ranks.h"
#include "chute/util/error.h"

namespace chute::dist {
namespace {

TEST(DistLocalComm, CollectivesReturnTheirInput) {
  LocalComm comm;
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.backend(), "local");
  comm.barrier();
  EXPECT_EQ(comm.allreduce_i64(-7, ReduceOp::kSum), -7);
  EXPECT_EQ(comm.allreduce_f64(2.5, ReduceOp::kMax), 2.5);
  EXPECT_EQ(comm.allgather_i64(9), std::vector<int64_t>{9});
  EXPECT_EQ(comm.allgather_f64(1.5), std::vector<double>{1.5});
  EXPECT_EQ(comm.broadcast_from_root("abc"), "abc");
  EXPECT_EQ(comm.gather_to_root(std::string("x\0y", 3)),
            std::vector<std::string>{std::string("x\0y", 3)});
  EXPECT_NE(comm.first_ranks(1), nullptr);
  EXPECT_THROW(comm.first_ranks(2), Error);
}

TEST(DistLocalComm, AbortAllExitsWithTheCodeAndMessage) {
  EXPECT_EXIT(LocalComm().abort_all(3, "cannot open data"), ::testing::ExitedWithCode(3),
              "chute: rank 0/1: cannot open data");
}

TEST(DistMakeComm, WithoutMpiItIsLocal) {
  // chute_tests does not link chute_mpi, so no MPI factory is registered.
  EXPECT_FALSE(mpi_backend_available());
  std::unique_ptr<Comm> comm = make_comm();
  EXPECT_EQ(comm->backend(), "local");
  EXPECT_EQ(comm->size(), 1);
}

TEST(DistAllRanks, SuccessReturnsAndRunsTheStepOnce) {
  LocalComm comm;
  int calls = 0;
  run_on_all_ranks(comm, "opening data", [&] { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(DistAllRanks, FailureKeepsTheCodeAndNamesTheRank) {
  LocalComm comm;
  try {
    run_on_all_ranks(comm, "opening data",
                     [] { fail(ErrorCode::kNotFound, "no array at /missing"); });
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kNotFound);
    EXPECT_STREQ(error.what(), "opening data failed on rank 0 of 1: no array at /missing");
  }
  try {
    run_on_all_ranks(comm, "step", [] { throw std::runtime_error("boom"); });
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInternal);
    EXPECT_STREQ(error.what(), "step failed on rank 0 of 1: boom");
  }
}

}  // namespace
}  // namespace chute::dist
