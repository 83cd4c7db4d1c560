#include "chute/util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

TEST(ThreadPool, DefaultSizeIsHardwareConcurrency) {
  ThreadPool pool;
  EXPECT_EQ(pool.size(), default_thread_count());
}

}  // namespace
}  // namespace chute
