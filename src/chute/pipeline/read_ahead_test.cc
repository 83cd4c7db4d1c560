// Read-ahead: the next batch's chunk reads are submitted before the current batch decodes (and
// so before it is handed out), in one window shared with the current batch; batches are the
// same with and without it; an error belongs to its own batch; stopping with reads in flight
// leaves nothing behind.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "chute/dataset/packed_dataset.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/pipeline/loader.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/store/latency_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using namespace chute::loader_testing;

/// The sample a fixture chunk key belongs to ("inputs/c/17/0/0/1" -> 17).
int64_t sample_of(std::string_view key) {
  const size_t c = key.find("/c/");
  return std::stoll(std::string(key.substr(c + 3, key.find('/', c + 3) - c - 3)));
}

/// Holds every submitted read until open(); records the keys submitted. Tests count on it.
class GateStore final : public Store {
 public:
  explicit GateStore(StorePtr inner) : inner_(std::move(inner)) {}
  std::optional<uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  bool read(std::string_view key, ByteBuffer& out) const override { return inner_->read(key, out); }
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override {
    return inner_->read_range(key, offset, out);
  }
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override {
    std::vector<std::function<void()>> now;
    {
      std::lock_guard lock(mutex_);
      for (size_t i = 0; i < requests.size(); ++i) {
        submitted_.emplace_back(requests[i].key);
        const ReadRequest request = requests[i];
        auto read = [this, request, done, i] {
          ++completed_;
          done(i, read_blocking(*inner_, request));
        };
        (open_ ? now : held_).push_back(std::move(read));
      }
    }
    for (auto& read : now) read();
  }
  int preferred_concurrency() const override { return 64; }
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return "gate"; }

  /// Completes the reads held so far and every later one as it is submitted.
  void open() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard lock(mutex_);
      open_ = true;
      held.swap(held_);
    }
    for (auto& read : held) read();
  }
  std::vector<std::string> submitted() const {
    std::lock_guard lock(mutex_);
    return submitted_;
  }
  int64_t completed() const { return completed_.load(); }

 private:
  StorePtr inner_;
  mutable std::mutex mutex_;
  mutable std::vector<std::string> submitted_;
  mutable std::vector<std::function<void()>> held_;
  mutable std::atomic<int64_t> completed_{0};
  bool open_ = false;
};

/// The W1 fixture's arrays read through `store` (a wrapper of the fixture's own).
DatasetPtr packed_over(const PackedFixture& f, const StorePtr& store) {
  auto reopen = [&](const ArrayPtr& a) {
    return std::make_shared<Array>(store, a->name(), a->metadata(), a->name());
  };
  return std::make_shared<PackedDataset>(std::vector<std::pair<std::string, ArrayPtr>>{
      {"inputs", reopen(f.inputs)}, {"targets", reopen(f.targets)}});
}

std::vector<std::byte> assembled(BatchAssembler& assembler, std::span<const int64_t> samples) {
  std::vector<std::byte> buffer(assembler.layout().total_bytes);
  assembler.assemble(samples, buffer.data());
  return buffer;
}

