// Sampler properties: each sample once per epoch, rank shards disjoint and covering, padding
// rule, determinism across instances, resume from saved state, and a pinned PRNG.

#include "chute/sampler/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "chute/util/error.h"

namespace chute {
namespace {

TEST(Sampler, SplitMix64MatchesReferenceSequence) {
  // First outputs of splitmix64 seeded with 0 (the published reference implementation).
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(rng.next(), 0x06c45d188009454fULL);
}

TEST(Sampler, BoundedDrawIsInRangeAndEven) {
  SplitMix64 rng(42);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) {
    uint64_t v = rng.below(6);
    ASSERT_LT(v, 6u);
    ++counts[v];
  }
  for (int c : counts) {
    EXPECT_GT(c, 9500);
    EXPECT_LT(c, 10500);
  }
  EXPECT_EQ(rng.below(1), 0u);
}

TEST(Sampler, PermutationIsPermutationAndPinned) {
  std::vector<int64_t> p;
  epoch_permutation(1000, 7, 3, p);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  // Same inputs, same permutation; other epoch or seed, another one.
  std::vector<int64_t> again, other_epoch, other_seed;
  epoch_permutation(1000, 7, 3, again);
  epoch_permutation(1000, 7, 4, other_epoch);
  epoch_permutation(1000, 8, 3, other_seed);
  EXPECT_EQ(p, again);
  EXPECT_NE(p, other_epoch);
  EXPECT_NE(p, other_seed);
  // Pinned so that a change of the generator (which would change every user's order) is seen.
  std::vector<int64_t> small;
  epoch_permutation(10, 0, 0, small);
  EXPECT_EQ(small, (std::vector<int64_t>{4, 7, 0, 5, 9, 3, 6, 2, 8, 1}));
}

TEST(Sampler, EachSampleOncePerEpochWithoutDropLast) {
  for (int64_t n : {1, 5, 16, 17, 100}) {
    for (int64_t b : {1, 4, 16, 33}) {
      Sampler sampler(n, b, true, 11, false);
      std::map<int64_t, int> seen;
      int64_t padding = 0;
      for (int64_t k = 0; k < sampler.batches_per_epoch(); ++k) {
        auto batch = sampler.batch(2, k);
        ASSERT_EQ(static_cast<int64_t>(batch.size()), b);
        const int64_t pad = sampler.batch_padding(k);
        padding += pad;
        for (int64_t i = 0; i < b - pad; ++i) ++seen[batch[i]];
      }
      ASSERT_EQ(static_cast<int64_t>(seen.size()), n) << "n " << n << " b " << b;
      for (auto [sample, count] : seen) {
        ASSERT_EQ(count, 1);
        ASSERT_GE(sample, 0);
        ASSERT_LT(sample, n);
      }
      EXPECT_EQ(sampler.batches_per_epoch() * b - padding, n);
    }
  }
}

TEST(Sampler, RankShardsAreDisjointAndCover) {
  for (uint64_t seed : {0u, 1u, 99u}) {
    for (int64_t epoch : {0, 5}) {
      for (int64_t n : {1, 7, 24, 97}) {
        for (int64_t b : {1, 3, 8}) {
          for (int64_t world : {1, 2, 3, 4}) {
            for (bool drop_last : {false, true}) {
              std::map<int64_t, int> seen;
              int64_t batches = -1;
              for (int64_t rank = 0; rank < world; ++rank) {
                Sampler s(n, b, true, seed, drop_last, rank, world);
                if (batches < 0) batches = s.batches_per_epoch();
                ASSERT_EQ(s.batches_per_epoch(), batches);
                for (int64_t k = 0; k < batches; ++k) {
                  auto batch = s.batch(epoch, k);
                  const int64_t pad = s.batch_padding(k);
                  if (drop_last) {
                    ASSERT_EQ(pad, 0);
                  }
                  for (int64_t i = 0; i < b - pad; ++i) ++seen[batch[i]];
                }
              }
              const int64_t g = b * world;
              const int64_t expected = drop_last ? n / g * g : n;
              ASSERT_EQ(static_cast<int64_t>(seen.size()), expected)
                  << "seed " << seed << " n " << n << " b " << b << " world " << world
                  << " drop_last " << drop_last;
              for (auto [sample, count] : seen) ASSERT_EQ(count, 1);
            }
          }
        }
      }
    }
  }
}

TEST(Sampler, RankGetsItsContiguousShareOfTheGlobalBatch) {
  const int64_t n = 23, b = 3, world = 3;
  Sampler global(n, b * world, true, 5, false);
  for (int64_t rank = 0; rank < world; ++rank) {
    Sampler s(n, b, true, 5, false, rank, world);
    ASSERT_EQ(s.batches_per_epoch(), global.batches_per_epoch());
    for (int64_t k = 0; k < s.batches_per_epoch(); ++k) {
      auto whole = global.batch(1, k);
      auto part = s.batch(1, k);
      ASSERT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + rank * b));
    }
  }
}

