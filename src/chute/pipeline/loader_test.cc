// The Loader end to end on W1/W2 fixtures in memory: batches equal direct reads, thread and
// prefetch counts do not change content, sharding, resume, cancellation, error injection,
// create/iterate/break/destroy loops (run under ASan and TSan in CI) and buffer recycling.

#include "chute/pipeline/loader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <thread>

#include "chute/dataset/packed_dataset.h"
#include "chute/dataset/window_dataset.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/pipeline/transforms.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using namespace chute::loader_testing;

LoaderOptions loader_options(int64_t batch_size, size_t threads, size_t prefetch) {
  LoaderOptions o;
  o.batch_size = batch_size;
  o.threads = threads;
  o.prefetch = prefetch;
  o.seed = 42;
  return o;
}

/// A batch's content as plain bytes, for comparisons.
struct Snapshot {
  int64_t index;
  std::vector<int64_t> indices;
  int64_t padding;
  std::vector<std::vector<std::byte>> arrays;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const Batch& batch) {
  Snapshot s{batch.index, batch.indices, batch.padding, {}};
  for (const BatchArray& a : batch.arrays) s.arrays.emplace_back(a.data, a.data + a.nbytes());
  return s;
}

std::vector<Snapshot> run_epoch(Loader& loader) {
  std::vector<Snapshot> out;
  for (const Batch& batch : loader) out.push_back(snapshot(batch));
  return out;
}

TEST(Loader, W1EpochEqualsDirectReads) {
  PackedFixture f(37);
  LoaderOptions o = loader_options(5, 2, 2);
  Loader loader(packed_dataset(f), o);
  ASSERT_EQ(loader.batches_per_epoch(), 8);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::multiset<int64_t> seen;
    int64_t count = 0;
    for (const Batch& batch : loader) {
      EXPECT_EQ(batch.epoch, epoch);
      EXPECT_EQ(batch.index, count);
      EXPECT_EQ(batch.indices, loader.sampler().batch(epoch, count));
      EXPECT_EQ(batch.padding, count == 7 ? 3 : 0);
      ASSERT_EQ(batch.arrays.size(), 2u);
      const BatchArray& inputs = batch["inputs"];
      EXPECT_EQ(inputs.shape, (std::vector<int64_t>{5, 3, 4, 5}));
      EXPECT_EQ(batch["targets"].shape, (std::vector<int64_t>{5, 3, 4, 2}));
      for (int64_t slot = 0; slot < batch.size(); ++slot) {
        const int64_t sample = batch.indices[static_cast<size_t>(slot)];
        if (slot < batch.size() - batch.padding) seen.insert(sample);
        auto expected_in = read_floats(*f.inputs, {sample, 0, 0, 0}, {1, 3, 4, 5});
        auto expected_out = read_floats(*f.targets, {sample, 0, 0, 0}, {1, 3, 4, 2});
        ASSERT_EQ(0, std::memcmp(expected_in.data(), inputs.as<float>() + slot * 60, 60 * 4));
        ASSERT_EQ(
            0, std::memcmp(expected_out.data(), batch["targets"].as<float>() + slot * 24, 24 * 4));
      }
      ++count;
    }
    EXPECT_EQ(count, 8);
    EXPECT_EQ(seen.size(), 37u);  // each sample exactly once (a multiset would show repeats)
    EXPECT_EQ(*seen.rbegin(), 36);
    std::set<int64_t> unique(seen.begin(), seen.end());
    EXPECT_EQ(unique.size(), seen.size());
  }
  EXPECT_FALSE(loader.next().has_value());  // no epoch running
}

TEST(Loader, ThreadAndPrefetchCountsDoNotChangeBatches) {
  PackedFixture f(23);
  std::vector<Snapshot> reference;
  for (size_t threads : {1, 2, 4}) {
    for (size_t prefetch : {1, 2, 4}) {
      Loader loader(packed_dataset(f), loader_options(4, threads, prefetch));
      loader.begin_epoch(3);
      std::vector<Snapshot> epoch;
      while (std::optional<Batch> batch = loader.next()) epoch.push_back(snapshot(*batch));
      if (reference.empty()) {
        reference = epoch;
        ASSERT_EQ(reference.size(), 6u);
      } else {
        ASSERT_EQ(epoch, reference) << "threads " << threads << " prefetch " << prefetch;
      }
    }
  }
}

