// The Loader under absurd options, stuck storage, other threads, fork() and long runs: every
// case ends with a clear error or a clean stop, never a hang (waits below are hang guards of a
// minute, never speed thresholds).

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "chute/dataset/packed_dataset.h"
#include "chute/pipeline/loader.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/error.h"
#include "chute/util/error_test_util.h"
#include "chute/util/fork_test_util.h"
#include "chute/util/thread_pool.h"

namespace chute {
namespace {

using chute::testing::message_of;

using namespace chute::loader_testing;
using namespace std::chrono_literals;

constexpr auto kHangGuard = 60s;

using chute::testing::in_forked_child;
using chute::testing::kSanitized;

LoaderOptions reliability_options(int64_t batch_size) {
  LoaderOptions o;
  o.batch_size = batch_size;
  o.threads = 2;
  o.prefetch = 2;
  o.seed = 7;
  return o;
}

void expect_mentions(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST(LoaderOptions, BatchLargerThanTheDatasetIsAnErrorUnlessPaddingIsAsked) {
  PackedFixture f(16);
  LoaderOptions o = reliability_options(32);
  expect_mentions(message_of([&] { Loader(packed_dataset(f), o); }, ErrorCode::kInvalidArgument),
                  {"batch_size=32", "16 samples", "pad_to_batch"});
  o.batch_size = 8;
  o.world_size = 4;
  expect_mentions(message_of([&] { Loader(packed_dataset(f), o); }, ErrorCode::kInvalidArgument),
                  {"batch_size=8", "world_size=4", "at most 4"});
  o = reliability_options(32);
  o.drop_last = true;
  expect_mentions(message_of([&] { Loader(packed_dataset(f), o); }, ErrorCode::kInvalidArgument),
                  {"no batch would ever be produced"});
  o = reliability_options(32);
  o.pad_to_batch = true;  // asked for: one batch, half of it padding
  Loader loader(packed_dataset(f), o);
  ASSERT_EQ(loader.batches_per_epoch(), 1);
  loader.begin_epoch();
  auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->padding, 16);
}

TEST(LoaderOptions, AbsurdCountsNameTheOption) {
  PackedFixture f(16);
  LoaderOptions o = reliability_options(4);
  o.threads = max_reader_threads() + 1;
  expect_mentions(message_of([&] { Loader(packed_dataset(f), o); }, ErrorCode::kInvalidArgument),
                  {"threads = ", "is outside [0, "});
  o = reliability_options(4);
  o.prefetch = 5000;
  expect_mentions(message_of([&] { Loader(packed_dataset(f), o); }, ErrorCode::kInvalidArgument),
                  {"prefetch = 5000 is outside [1, 4096]"});
  o = reliability_options(int64_t{1} << 50);
  o.pad_to_batch = true;
  expect_mentions(message_of([&] { Loader(packed_dataset(f), o); }, ErrorCode::kInvalidArgument),
                  {"batch_size=1125899906842624", "memory"});
  o = reliability_options(4);
  o.timeout_s = -1;
  expect_mentions(message_of([&] { Loader(packed_dataset(f), o); }, ErrorCode::kInvalidArgument),
                  {"timeout"});
}

TEST(LoaderState, TakenAtAnEpochsEndResumesAtTheNextEpochsFirstBatch) {
  PackedFixture f(12);
  Loader loader(packed_dataset(f), reliability_options(4));
  loader.begin_epoch(3);
  int batches = 0;
  while (loader.next()) ++batches;
  ASSERT_EQ(batches, 3);
  const SamplerState saved = loader.state();
  EXPECT_EQ(saved.epoch, 4);
  EXPECT_EQ(saved.next_batch, 0);

  Loader resumed(packed_dataset(f), reliability_options(4));
  resumed.restore(saved);
  resumed.begin_epoch();
  std::vector<std::vector<int64_t>> got;
  while (auto batch = resumed.next()) got.push_back(batch->indices);
  ASSERT_EQ(got.size(), 3u);  // a whole epoch, not an empty one
  EXPECT_EQ(got.front(), resumed.sampler().batch(4, 0));

  // A state from older code, pointing past the last batch, resumes the same way.
  Loader old(packed_dataset(f), reliability_options(4));
  old.restore(SamplerState{7, 3, 3});
  EXPECT_EQ(old.state().epoch, 4);
  EXPECT_EQ(old.state().next_batch, 0);
}

TEST(LoaderState, StateOfAnotherRunIsRefused) {
  PackedFixture f(16), g(20);
  Loader source(packed_dataset(f), reliability_options(4));
  source.begin_epoch(0);
  ASSERT_TRUE(source.next().has_value());
  const SamplerState saved = source.state();

  Loader other_batch(packed_dataset(f), reliability_options(2));
  expect_mentions(message_of([&] { other_batch.restore(saved); }, ErrorCode::kInvalidArgument),
                  {"batch_size 4", "batch_size 2"});
  LoaderOptions o = reliability_options(4);
  o.world_size = 2;
  Loader other_world(packed_dataset(f), o);
  expect_mentions(message_of([&] { other_world.restore(saved); }, ErrorCode::kInvalidArgument),
                  {"world_size 1", "world_size 2"});
  Loader other_data(packed_dataset(g), reliability_options(4));
  expect_mentions(message_of([&] { other_data.restore(saved); }, ErrorCode::kInvalidArgument),
                  {"another dataset"});
  Loader same(packed_dataset(f), reliability_options(4));
  EXPECT_NO_THROW(same.restore(saved));
}

/// A store whose reads of chunk keys block until released: storage that hangs.
class StuckStore final : public Store {
 public:
  explicit StuckStore(StorePtr inner) : inner_(std::move(inner)) {}
  std::optional<uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  bool read(std::string_view key, ByteBuffer& out) const override {
    wait(key);
    return inner_->read(key, out);
  }
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override {
    wait(key);
    return inner_->read_range(key, offset, out);
  }
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return "stuck"; }