TEST(Sampler, PaddingWrapsToTheStartOfThePermutation) {
  const int64_t n = 10, b = 4;
  Sampler s(n, b, true, 3, false);
  ASSERT_EQ(s.batches_per_epoch(), 3);
  auto perm = s.permutation(0);
  auto last = s.batch(0, 2);
  EXPECT_EQ(s.batch_padding(2), 2);
  EXPECT_EQ(s.batch_padding(0), 0);
  EXPECT_EQ(last, (std::vector<int64_t>{perm[8], perm[9], perm[0], perm[1]}));
  // A rank entirely past the end (n < global batch) gets only padding.
  Sampler tiny(3, 2, false, 0, false, 1, 2);
  EXPECT_EQ(tiny.batches_per_epoch(), 1);
  EXPECT_EQ(tiny.batch(0, 0), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(tiny.batch_padding(0), 1);
  Sampler tiny_rank3(3, 1, false, 0, false, 3, 4);
  EXPECT_EQ(tiny_rank3.batch(0, 0), (std::vector<int64_t>{0}));
  EXPECT_EQ(tiny_rank3.batch_padding(0), 1);
}

TEST(Sampler, DropLastDropsIncompleteGlobalBatches) {
  Sampler s(10, 4, true, 0, true);
  EXPECT_EQ(s.batches_per_epoch(), 2);
  Sampler sharded(10, 2, true, 0, true, 1, 3);
  EXPECT_EQ(sharded.batches_per_epoch(), 1);
  Sampler none(3, 4, true, 0, true);
  EXPECT_EQ(none.batches_per_epoch(), 0);
  EXPECT_THROW(none.batch(0, 0), Error);
}

TEST(Sampler, NoShuffleIsInOrder) {
  Sampler s(7, 3, false, 123, false);
  EXPECT_EQ(s.batch(4, 0), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(s.batch(9, 2), (std::vector<int64_t>{6, 0, 1}));
}

TEST(Sampler, DeterministicAcrossInstancesAndEpochsDiffer) {
  Sampler a(100, 8, true, 17, true, 1, 2), b(100, 8, true, 17, true, 1, 2);
  for (int64_t epoch : {0, 1, 2}) {
    for (int64_t k = 0; k < a.batches_per_epoch(); ++k) {
      ASSERT_EQ(a.batch(epoch, k), b.batch(epoch, k));
    }
  }
  EXPECT_NE(a.batch(0, 0), a.batch(1, 0));
  // Asking for epochs out of order gives the same answers (the cache is only a cache).
  auto e1 = a.batch(1, 3);
  (void)a.batch(0, 0);
  EXPECT_EQ(a.batch(1, 3), e1);
}

TEST(Sampler, ResumeFromSavedStateContinuesIdentically) {
  Sampler full(50, 4, true, 8, false, 0, 1);
  full.begin_epoch(3);
  std::vector<std::vector<int64_t>> expected;
  std::vector<int64_t> batch;
  while (full.next(batch)) expected.push_back(batch);
  ASSERT_EQ(static_cast<int64_t>(expected.size()), full.batches_per_epoch());

  Sampler first(50, 4, true, 8, false, 0, 1);
  first.begin_epoch(3);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(first.next(batch));
  const SamplerState saved = first.state();
  EXPECT_EQ(saved, (SamplerState{8, 3, 5}));

  Sampler resumed(50, 4, true, 8, false, 0, 1);
  resumed.restore(saved);
  std::vector<std::vector<int64_t>> rest;
  while (resumed.next(batch)) rest.push_back(batch);
  ASSERT_EQ(rest.size(), expected.size() - 5);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), expected.begin() + 5));

  Sampler other_seed(50, 4, true, 9, false);
  EXPECT_THROW(other_seed.restore(saved), Error);
  EXPECT_THROW(resumed.restore(SamplerState{8, 0, 99}), Error);
}

TEST(Sampler, RejectsBadArguments) {
  EXPECT_THROW(Sampler(-1, 1, true, 0, false), Error);
  EXPECT_THROW(Sampler(10, 0, true, 0, false), Error);
  EXPECT_THROW(Sampler(10, 1, true, 0, false, 2, 2), Error);
  EXPECT_THROW(Sampler(10, 1, true, 0, false, -1, 2), Error);
  EXPECT_THROW(Sampler(10, 1, true, 0, false, 0, 0), Error);
  Sampler s(10, 3, true, 0, false);
  EXPECT_THROW(s.batch(0, 4), Error);
  EXPECT_THROW(s.batch(0, -1), Error);
}

}  // namespace
}  // namespace chute