TEST(Loader, RankShardsAreDisjointAndCoverTheEpoch) {
  PackedFixture f(19);
  std::multiset<int64_t> seen;
  for (int64_t rank = 0; rank < 3; ++rank) {
    LoaderOptions o = loader_options(2, 1, 1);
    o.rank = rank;
    o.world_size = 3;
    Loader loader(packed_dataset(f), o);
    EXPECT_EQ(loader.batches_per_epoch(), 4);
    for (const Batch& batch : loader) {
      for (int64_t k = 0; k < batch.size() - batch.padding; ++k) seen.insert(batch.indices[k]);
    }
  }
  std::set<int64_t> unique(seen.begin(), seen.end());
  EXPECT_EQ(seen.size(), 19u);
  EXPECT_EQ(unique.size(), 19u);
}

TEST(Loader, ResumesFromSavedStateIdentically) {
  PackedFixture f(30);
  Loader full(packed_dataset(f), loader_options(4, 2, 2));
  full.begin_epoch(2);
  std::vector<Snapshot> expected;
  while (auto batch = full.next()) expected.push_back(snapshot(*batch));

  Loader first(packed_dataset(f), loader_options(4, 2, 2));
  first.begin_epoch(2);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(first.next().has_value());
  const SamplerState saved = first.state();
  EXPECT_EQ(saved.seed, 42u);
  EXPECT_EQ(saved.epoch, 2);
  EXPECT_EQ(saved.next_batch, 3);
  EXPECT_EQ(saved.batch_size, 4);
  EXPECT_EQ(saved.world_size, 1);
  EXPECT_EQ(saved.dataset, dataset_fingerprint(*packed_dataset(f)));

  Loader resumed(packed_dataset(f), loader_options(4, 1, 3));
  resumed.restore(saved);
  EXPECT_EQ(resumed.state(), saved);
  std::vector<Snapshot> rest = run_epoch(resumed);  // begin() resumes at the saved batch
  ASSERT_EQ(rest.size(), expected.size() - 3);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), expected.begin() + 3));
  // The following range-for is the next epoch, from its start.
  EXPECT_EQ(run_epoch(resumed).front().indices, resumed.sampler().batch(3, 0));
  EXPECT_THROW(resumed.restore(SamplerState{7, 0, 0}), Error);
}

TEST(Loader, NewEpochCancelsTheRunningOne) {
  PackedFixture f(40);
  Loader loader(packed_dataset(f), loader_options(2, 2, 2));
  loader.begin_epoch(0);
  ASSERT_TRUE(loader.next().has_value());
  loader.begin_epoch(1);
  int64_t count = 0;
  while (auto batch = loader.next()) {
    EXPECT_EQ(batch->epoch, 1);
    EXPECT_EQ(batch->index, count++);
  }
  EXPECT_EQ(count, 20);
  // After epoch 1's last batch the state points at epoch 2's first.
  EXPECT_EQ(loader.state().epoch, 2);
  EXPECT_EQ(loader.state().next_batch, 0);
  loader.restore(loader.state());
  loader.begin_epoch();
  std::optional<Batch> first = loader.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->epoch, 2);
  EXPECT_EQ(first->index, 0);
}

