// main() of chute_mpi_tests: initialises MPI through an MpiComm, runs the tests on every rank
// and prints full output on rank 0 only; other ranks print just their failures, prefixed with
// their rank. A failure on any rank makes that rank exit 1, so mpirun fails.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "chute/dist/mpi_test_support.h"

namespace chute::dist::testing {
namespace {

std::unique_ptr<MpiComm> g_world;

class FailuresOnly : public ::testing::EmptyTestEventListener {
 public:
  explicit FailuresOnly(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
};

}  // namespace

MpiComm& world() { return *g_world; }

}  // namespace chute::dist::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using chute::dist::testing::g_world;
  g_world = std::make_unique<chute::dist::MpiComm>();
  if (g_world->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new chute::dist::testing::FailuresOnly(g_world->rank()));
  }
  const int result = RUN_ALL_TESTS();
  // Every rank learns whether any rank failed, so a failure on rank 2 also fails rank 0's exit.
  const int64_t failed = g_world->allreduce_i64(result != 0 ? 1 : 0, chute::dist::ReduceOp::kMax);
  g_world.reset();  // finalises MPI (we initialised it)
  return failed ? 1 : 0;
}
