// Sharding across real ranks: every rank builds the Sampler with its own rank, sends its indices
// of a whole epoch to rank 0, and rank 0 checks that the shares are disjoint, cover the epoch,
// and equal what one process reading the global batch (batch_size × world_size) gets.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "chute/dist/mpi_test_support.h"
#include "chute/dist/rank_report.h"
#include "chute/sampler/sampler.h"

namespace chute::dist {
namespace {

using testing::world;

struct Case {
  int64_t num_samples;
  int64_t batch_size;  // per rank
  bool shuffle;
  uint64_t seed;
  bool drop_last;
};

std::string describe(const Case& c, int64_t epoch) {
  return "samples=" + std::to_string(c.num_samples) + " batch=" + std::to_string(c.batch_size) +
         " shuffle=" + std::to_string(c.shuffle) + " seed=" + std::to_string(c.seed) +
         " drop_last=" + std::to_string(c.drop_last) + " epoch=" + std::to_string(epoch);
}

std::string pack(const std::vector<int64_t>& values) {
  std::string bytes(values.size() * sizeof(int64_t), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<int64_t> unpack(const std::string& bytes) {
  std::vector<int64_t> values(bytes.size() / sizeof(int64_t));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

// This rank's whole epoch: for each batch, its indices followed by its padding count.
std::vector<int64_t> rank_epoch(const Sampler& sampler, int64_t epoch) {
  std::vector<int64_t> out;
  for (int64_t b = 0; b < sampler.batches_per_epoch(); ++b) {
    std::vector<int64_t> indices = sampler.batch(epoch, b);
    out.insert(out.end(), indices.begin(), indices.end());
    out.push_back(sampler.batch_padding(b));
  }
  return out;
}

void check_on_root(const Case& c, int64_t epoch, const std::vector<std::string>& gathered) {
  const int world_size = static_cast<int>(gathered.size());
  const std::string what = describe(c, epoch) + " ranks=" + std::to_string(world_size);
  const Sampler single(c.num_samples, c.batch_size * world_size, c.shuffle, c.seed, c.drop_last);
  const int64_t batches = single.batches_per_epoch();
  const int64_t B = c.batch_size;

  std::vector<std::vector<int64_t>> shares;
  for (const std::string& bytes : gathered) shares.push_back(unpack(bytes));
  for (int r = 0; r < world_size; ++r) {
    ASSERT_EQ(shares[r].size(), static_cast<size_t>(batches * (B + 1)))
        << what << ": rank " << r << " has a different batch count than one process";
  }

  std::multiset<int64_t> real;  // every non-padding sample over all ranks and batches
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<int64_t> global_batch;
    int64_t padding = 0;
    for (int r = 0; r < world_size; ++r) {
      const int64_t* batch = shares[r].data() + b * (B + 1);
      global_batch.insert(global_batch.end(), batch, batch + B);
      const int64_t pad = batch[B];
      EXPECT_GE(pad, 0);
      EXPECT_LE(pad, B);
      if (pad > 0) {
        EXPECT_EQ(b, batches - 1) << what << ": padding before the last batch";
      }
      for (int64_t k = 0; k < B - pad; ++k) real.insert(batch[k]);
      padding += pad;
    }
    // The ranks' shares, in rank order, are exactly one process's global batch.
    EXPECT_EQ(global_batch, single.batch(epoch, b)) << what << " batch " << b;
    EXPECT_EQ(padding, single.batch_padding(b)) << what << " batch " << b;
  }
  // Disjoint: no sample twice. Covering: every sample of the epoch (drop_last off), or exactly
  // the first batches × global batch positions of the permutation (drop_last on).
  std::set<int64_t> distinct(real.begin(), real.end());
  EXPECT_EQ(distinct.size(), real.size()) << what << ": a sample appears on two ranks or twice";
  const int64_t expected = c.drop_last ? batches * B * world_size : c.num_samples;
  EXPECT_EQ(static_cast<int64_t>(distinct.size()), expected) << what;
  if (!c.drop_last) {
    for (int64_t s = 0; s < c.num_samples; ++s) {
      if (!distinct.count(s)) {
        ADD_FAILURE() << what << ": sample " << s << " is on no rank";
        break;
      }
    }
  } else {
    std::vector<int64_t> permutation = single.permutation(epoch);
    std::set<int64_t> head(permutation.begin(), permutation.begin() + expected);
    EXPECT_EQ(distinct, head) << what;
  }
}

TEST(MpiSharding, RankSharesAreDisjointCoveringAndEqualTheGlobalBatch) {
  const int rank = world().rank();
  const int world_size = world().size();
  std::vector<Case> cases;
  // Sample counts divisible and not divisible by the rank count and by the global batch, batch
  // sizes from 1 to 16, and a rank whose share of the last batch is padding only (4 samples,
  // batch 2, 3 ranks).
  for (int64_t num_samples : {0, 1, 4, 7, 24, 100, 101}) {
    for (int64_t batch_size : {1, 2, 3, 5, 16}) {
      for (bool drop_last : {false, true}) {
        cases.push_back({num_samples, batch_size, true, 42, drop_last});
      }
    }
  }
  for (uint64_t seed : {0ull, 1ull, 20260101ull}) cases.push_back({97, 4, true, seed, false});
  cases.push_back({50, 3, false, 0, false});
  cases.push_back({50, 3, false, 0, true});

  int checked = 0;
  for (const Case& c : cases) {
    const Sampler sampler(c.num_samples, c.batch_size, c.shuffle, c.seed, c.drop_last, rank,
                          world_size);
    for (int64_t epoch : {0, 1, 7}) {
      std::vector<std::string> gathered = world().gather_to_root(pack(rank_epoch(sampler, epoch)));
      if (rank == 0) check_on_root(c, epoch, gathered);
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(cases.size()) * 3);
}

TEST(MpiSharding, EpochsDifferAndRepeatForTheSameSeed) {
  const Sampler sampler(64, 4, true, 7, true, world().rank(), world().size());
  std::vector<std::string> epoch0 = world().gather_to_root(pack(rank_epoch(sampler, 0)));
  std::vector<std::string> epoch1 = world().gather_to_root(pack(rank_epoch(sampler, 1)));
  const Sampler again(64, 4, true, 7, true, world().rank(), world().size());
  std::vector<std::string> epoch0_again = world().gather_to_root(pack(rank_epoch(again, 0)));
  if (world().rank() == 0) {
    EXPECT_NE(epoch0, epoch1);
    EXPECT_EQ(epoch0, epoch0_again);
  }
}

TEST(MpiSharding, GlobalBatchSizesNotDivisibleByTheRankCountRoundUpPerRank) {
  // The Loader's batch_size is per rank, so the global batch is batch_size × ranks. A user who
  // thinks in global batches (and the --sweep ranks study) uses per_rank_batch(): ceil(G / ranks).
  const int world_size = world().size();
  for (int64_t global : {1, 5, 7, 16, 17}) {
    const int64_t per_rank = per_rank_batch(global, world_size);
    EXPECT_GE(per_rank * world_size, global);
    EXPECT_LT((per_rank - 1) * world_size, global);
    if (global % world_size == 0) {
      EXPECT_EQ(per_rank * world_size, global);
    }
    const Sampler sampler(global * 3 + 1, per_rank, true, 3, false, world().rank(), world_size);
    std::vector<std::string> gathered = world().gather_to_root(pack(rank_epoch(sampler, 2)));
    if (world().rank() == 0) {
      check_on_root({global * 3 + 1, per_rank, true, 3, false}, 2, gathered);
    }
  }
}

}  // namespace
}  // namespace chute::dist
