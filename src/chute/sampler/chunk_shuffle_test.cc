// The chunk-aware shuffle: every sample once, deterministic, grouped by chunk, resumable and
// sharded by rank exactly as the plain shuffle.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "chute/sampler/sampler.h"
#include "chute/util/error.h"

namespace chute {
namespace {

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

TEST(ChunkShuffle, CoversEverySampleOnce) {
  for (int64_t n : {0, 1, 7, 64, 101}) {
    for (int64_t block : {1, 3, 8, 200}) {
      for (int64_t window : {1, 2, 5}) {
        std::vector<int64_t> order;
        chunk_aware_permutation(n, {block, window}, 9, 2, order);
        EXPECT_EQ(sorted(order), iota(n)) << n << " " << block << " " << window;
      }
    }
  }
}

TEST(ChunkShuffle, DeterministicAndDifferentPerEpochAndSeed) {
  std::vector<int64_t> a, b, c, d;
  chunk_aware_permutation(100, {8, 2}, 5, 3, a);
  chunk_aware_permutation(100, {8, 2}, 5, 3, b);
  chunk_aware_permutation(100, {8, 2}, 5, 4, c);
  chunk_aware_permutation(100, {8, 2}, 6, 3, d);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(ChunkShuffle, EachWindowDrawsFromItsGroupsOnly) {
  const int64_t n = 96, block = 8, window = 3;
  std::vector<int64_t> order;
  chunk_aware_permutation(n, {block, window}, 1, 0, order);
  // Positions [k·block·window, (k+1)·block·window) hold the samples of `window` whole groups.
  for (int64_t start = 0; start < n; start += block * window) {
    std::set<int64_t> groups;
    for (int64_t p = start; p < std::min(n, start + block * window); ++p) {
      groups.insert(order[static_cast<size_t>(p)] / block);
    }
    EXPECT_EQ(groups.size(), static_cast<size_t>(window));
  }
  // window 1: each group's samples come together, and not in their stored order every time.
  chunk_aware_permutation(n, {block, 1}, 1, 0, order);
  bool shuffled_inside = false;
  for (int64_t g = 0; g < n / block; ++g) {
    const auto first = order.begin() + g * block;
    std::vector<int64_t> run(first, first + block);
    EXPECT_EQ(run.back() / block, run.front() / block);
    shuffled_inside = shuffled_inside || !std::is_sorted(run.begin(), run.end());
  }
  EXPECT_TRUE(shuffled_inside);
}

TEST(ChunkShuffle, SamplerShardsRanksAndResumes) {
  const int64_t n = 120, batch = 5, world = 3;
  std::vector<int64_t> all;
  for (int64_t rank = 0; rank < world; ++rank) {
    Sampler sampler(n, batch, true, 11, false, rank, world);
    sampler.set_chunk_shuffle({8, 2});
    for (int64_t b = 0; b < sampler.batches_per_epoch(); ++b) {
      auto indices = sampler.batch(1, b);
      all.insert(all.end(), indices.begin(), indices.end());
    }
  }
  EXPECT_EQ(sorted(all), iota(n));  // disjoint shares covering the epoch

  Sampler first(n, batch, true, 11, false, 1, world);
  first.set_chunk_shuffle({8, 2});
  std::vector<int64_t> out;
  first.begin_epoch(2);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(first.next(out));
  const SamplerState saved = first.state();
  std::vector<std::vector<int64_t>> rest;
  while (first.next(out)) rest.push_back(out);

  Sampler resumed(n, batch, true, 11, false, 1, world);
  resumed.set_chunk_shuffle({8, 2});
  resumed.restore(saved);
  std::vector<std::vector<int64_t>> again;
  while (resumed.next(out)) again.push_back(out);
  EXPECT_EQ(again, rest);
  // The whole epoch order is the chunk-aware permutation.
  std::vector<int64_t> expected;
  chunk_aware_permutation(n, {8, 2}, 11, 2, expected);
  EXPECT_EQ(resumed.permutation(2), expected);
}

TEST(ChunkShuffle, RejectsBadSettings) {
  std::vector<int64_t> out;
  EXPECT_THROW(chunk_aware_permutation(10, {0, 1}, 0, 0, out), Error);
  EXPECT_THROW(chunk_aware_permutation(10, {2, 0}, 0, 0, out), Error);
  Sampler sampler(10, 2, true, 0, false);
  EXPECT_THROW(sampler.set_chunk_shuffle({-1, 1}), Error);
  EXPECT_THROW(sampler.set_chunk_shuffle({2, 0}), Error);
}

}  // namespace
}  // namespace chute
