#include "chute/util/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include "chute/util/error.h"

namespace chute {
namespace {

TEST(ThreadPool, RunsEveryIndexOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(hits.size(), [&](size_t i, size_t worker) {
    ASSERT_LT(worker, pool.size());
    hits[i]++;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, ZeroTasksReturnsAtOnce) {
  ThreadPool pool(2);
  pool.parallel_for(0, [](size_t, size_t) { FAIL(); });
}

TEST(ThreadPool, FirstErrorIsRethrownAndStopsTheRest) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  try {
    pool.parallel_for(10000, [&](size_t i, size_t) {
      ran++;
      if (i == 3) fail(ErrorCode::kCorruptData, "bad chunk {}", i);
      // Items take a little time, as chunks do: on a loaded machine the other worker must not
      // finish all 10,000 before the error has stopped the loop.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
    EXPECT_STREQ(e.what(), "bad chunk 3");
  }
  EXPECT_LT(ran.load(), 10000);
  // The pool is still usable afterwards.
  std::atomic<int> count{0};
  pool.parallel_for(50, [&](size_t, size_t) { count++; });
  EXPECT_EQ(count.load(), 50);
}

TEST(ThreadPool, ConcurrentCallersShareThePool) {
  ThreadPool pool(2);
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        pool.parallel_for(100, [&](size_t i, size_t) { total += static_cast<long>(i); });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4L * 20 * 4950);
}

TEST(ThreadPool, DefaultSizeIsTheDefaultThreadCount) {
  ThreadPool pool;
  EXPECT_EQ(pool.size(), default_thread_count());
}

// Run on a thread of its own so narrowing the affinity mask touches nothing else.
TEST(ThreadPool, DefaultThreadCountFollowsTheAffinityMask) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  const int allowed = CPU_COUNT(&all);
  EXPECT_EQ(default_thread_count(), static_cast<size_t>(allowed));
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  size_t narrowed = 0;
  std::thread probe([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) narrowed = default_thread_count();
  });
  probe.join();
  EXPECT_EQ(narrowed, 1u);
}

}  // namespace
}  // namespace chute