  void block() {
    std::lock_guard lock(mutex_);
    blocked_ = true;
  }
  void release() {
    std::lock_guard lock(mutex_);
    blocked_ = false;
    cv_.notify_all();
  }
  /// Waits until a reader is stuck.
  bool wait_for_stuck_reader() const {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kHangGuard, [&] { return waiting_ > 0; });
  }
  bool blocked() const {
    std::lock_guard lock(mutex_);
    return blocked_;
  }

 private:
  void wait(std::string_view key) const {
    if (key.find(".z") != std::string_view::npos) return;  // metadata
    std::unique_lock lock(mutex_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !blocked_; });
    --waiting_;
  }
  StorePtr inner_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  mutable int waiting_ = 0;
  bool blocked_ = false;
};

struct StuckFixture {
  PackedFixture data{8};
  std::shared_ptr<StuckStore> store = std::make_shared<StuckStore>(data.store);
  DatasetPtr dataset;
  StuckFixture() {
    auto reopen = [&](const ArrayPtr& a) {
      return std::make_shared<Array>(store, a->name(), a->metadata(), a->name());
    };
    dataset = std::make_shared<PackedDataset>(std::vector<std::pair<std::string, ArrayPtr>>{
        {"inputs", reopen(data.inputs)}, {"targets", reopen(data.targets)}});
    store->block();
  }
};

TEST(LoaderStuckRead, TimeoutThrowsInsteadOfWaitingForever) {
  StuckFixture f;
  LoaderOptions o = reliability_options(4);
  o.timeout_s = 0.2;
  Loader loader(f.dataset, o);
  loader.begin_epoch();
  expect_mentions(message_of([&] { loader.next(); }, ErrorCode::kTimeout),
                  {"timeout=0.2s", "epoch 0, batch 0"});
  f.store->release();  // the read returns; the loader then joins its threads cleanly
}