TEST(ReadAhead, TheSecondBatchsReadsGoOutBeforeTheFirstCompletes) {
  PackedFixture f(16);
  auto gate = std::make_shared<GateStore>(f.store);
  BatchAssembler assembler(packed_over(f, gate), 4, 2);
  // One batch is 4 × 3 reads submitted ahead: a sample's first two input chunks and its target
  // chunk; its last input chunk, of which the sample needs only a part, is read by a worker.
  assembler.set_io_concurrency(40);
  const std::vector<int64_t> first = {0, 1, 2, 3}, second = {4, 5, 6, 7};
  std::vector<std::byte> a(assembler.layout().total_bytes), b(a.size());
  assembler.start(first, a.data());
  assembler.start(second, b.data());
  // start() never waits for a read: nothing has completed, so the first batch cannot have
  // been decoded, and the second one's reads are already out.
  EXPECT_EQ(gate->completed(), 0);
  std::set<int64_t> samples;
  for (const std::string& key : gate->submitted()) samples.insert(sample_of(key));
  EXPECT_EQ(samples, (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(assembler.reads_submitted_by_next(), 12u);  // of the first batch
  gate->open();
  assembler.finish();
  EXPECT_EQ(assembler.reads_submitted_by_next(), 12u);  // of the second, all before its finish
  assembler.finish();
  EXPECT_EQ(assembler.started(), 0u);

  BatchAssembler plain(packed_over(f, f.store), 4, 2);
  EXPECT_EQ(a, assembled(plain, first));
  EXPECT_EQ(b, assembled(plain, second));
}

TEST(ReadAhead, BothBatchesShareOneWindowTheFirstBeforeTheSecond) {
  PackedFixture f(16);
  auto gate = std::make_shared<GateStore>(f.store);
  BatchAssembler assembler(packed_over(f, gate), 4, 2);
  assembler.set_io_concurrency(16);
  const std::vector<int64_t> first = {8, 9, 10, 11}, second = {12, 13, 14, 15};
  std::vector<std::byte> a(assembler.layout().total_bytes), b(a.size());
  assembler.start(first, a.data());
  assembler.start(second, b.data());
  // The 12 reads of the first batch, then whole items of the second while they fit in 16: a
  // sample's input chunks (2 reads, one item) and its target chunk (1).
  const std::vector<std::string> out = gate->submitted();
  ASSERT_EQ(out.size(), 15u);
  for (size_t k = 0; k < 12; ++k) EXPECT_LT(sample_of(out[k]), 12) << out[k];
  for (size_t k = 12; k < out.size(); ++k) EXPECT_EQ(sample_of(out[k]), 12) << out[k];
  EXPECT_EQ(assembler.reads_submitted_by_next(), 12u);
  // As the first batch's reads complete, the rest of the second one's go out.
  gate->open();
  assembler.finish();
  assembler.finish();
  BatchAssembler plain(packed_over(f, f.store), 4, 2);
  EXPECT_EQ(a, assembled(plain, first));
  EXPECT_EQ(b, assembled(plain, second));
}

LoaderOptions slow_options(bool read_ahead) {
  LoaderOptions o;
  o.batch_size = 3;
  o.threads = 2;
  o.prefetch = 2;
  o.seed = 11;
  o.shuffle = true;
  o.io_concurrency = 8;
  o.read_ahead = read_ahead;
  return o;
}

struct Taken {
  std::vector<std::vector<std::byte>> bytes;
  std::vector<std::vector<int64_t>> indices;
};

void take(Loader& loader, Taken& run, int64_t limit = INT64_MAX) {
  for (int64_t n = 0; n < limit; ++n) {
    std::optional<Batch> batch = loader.next();
    if (!batch) return;
    run.indices.push_back(batch->indices);
    for (const BatchArray& a : batch->arrays) run.bytes.emplace_back(a.data, a.data + a.nbytes());
  }
}

TEST(ReadAhead, LoaderBatchesAreTheSameWithAndWithoutOverEpochsRanksAndResumes) {
  PackedFixture f(22);
  auto slow = std::make_shared<LatencyStore>(f.store, std::chrono::milliseconds(1));
  const DatasetPtr dataset = packed_over(f, slow);
  for (int64_t rank : {0, 1}) {
    Taken runs[2];
    for (bool read_ahead : {false, true}) {
      LoaderOptions o = slow_options(read_ahead);
      o.world_size = 2;
      o.rank = rank;
      Taken& run = runs[read_ahead];
      {
        Loader loader(dataset, o);
        for (int epoch = 0; epoch < 3; ++epoch) {
          loader.begin_epoch();
          take(loader, run);
        }
        loader.begin_epoch();
        take(loader, run, 1);  // a saved state in the middle of epoch 3 ...
        const SamplerState state = loader.state();
        const LoaderStats stats = loader.stats();
        EXPECT_EQ(stats.read_ahead, read_ahead ? 1 : 0);
        if (read_ahead) {
          // Each batch queued had the next one's reads out by then.
          EXPECT_EQ(stats.batches_read_ahead, stats.batches_produced);
          EXPECT_GE(stats.reads_submitted_ahead, stats.batches_produced);
        } else {
          EXPECT_EQ(stats.batches_read_ahead, 0);
          EXPECT_EQ(stats.reads_submitted_ahead, 0);
        }
        Loader resumed(dataset, o);  // ... resumed by another loader
        resumed.restore(state);
        resumed.begin_epoch();
        take(resumed, run);
      }
      EXPECT_EQ(slow->in_flight(), 0);
    }
    EXPECT_EQ(runs[1].indices, runs[0].indices) << "rank " << rank;
    EXPECT_EQ(runs[1].bytes, runs[0].bytes) << "rank " << rank;
    EXPECT_EQ(runs[1].indices.size(), 4u * 4u);  // 22 / 2 ranks / 3 a batch: 4 a rank's epoch
  }
  // And the bytes are the data's: read without the loader.
  Loader loader(packed_over(f, f.store), slow_options(true));
  for (const Batch& batch : loader) {
    for (int64_t k = 0; k < batch.size(); ++k) {
      const int64_t s = batch.indices[static_cast<size_t>(k)];
      const std::vector<float> x = read_floats(*f.inputs, {s, 0, 0, 0}, {1, 3, 4, 5});
      EXPECT_EQ(0, std::memcmp(batch["inputs"].data + k * 60 * 4, x.data(), 60 * 4));
    }
  }
}

/// Fails every read of one sample's target chunk.
class FailOneSample final : public Store {
 public:
  FailOneSample(StorePtr inner, int64_t sample) : inner_(std::move(inner)), sample_(sample) {}
  std::optional<uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  bool read(std::string_view key, ByteBuffer& out) const override {
    check(key);
    return inner_->read(key, out);
  }
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override {
    check(key);
    return inner_->read_range(key, offset, out);
  }
  int preferred_concurrency() const override { return 32; }
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return "fail one"; }

 private:
  void check(std::string_view key) const {
    if (key.starts_with("targets/") && sample_of(key) == sample_) {
      fail(ErrorCode::kIoError, "injected failure of '{}'", key);
    }
  }
  StorePtr inner_;
  int64_t sample_;
};

TEST(ReadAhead, AFailedReadIsItsOwnBatchsErrorNeverThePreviousOnes) {
  PackedFixture f(24);
  for (int64_t bad_batch : {1, 3, 5}) {
    auto failing = std::make_shared<FailOneSample>(f.store, bad_batch * 4 + 2);
    LoaderOptions o = slow_options(true);
    o.shuffle = false;
    o.batch_size = 4;
    Loader loader(packed_over(f, failing), o);
    Loader reference(packed_over(f, f.store), o);
    loader.begin_epoch();
    reference.begin_epoch();
    for (int64_t b = 0; b < bad_batch; ++b) {
      std::optional<Batch> batch = loader.next();
      std::optional<Batch> expected = reference.next();
      ASSERT_TRUE(batch && expected);
      EXPECT_EQ(batch->index, b);
      EXPECT_EQ(0, std::memcmp(batch->arrays[1].data, expected->arrays[1].data,
                               expected->arrays[1].nbytes()));
    }
    try {
      loader.next();
      FAIL() << "batch " << bad_batch << " read a failing chunk";
    } catch (const Error& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find(fmt::format("batch {}", bad_batch)), std::string::npos) << what;
      EXPECT_NE(what.find("injected failure"), std::string::npos) << what;
    }
    EXPECT_FALSE(loader.next());  // the epoch is over
  }
}

TEST(ReadAhead, StoppingWithReadsInFlightLeavesNoReadBehind) {
  PackedFixture f(40);
  auto slow = std::make_shared<LatencyStore>(f.store, std::chrono::milliseconds(3));
  const DatasetPtr dataset = packed_over(f, slow);
  for (int round = 0; round < 12; ++round) {
    {
      Loader loader(dataset, slow_options(true));
      loader.begin_epoch();
      Taken run;
      take(loader, run, round % 3);  // early break after 0, 1 or 2 batches
      if (round % 2 == 1) {
        loader.begin_epoch(1, 4);  // a restart elsewhere (the cold bench's restart_around)
        take(loader, run, 1);
        loader.stop();
      }
    }  // destroyed with the next batches' reads submitted
    EXPECT_EQ(slow->in_flight(), 0) << "round " << round;
  }
}

}  // namespace
}  // namespace chute
