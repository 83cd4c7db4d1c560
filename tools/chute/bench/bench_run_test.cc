#include "chute/bench/bench_run.h"

#include <gtest/gtest.h>

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "chute/bench/loader_source.h"
#include "chute/dataset/packed_dataset.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/error.h"

namespace chute::bench {
namespace {

/// A scripted source: batches of `setting.batch_size` samples numbered in order, a fixed queue
/// length, and 1 ms of read / 2 ms decode / 3 ms assemble worker time per batch.
class FakeSource : public BatchSource {
 public:
  explicit FakeSource(const LoaderSetting& setting, bool cache = false)
      : setting_(setting), cache_(cache) {
    data_.resize(static_cast<size_t>(setting.batch_size) * 100);
    buffers_.push_back(data_);
  }
  BatchView next() override {
    indices_.clear();
    for (int i = 0; i < setting_.batch_size; ++i) indices_.push_back(next_sample_++);
    ++batches_;
    BatchView view;
    view.samples = setting_.batch_size;
    view.bytes = static_cast<int64_t>(data_.size());
    view.indices = indices_;
    view.buffers = buffers_;
    view.queued = static_cast<int>(batches_ % 3);
    return view;
  }
  int queue_capacity() const override { return setting_.prefetch; }
  WorkerTimes worker_times() const override {
    WorkerTimes times{batches_ * 1'000'000, batches_ * 2'000'000, batches_ * 3'000'000, 0, 0, 0, {},
                      batches_ * 4'000'000};
    if (cache_) {  // per batch: 3 hits, 1 miss, 300 bytes from the cache, 100 fetched
      const auto b = static_cast<uint64_t>(batches_);
      times.cache = CacheStats{3 * b, b, 300 * b, 100 * b, 100 * b, 0, b / 4};
    }
    return times;
  }
  void restart_around(const std::function<void()>& between) override {
    if (events_) events_->push_back("stop");
    between();
    if (events_) events_->push_back("go on");
  }
  std::vector<std::string>* events_ = nullptr;  // records restart_around() calls

 private:
  LoaderSetting setting_;
  bool cache_ = false;
  std::vector<std::byte> data_;
  std::vector<std::span<const std::byte>> buffers_;
  std::vector<int64_t> indices_;
  int64_t next_sample_ = 0;
  int64_t batches_ = 0;
};

SourceFactory fake_factory(int* created = nullptr) {
  return [created](const LoaderSetting& setting) {
    if (created) ++*created;
    return std::make_unique<FakeSource>(setting);
  };
}

RunOptions small_run() {
  RunOptions run;
  run.warmup = 2;
  run.trials = 3;
  run.batches = 4;
  run.step_ms = 0.2;
  run.record_indices = true;
  return run;
}

TEST(BenchRun, IoModeCountsBatchesTrialsAndBreakdown) {
  int created = 0;
  const ModeResult r = run_mode(Mode::kIo, fake_factory(&created), {2, 3, 8}, small_run());
  EXPECT_EQ(created, 1);
  EXPECT_EQ(r.samples_per_s.count, 3u);
  EXPECT_EQ(r.batch_interval_s.count, 12u);
  EXPECT_EQ(r.batch_bytes, 800);
  EXPECT_GT(r.samples_per_s.mean, 0);
  EXPECT_GT(r.time_to_first_batch_s, 0);
  // Worker times are deltas over the 12 timed batches only (warm-up excluded).
  EXPECT_NEAR(r.breakdown.read, 1e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.decode, 2e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.assemble, 3e-3, 1e-12);
  EXPECT_NEAR(r.breakdown.finish, 4e-3, 1e-12);
  EXPECT_EQ(r.breakdown.compute, 0);
  EXPECT_EQ(r.accelerator_utilisation, 0);
  EXPECT_EQ(r.queue_capacity, 3);
  ASSERT_EQ(r.queue.size(), 12u);
  // Timed batches are numbers 3..14; queued = number % 3.
  EXPECT_EQ(r.queue[0].occupancy, 0);
  EXPECT_EQ(r.queue[1].occupancy, 1);
  EXPECT_NEAR(r.queue_empty_fraction, 4.0 / 12, 1e-12);
  EXPECT_NEAR(r.mean_queue_occupancy, 1.0, 1e-12);
  for (size_t i = 1; i < r.queue.size(); ++i) EXPECT_GE(r.queue[i].t, r.queue[i - 1].t);
  // Warm-up and timed batches recorded, in order.
  ASSERT_EQ(r.batch_indices.size(), 14u);
  EXPECT_EQ(r.batch_indices[0].front(), 0);
  EXPECT_EQ(r.batch_indices[13].back(), 14 * 8 - 1);
}

// Spends `cpu_ms` of this thread's CPU time in every next() (thread CPU, not wall time, so a
// loaded machine makes it slower, never cheaper).
class CpuBurningSource final : public FakeSource {
 public:
  CpuBurningSource(const LoaderSetting& setting, double cpu_ms)
      : FakeSource(setting), cpu_ms_(cpu_ms) {}
  BatchView next() override {
    const double start = thread_cpu_ms();
    volatile uint64_t sink = 0;
    while (thread_cpu_ms() - start < cpu_ms_) sink = sink + 1;
    return FakeSource::next();
  }