TEST(LoaderStuckRead, StopFromAnotherThreadEndsTheWaitingConsumer) {
  StuckFixture f;
  Loader loader(f.dataset, reliability_options(4));
  loader.begin_epoch();
  auto consumer = std::async(std::launch::async, [&] { return loader.next().has_value(); });
  ASSERT_TRUE(f.store->wait_for_stuck_reader());
  auto stopper = std::async(std::launch::async, [&] { loader.stop(); });
  ASSERT_EQ(consumer.wait_for(kHangGuard), std::future_status::ready);
  EXPECT_FALSE(consumer.get());  // the end, while the read is still stuck
  EXPECT_TRUE(f.store->blocked());
  f.store->release();  // then the producer leaves and stop() joins it
  ASSERT_EQ(stopper.wait_for(kHangGuard), std::future_status::ready);
}

TEST(LoaderStuckRead, WaitReturnsWhileTheReadIsStuck) {
  StuckFixture f;
  Loader loader(f.dataset, reliability_options(4));
  loader.begin_epoch();
  EXPECT_FALSE(loader.wait(50ms));
  f.store->release();
  while (!loader.wait(kHangGuard)) {
  }
  EXPECT_TRUE(loader.next().has_value());
}

TEST(LoaderStats, OccupancyStaysBoundedOverLongRuns) {
  PackedFixture f(64);
  LoaderOptions o = reliability_options(1);
  o.threads = 1;
  Loader loader(packed_dataset(f), o);
  int64_t batches = 0;
  while (batches < 70'000) {
    loader.begin_epoch();
    while (loader.next()) ++batches;
  }
  const LoaderStats stats = loader.stats();
  EXPECT_EQ(stats.batches, batches);
  EXPECT_LE(stats.occupancy.size(), size_t{1} << 16);
  EXPECT_GE(stats.occupancy.size(), size_t{1} << 14);  // still spans the run
  EXPECT_GT(stats.occupancy.back().time_ns, 0);
}

TEST(LoaderFork, ChildGetsAClearErrorNotADeadlock) {
  if (kSanitized) GTEST_SKIP() << "sanitizers do not support fork() of a threaded process";
  PackedFixture f(16);
  auto loader = std::make_unique<Loader>(packed_dataset(f), reliability_options(4));
  loader->begin_epoch();
  ASSERT_TRUE(loader->next().has_value());  // threads run, a batch waits in the queue
  const int status = in_forked_child([&] {
    try {
      loader->next();
      return 1;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported) return 2;
      if (std::string(e.what()).find("fork()") == std::string::npos) return 3;
    }
    loader.reset();  // the destructor must not wait for the parent's threads
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(loader->next().has_value());  // the parent's loader goes on
}

TEST(ThreadPoolLimits, OsRefusingAThreadIsAClearError) {
  if (kSanitized) GTEST_SKIP() << "sanitizers reserve terabytes of address space: no RLIMIT_AS";
  const int status = in_forked_child([] {
    // An address space too small for more thread stacks (works as root, unlike ulimit -u).
    struct rlimit limit;
    ::getrlimit(RLIMIT_AS, &limit);
    std::FILE* statm = std::fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (statm == nullptr || std::fscanf(statm, "%lu", &pages) != 1) return 4;
    std::fclose(statm);
    limit.rlim_cur = pages * ::sysconf(_SC_PAGESIZE) + (64 << 20);
    if (::setrlimit(RLIMIT_AS, &limit) != 0) return 5;
    try {
      // 1024 stacks of 8 MiB do not fit in 64 MiB more, even with the stacks glibc keeps
      // cached from exited threads (with 64, a run after the other tests had them started).
      ThreadPool pool(1024);
      return 1;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kIoError) return 2;
      if (std::string(e.what()).find("the OS refused a thread") == std::string::npos) return 3;
    }
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace chute