/// Polls until the producer has assembled `count` batches; fails after a generous deadline
/// (a liveness check, not a timing one).
void wait_until_produced(const Loader& loader, int64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (loader.stats().batches_produced < count) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "producer stalled";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(Loader, RunsAheadIntoTheNextEpoch) {
  PackedFixture f(21);
  const size_t prefetch = 2;
  Loader loader(packed_dataset(f), loader_options(4, 2, prefetch));
  ASSERT_EQ(loader.batches_per_epoch(), 6);
  run_epoch(loader);
  // With the epoch over and nobody consuming, the producer fills the queue from epoch 1.
  wait_until_produced(loader, 6 + static_cast<int64_t>(prefetch));
  loader.reset_stats();
  std::vector<Snapshot> next = run_epoch(loader);
  const LoaderStats stats = loader.stats();
  ASSERT_FALSE(stats.occupancy.empty());
  EXPECT_EQ(stats.occupancy.front().queued, static_cast<int64_t>(prefetch));
  EXPECT_EQ(loader.state().epoch, 2);  // epoch 1 done: epoch 2 from its first batch
  EXPECT_EQ(loader.state().next_batch, 0);

  Loader fresh(packed_dataset(f), loader_options(4, 1, 1));
  fresh.begin_epoch(1);
  std::vector<Snapshot> expected;
  while (auto batch = fresh.next()) expected.push_back(snapshot(*batch));
  EXPECT_EQ(next, expected);
  EXPECT_FALSE(loader.next().has_value());  // the epoch is over until the next begin
}

TEST(Loader, OtherStartsAfterAnEpochRestartTheProducer) {
  PackedFixture f(21);
  Loader loader(packed_dataset(f), loader_options(4, 2, 2));
  run_epoch(loader);
  wait_until_produced(loader, 7);
  for (auto [epoch, start] : {std::pair<int64_t, int64_t>{5, 0}, {6, 2}, {6, 0}}) {
    loader.begin_epoch(epoch, start);
    int64_t b = start;
    while (auto batch = loader.next()) {
      EXPECT_EQ(batch->epoch, epoch);
      EXPECT_EQ(batch->index, b);
      EXPECT_EQ(batch->indices, loader.sampler().batch(epoch, b));
      ++b;
    }
    EXPECT_EQ(b, 6);
  }
  // After a restore, the saved position wins over the batches run ahead.
  loader.restore(SamplerState{42, 2, 4});
  std::vector<Snapshot> rest = run_epoch(loader);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest.front().indices, loader.sampler().batch(2, 4));
}

TEST(Loader, CorruptChunkRaisesOnTheConsumerNamingIt) {
  PackedFixture f(20);
  // Sample 9's second channel chunk of inputs is truncated.
  f.store->set("inputs/c/9/0/0/1", std::string_view("garbage"));
  LoaderOptions o = loader_options(4, 2, 2);
  o.shuffle = false;
  Loader loader(packed_dataset(f), o);
  for (int attempt = 0; attempt < 2; ++attempt) {
    loader.begin_epoch(0);
    int64_t good = 0;
    try {
      while (loader.next()) ++good;
      FAIL() << "expected an error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kCorruptData) << message;
      EXPECT_NE(message.find("c/9/0/0/1"), std::string::npos) << message;
      EXPECT_NE(message.find("sample 9"), std::string::npos) << message;
      EXPECT_NE(message.find("batch 2"), std::string::npos) << message;
    }
    EXPECT_EQ(good, 2);                       // batches 0 and 1 arrive first
    EXPECT_FALSE(loader.next().has_value());  // the epoch is over, no hang
  }
}

TEST(Loader, CreateIterateBreakDestroyLoops) {
  PackedFixture f(25);
  std::vector<BatchArray> kept;
  for (int round = 0; round < 12; ++round) {
    Loader loader(packed_dataset(f), loader_options(3, 1 + round % 3, 1 + round % 2));
    int taken = 0;
    for (const Batch& batch : loader) {
      if (round % 4 == 0) kept.push_back(batch.arrays[0]);  // outlives the loader
      if (++taken > round % 4) break;
    }
    if (round % 3 == 1) loader.begin_epoch(5);  // abandoned running epoch
    if (round % 3 == 2) loader.stop();
  }
  for (const BatchArray& a : kept) {
    ASSERT_NE(a.owner, nullptr);
    float sum = 0;
    for (int64_t i = 0; i < a.elements(); ++i) sum += a.as<float>()[i];  // still readable
    EXPECT_TRUE(std::isfinite(sum));
  }
}

TEST(Loader, BuffersAreRecycled) {
  PackedFixture f(40);
  const size_t prefetch = 2;
  Loader loader(packed_dataset(f), loader_options(2, 2, prefetch));
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (const Batch& batch : loader) ASSERT_EQ(batch.size(), 2);
  }
  const LoaderStats stats = loader.stats();
  EXPECT_EQ(stats.batches, 60);
  // The queue, the batch being assembled, the one read ahead and the one the consumer holds:
  // never more.
  EXPECT_EQ(stats.read_ahead, 1);
  EXPECT_LE(stats.buffers_allocated, static_cast<int64_t>(prefetch) + 3);
}

