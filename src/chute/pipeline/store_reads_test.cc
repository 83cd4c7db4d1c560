// What the Loader asks of its store per epoch: the chunk-aware shuffle fetches fewer chunks
// than the plain one, and an epoch after the first is served by the node-local cache alone.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "chute/dataset/packed_dataset.h"
#include "chute/pipeline/loader.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/store/caching_store.h"
#include "chute/store/counting_store.h"

namespace chute {
namespace {

using namespace chute::loader_testing;
namespace fs = std::filesystem;

// "x" (512, 4) in chunks of 8 samples, readable through `store` (a wrapper of `memory`).
struct ChunkedFixture {
  std::shared_ptr<MemoryStore> memory = std::make_shared<MemoryStore>();
  std::shared_ptr<CountingStore> counting = std::make_shared<CountingStore>(memory);
  ArrayPtr written = make_float_array(memory, "x", {512, 4}, {8, 4}, 3);

  DatasetPtr dataset(StorePtr store) const {
    auto array = std::make_shared<Array>(std::move(store), "x", written->metadata(), "x");
    return std::make_shared<PackedDataset>(
        std::vector<std::pair<std::string, ArrayPtr>>{{"x", array}});
  }
};

LoaderOptions block_shuffle_options(int64_t shuffle_block) {
  LoaderOptions o;
  o.batch_size = 16;
  o.threads = 1;
  o.prefetch = 1;
  o.seed = 3;
  o.shuffle_block = shuffle_block;
  o.shuffle_window = 2;
  return o;
}

// Each batch's sample indices followed by its values (as float bits would compare exactly).
std::vector<std::vector<int64_t>> epoch(Loader& loader, int64_t number) {
  std::vector<std::vector<int64_t>> batches;
  loader.begin_epoch(number);
  while (auto batch = loader.next()) {
    std::vector<int64_t> record = batch->indices;
    const BatchArray& x = (*batch)["x"];
    for (int64_t i = 0; i < x.elements(); ++i) {
      record.push_back(static_cast<int64_t>(x.as<float>()[i] * 4));
    }
    batches.push_back(std::move(record));
  }
  return batches;
}

TEST(StoreReads, ChunkShuffleFetchesFewerChunksThanPlainShuffle) {
  ChunkedFixture f;
  uint64_t plain_reads = 0, chunk_reads = 0;
  std::vector<int64_t> seen;
  for (int64_t block : {0, 8}) {
    f.counting->reset();
    {
      Loader loader(f.dataset(f.counting), block_shuffle_options(block));
      for (const auto& batch : epoch(loader, 0)) {
        if (block > 0) seen.insert(seen.end(), batch.begin(), batch.begin() + 16);
      }
    }
    (block == 0 ? plain_reads : chunk_reads) = f.counting->reads() + f.counting->range_reads();
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 512u);
  for (int64_t i = 0; i < 512; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i);
  // Plain: a batch of 16 random samples touches ~14 of the 64 chunks, ~450 fetches an epoch.
  // Chunk-aware with windows of 2 chunks: a batch is 2 whole chunks, 64 fetches (+ what the
  // producer reads ahead into the next epoch).
  EXPECT_GT(plain_reads, 300u);
  EXPECT_LT(chunk_reads, 64u + 16u);
  EXPECT_LT(chunk_reads * 4, plain_reads);
}

TEST(StoreReads, SecondEpochComesFromTheNodeCache) {
  ChunkedFixture f;
  const fs::path dir =
      fs::temp_directory_path() / ("chute_epoch_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto cached = std::make_shared<CachingStore>(f.counting, CacheOptions{dir.string()});
  std::vector<std::vector<int64_t>> first, second, reference;
  {
    Loader loader(f.dataset(cached), block_shuffle_options(0));
    first = epoch(loader, 0);
    loader.stop();  // nothing read ahead while the counters are compared
    // The loader reports its cache's counters: every chunk missed and fetched once.
    const std::optional<CacheStats> stats = loader.stats().cache;
    ASSERT_TRUE(stats.has_value());
    EXPECT_EQ(stats->misses, cached->stats().misses);
    EXPECT_GT(stats->misses, 0u);
    EXPECT_EQ(stats->bytes_fetched, f.counting->bytes_read());
    EXPECT_EQ(stats->bytes_written, stats->bytes_fetched);
    EXPECT_EQ(stats->discarded, 0u);
  }
  EXPECT_GT(f.counting->reads(), 0u);
  f.counting->reset();
  {
    // A new loader and a new cache object on the same folder: the next run of the job.
    auto reopened = std::make_shared<CachingStore>(f.counting, CacheOptions{dir.string()});
    Loader loader(f.dataset(reopened), block_shuffle_options(0));
    second = epoch(loader, 1);
    loader.stop();
    EXPECT_EQ(f.counting->reads() + f.counting->range_reads(), 0u);
    EXPECT_GT(reopened->stats().hits, 0u);
    EXPECT_EQ(reopened->stats().misses, 0u);
    const CacheStats stats = loader.stats().cache.value();
    EXPECT_EQ(stats.hits, reopened->stats().hits);
    EXPECT_EQ(stats.misses, 0u);
    EXPECT_EQ(stats.bytes_fetched, 0u);
    EXPECT_EQ(stats.bytes_from_cache, reopened->stats().bytes_from_cache);
    EXPECT_GE(stats.bytes_from_cache, 512u * 4 * sizeof(float));  // every chunk at least once
    loader.reset_stats();  // counts start again from the caches' counters now
    EXPECT_EQ(loader.stats().cache.value().hits, 0u);
  }
  {
    Loader loader(f.dataset(f.memory), block_shuffle_options(0));
    reference = epoch(loader, 1);
    EXPECT_FALSE(loader.stats().cache.has_value());  // no read went through a cache
  }
  EXPECT_EQ(second, reference);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chute