 private:
  static double thread_cpu_ms() {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
  }
  double cpu_ms_;
};

TEST(BenchRun, CpuPerSampleCoversTheTimedBatches) {
  const SourceFactory factory = [](const LoaderSetting& setting) {
    return std::make_unique<CpuBurningSource>(setting, 2.0);
  };
  const ModeResult r = run_mode(Mode::kIo, factory, {2, 3, 8}, small_run());
  // 12 timed batches of 2 ms of CPU each (the 2 warm-up batches are not counted in samples).
  EXPECT_EQ(r.samples, 12 * 8);
  EXPECT_GE(r.cpu_s, 12 * 2e-3);
  const nlohmann::json json = to_json(r, false);
  EXPECT_DOUBLE_EQ(json["cpu_s"].get<double>(), r.cpu_s);
  EXPECT_DOUBLE_EQ(json["cpu_s_per_sample"].get<double>(), r.cpu_s / 96);
  // Compute mode measures no CPU: null, not zero.
  EXPECT_TRUE(to_json(run_mode(Mode::kCompute, fake_factory(), {1, 2, 4}, small_run()),
                      false)["cpu_s_per_sample"]
                  .is_null());
}

TEST(BenchRun, CacheCountersCoverTheTimedTrialsOnly) {
  const SourceFactory factory = [](const LoaderSetting& setting) {
    return std::make_unique<FakeSource>(setting, /*cache=*/true);
  };
  const ModeResult r = run_mode(Mode::kIo, factory, {2, 3, 8}, small_run());
  ASSERT_TRUE(r.cache.has_value());
  // 12 timed batches (2 warm-up batches excluded).
  EXPECT_EQ(r.cache->hits, 36u);
  EXPECT_EQ(r.cache->misses, 12u);
  EXPECT_EQ(r.cache->bytes_from_cache, 3600u);
  EXPECT_EQ(r.cache->bytes_fetched, 1200u);
  EXPECT_EQ(r.cache->discarded, 14u / 4 - 2u / 4);
  const nlohmann::json json = to_json(r, false);
  EXPECT_EQ(json["cache"]["hits"], 36);
  EXPECT_EQ(json["cache"]["bytes_fetched"], 1200);
  EXPECT_FALSE(to_json(run_mode(Mode::kIo, fake_factory(), {2, 3, 8}, small_run()), false)
                   .contains("cache"));  // no cache: no counters
}

TEST(BenchRun, ColdTrialsStartAfterTheEvictionWithNothingReadAhead) {
  std::vector<std::string> events;
  const SourceFactory factory = [&events](const LoaderSetting& setting) {
    events.push_back("create");
    auto source = std::make_unique<FakeSource>(setting);
    source->events_ = &events;
    return source;
  };
  RunOptions run = small_run();
  run.before_trial = [&events] { events.push_back("evict"); };
  run_mode(Mode::kIo, factory, {2, 3, 8}, run);
  // Before the source exists (warm-up reads cold too), then before every trial, each eviction
  // while the source is stopped, its read-ahead dropped.
  const std::vector<std::string> want = {"evict", "create", "stop", "evict", "go on", "stop",
                                         "evict", "go on",  "stop", "evict", "go on"};
  EXPECT_EQ(events, want);
}

TEST(LoaderSource, DiscardingTheReadAheadKeepsTheBatchOrder) {
  loader_testing::PackedFixture f(40);
  auto dataset = std::make_shared<PackedDataset>(
      std::vector<std::pair<std::string, ArrayPtr>>{{"inputs", f.inputs}, {"targets", f.targets}});
  LoaderOptions options;
  options.batch_size = 4;
  options.threads = 2;
  options.prefetch = 3;
  options.shuffle = true;
  options.seed = 5;
  auto order = [&](bool discard) {
    LoaderSource source(dataset, options);
    std::vector<std::vector<int64_t>> batches;
    for (int b = 0; b < 14; ++b) {  // across the end of the first epoch (10 batches)
      if (discard && b % 3 == 1) source.restart_around([] {});
      const BatchView view = source.next();
      batches.emplace_back(view.indices.begin(), view.indices.end());
    }
    return batches;
  };
  EXPECT_EQ(order(true), order(false));
}

TEST(BenchRun, SamplesPerSecondIsConsistentWithSecondsPerBatch) {
  const ModeResult r = run_mode(Mode::kIo, fake_factory(), {1, 2, 4}, small_run());
  // Each trial: samples/s = batch × batches / wall and s/batch = wall / batches, so the fastest
  // trial gives both the largest samples/s and the smallest s/batch, whose product is the batch.
  EXPECT_NEAR(r.samples_per_s.max * r.s_per_batch.min, 4, 1e-9);
  EXPECT_NEAR(r.samples_per_s.min * r.s_per_batch.max, 4, 1e-9);
  EXPECT_NEAR(r.gb_per_s.mean / r.samples_per_s.mean, 100 / 1e9, 1e-15);
}

TEST(BenchRun, FullModeComputesUtilisation) {
  const ModeResult r = run_mode(Mode::kFull, fake_factory(), {1, 2, 4}, small_run());
  EXPECT_GT(r.accelerator_utilisation, 0);
  EXPECT_LE(r.accelerator_utilisation, 1);
  EXPECT_GE(r.breakdown.compute, 0.2e-3);  // the simulated step never returns early
  EXPECT_GE(r.s_per_batch.mean, r.breakdown.compute);
}

TEST(BenchRun, ComputeModeUsesOneCachedBatch) {
  int created = 0;
  const ModeResult r = run_mode(Mode::kCompute, fake_factory(&created), {1, 2, 4}, small_run());
  EXPECT_EQ(created, 1);
  EXPECT_EQ(r.batch_bytes, 400);
  EXPECT_GE(r.s_per_batch.mean, 0.2e-3);
  EXPECT_GT(r.accelerator_utilisation, 0.5);
  EXPECT_TRUE(r.queue.empty());
  EXPECT_EQ(r.time_to_first_batch_s, 0);
}

TEST(BenchRun, RejectsBadOptions) {
  RunOptions run = small_run();
  run.step_ms = 0;
  EXPECT_THROW(run_mode(Mode::kFull, fake_factory(), {1, 2, 4}, run), Error);
  EXPECT_THROW(run_mode(Mode::kCompute, fake_factory(), {1, 2, 4}, run), Error);
  EXPECT_NO_THROW(run_mode(Mode::kIo, fake_factory(), {1, 2, 4}, run));
  run.trials = 0;
  EXPECT_THROW(run_mode(Mode::kIo, fake_factory(), {1, 2, 4}, run), Error);
  EXPECT_EQ(parse_mode("full"), Mode::kFull);
  EXPECT_THROW(parse_mode("fast"), Error);
}

TEST(BenchRun, JsonHasTheDocumentedFields) {
  const ModeResult r = run_mode(Mode::kFull, fake_factory(), {1, 2, 4}, small_run());
  const auto json = to_json(r);
  for (const char* key :
       {"mode", "setting", "trials", "batches_per_trial", "batch_bytes", "samples_per_s",
        "gb_per_s", "s_per_batch", "batch_interval_s", "time_to_first_batch_s", "wall_s",
        "breakdown_s_per_batch", "accelerator_utilisation", "queue", "peak_memory"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json["mode"], "full");
  EXPECT_EQ(json["queue"]["t_s"].size(), 12u);
  EXPECT_EQ(json["queue"]["occupancy"].size(), 12u);
  EXPECT_FALSE(to_json(r, false)["queue"].contains("t_s"));
  EXPECT_GT(json["peak_memory"]["maxrss_bytes"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace chute::bench
