// The buffers for stored bytes of reads in flight: the pool hands back the buffer that fits,
// and plans sharing a pool (a loader's batch slots) read into the same buffers again instead
// of keeping one per task each.

#include "chute/array/stored_bytes_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "chute/array/array.h"
#include "chute/array/array_test_support.h"
#include "chute/array/read_plan.h"
#include "chute/store/latency_store.h"
#include "chute/store/memory_store.h"

namespace chute {
namespace {

using namespace chute::testing;

TEST(StoredBytesPool, TakesTheSmallestThatFitsElseTheLargest) {
  StoredBytesPool pool;
  EXPECT_EQ(pool.take(100).capacity(), 0u);  // none idle: an empty buffer, counted
  EXPECT_EQ(pool.fresh(), 1u);
  ByteBuffer small(4096), medium(size_t{64} << 10), large(size_t{1} << 20);
  const std::byte* small_data = small.data();
  const std::byte* medium_data = medium.data();
  const std::byte* large_data = large.data();
  pool.give(std::move(small));
  pool.give(std::move(medium));
  pool.give(std::move(large));
  pool.give(ByteBuffer{});  // no memory: dropped
  EXPECT_EQ(pool.idle(), 3u);
  EXPECT_EQ(pool.idle_bytes(), 4096u + (64u << 10) + (1u << 20));

  ByteBuffer fits = pool.take(5000);  // the smallest that holds 5000 bytes
  EXPECT_EQ(fits.data(), medium_data);
  EXPECT_EQ(fits.size(), 0u);
  ByteBuffer unknown = pool.take();  // size unknown: the largest
  EXPECT_EQ(unknown.data(), large_data);
  ByteBuffer too_big = pool.take(size_t{8} << 20);  // none holds it: the largest left
  EXPECT_EQ(too_big.data(), small_data);
  EXPECT_EQ(pool.idle(), 0u);
  EXPECT_EQ(pool.idle_bytes(), 0u);
  EXPECT_EQ(pool.fresh(), 1u);
  EXPECT_EQ(pool.take().capacity(), 0u);
  EXPECT_EQ(pool.fresh(), 2u);
}

// The buffers outside the pool: those the workers' scratch holds (a decode swaps the stored
// bytes into it and gives back the buffer it had).
/// A float32 array of `rows` rows of 16, one chunk per row, each read 1 ms late.
Array slow_rows(int64_t rows) {
  auto memory = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({rows, 16}, {1, 16});
  write_chunks<float>(*memory, "", m);
  return Array(std::make_shared<LatencyStore>(memory, std::chrono::milliseconds(1)), "", m, "slow");
}

std::set<const std::byte*> scratch_buffers(const std::vector<ReadScratch>& scratch) {
  std::set<const std::byte*> held;
  for (const ReadScratch& s : scratch) {
    if (s.encoded.capacity() != 0) held.insert(s.encoded.data());
  }
  return held;
}

std::set<const std::byte*> drain(StoredBytesPool& pool, std::vector<ByteBuffer>& into) {
  std::set<const std::byte*> idle;
  while (pool.idle() != 0) {
    into.push_back(pool.take());
    idle.insert(into.back().data());
  }
  return idle;
}

TEST(StoredBytesPool, PlansSharingAPoolReadIntoTheSameBuffers) {
  // 24 chunks read with 8 in flight by five plans one after another, and one cancelled: every
  // read takes one of the 30 buffers given to the pool first (at most 24 + 2 are out at once:
  // a plan's reads and the two workers' scratch), and all 30 come back.
  Array array = slow_rows(24);
  auto pool = std::make_shared<StoredBytesPool>();
  std::set<const std::byte*> given;
  for (int k = 0; k < 30; ++k) {
    ByteBuffer buffer(4096);
    given.insert(buffer.data());
    pool->give(std::move(buffer));
  }
  ThreadPool workers(2);
  std::vector<ReadScratch> scratch;
  const auto expected = expected_box<float>(Coords{0, 0}, Coords{24, 16}, Coords{1, 16}, 0.f);
  for (int round = 0; round < 6; ++round) {
    std::vector<float> out(24 * 16, -1.f);
    ReadPlan plan;
    plan.set_stored_bytes_pool(pool);
    plan.add(array, Coords{0, 0}, view_of(out, {24, 16}));
    if (round == 5) {  // started, then dropped: its buffers come back too
      plan.start(&workers, scratch, nullptr, 8);
      plan.cancel();
    } else {
      plan.execute(&workers, scratch, nullptr, 8);
      ASSERT_TRUE(same_elements(expected, out)) << "round " << round;
    }
    EXPECT_EQ(pool->fresh(), 0u) << "round " << round;
    EXPECT_EQ(pool->idle() + scratch_buffers(scratch).size(), given.size()) << "round " << round;
  }
  std::vector<ByteBuffer> taken;
  std::set<const std::byte*> back = drain(*pool, taken);
  const std::set<const std::byte*> held = scratch_buffers(scratch);
  back.insert(held.begin(), held.end());
  EXPECT_EQ(back, given);
}

TEST(StoredBytesPool, APlanWithoutOneKeepsItsOwnAcrossRuns) {
  // No pool given: the plan makes one and reads into its buffers again on the next run.
  Array array = slow_rows(24);
  ThreadPool workers(2);
  std::vector<ReadScratch> scratch;
  ReadPlan plan;
  std::vector<float> out(24 * 16);
  plan.add(array, Coords{0, 0}, view_of(out, {24, 16}));
  plan.execute(&workers, scratch, nullptr, 8);
  ASSERT_NE(plan.stored_bytes_pool(), nullptr);
  const size_t fresh = plan.stored_bytes_pool()->fresh();
  EXPECT_GE(fresh, 1u);
  EXPECT_LE(fresh, 24u + 2u);
  for (int round = 0; round < 3; ++round) {
    plan.execute(&workers, scratch, nullptr, 8);
    // At most one plan's reads and the workers' scratch are out at once.
    EXPECT_LE(plan.stored_bytes_pool()->fresh(), 24u + 2u);
  }
  EXPECT_EQ(plan.stored_bytes_pool()->idle() + scratch_buffers(scratch).size(),
            plan.stored_bytes_pool()->fresh());
}

TEST(StoredBytesPool, AReadAheadHoldsAtMostFourWindowsOfChunks) {
  // Two plans of 64 chunks started together with a window of 2 (the loader's batch and the one
  // read ahead): the chunks read and not yet decoded never exceed 4 windows, so the buffers
  // made for them stay within that and the workers' scratch.
  Array array = slow_rows(64);
  auto pool = std::make_shared<StoredBytesPool>();
  auto budget = std::make_shared<ReadPlan::Budget>();
  ThreadPool workers(2);
  std::vector<ReadScratch> scratch;
  const size_t window = 2;
  const auto expected = expected_box<float>(Coords{0, 0}, Coords{64, 16}, Coords{1, 16}, 0.f);
  std::vector<float> first(64 * 16), second(64 * 16);
  ReadPlan a, b;
  a.set_stored_bytes_pool(pool);
  b.set_stored_bytes_pool(pool);
  a.add(array, Coords{0, 0}, view_of(first, {64, 16}));
  b.add(array, Coords{0, 0}, view_of(second, {64, 16}));
  a.start(&workers, scratch, nullptr, window, budget);
  b.start(&workers, scratch, nullptr, window, budget);
  a.finish(&workers, scratch, nullptr);
  b.finish(&workers, scratch, nullptr);
  EXPECT_TRUE(same_elements(expected, first));
  EXPECT_TRUE(same_elements(expected, second));
  EXPECT_EQ(a.reads_submitted() + b.reads_submitted(), 128u);
  EXPECT_GE(pool->fresh(), 1u);
  EXPECT_LE(pool->fresh(), kReadsHeldPerWindow * window + workers.size());
}

}  // namespace
}  // namespace chute