TEST(Loader, ReportsStats) {
  PackedFixture f(12);
  Loader loader(packed_dataset(f), loader_options(4, 2, 2));
  run_epoch(loader);
  LoaderStats stats = loader.stats();
  EXPECT_EQ(stats.batches, 3);
  EXPECT_EQ(stats.samples, 12);
  EXPECT_EQ(stats.occupancy.size(), 3u);
  for (const auto& sample : stats.occupancy) EXPECT_LE(sample.queued, 2);
  EXPECT_GE(stats.first_batch_ns, 0);
  // The producer may already be into the next epoch: count per batch it assembled.
  EXPECT_GE(stats.batches_produced, 3);
  EXPECT_EQ(stats.chunks, stats.batches_produced * 4 * 4);
  // inputs: 3 chunks of 2 channels, targets: 1 chunk; the last channel chunk holds one channel
  // of the 5, read up to its last element inside the array (one float less).
  EXPECT_EQ(stats.bytes_read, stats.batches_produced * 4 * ((3 * 24 + 24) * 4 - 4));
  EXPECT_GE(stats.wait_ns, 0);
  loader.reset_stats();
  EXPECT_EQ(loader.stats().batches, 0);
}

TEST(Loader, EmptyEpochAndBadOptions) {
  PackedFixture f(3);
  LoaderOptions o = loader_options(4, 1, 1);
  o.drop_last = true;  // no batch would ever come: refused up front (loader_reliability_test)
  EXPECT_THROW(Loader(packed_dataset(f), o), Error);
  o = loader_options(3, 1, 1);
  o.prefetch = 0;
  EXPECT_THROW(Loader(packed_dataset(f), o), Error);
  o = loader_options(0, 1, 1);
  EXPECT_THROW(Loader(packed_dataset(f), o), Error);
  o = loader_options(1, 1, 1);
  o.rank = 1;
  EXPECT_THROW(Loader(packed_dataset(f), o), Error);
  EXPECT_THROW(Loader(nullptr, loader_options(1, 1, 1)), Error);
}

TEST(Loader, W2WindowsThroughTheLoader) {
  auto store = std::make_shared<MemoryStore>();
  Group group;
  group.name = "memory";
  group.arrays["u"] = make_float_array(store, "u", {12, 2, 3, 4}, {1, 2, 3, 4}, 5);
  group.arrays["sp"] = make_float_array(store, "sp", {12, 3, 4}, {1, 3, 4}, 6);
  WindowOptions w;
  w.variables = {"u", "sp"};
  w.output_dtype = DataType{DTypeKind::kBFloat, 2};
  w.mean = {1, 2, 3};
  w.std = {4, 5, 6};
  auto dataset = std::make_shared<WindowDataset>(group, w);
  std::vector<Snapshot> reference;
  for (size_t threads : {1, 3}) {
    Loader loader(dataset, loader_options(3, threads, 2));
    auto epoch = run_epoch(loader);
    ASSERT_EQ(epoch.size(), 4u);  // 10 windows, padded to 12
    if (reference.empty()) {
      reference = epoch;
    } else {
      EXPECT_EQ(epoch, reference);
    }
  }
  // Spot check one value: sample 0 is t = 1; inputs channel 0 is u, level 0, at t - 1.
  const int64_t index[4] = {0, 0, 0, 0};
  const float expected = (value_at(5, index) - 1.0f) * static_cast<float>(1.0 / 4.0);
  Loader loader(dataset, [] {
    LoaderOptions o;
    o.batch_size = 1;
    o.shuffle = false;
    o.threads = 1;
    return o;
  }());
  loader.begin_epoch(0);
  auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->indices[0], 0);
  EXPECT_EQ(batch->arrays[0].shape, (std::vector<int64_t>{1, 3, 4, 6}));
  EXPECT_EQ(reinterpret_cast<const uint16_t*>(batch->arrays[0].data)[0],
            float_to_bfloat16(expected));
}

}  // namespace
}  // namespace chute
