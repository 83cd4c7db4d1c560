// ReadPlan with reads in flight: the same bytes as one read per worker for every kind of chunk
// (gathered, partial blosc blocks, inner chunks of shards, missing chunks), the window bounds
// the reads outstanding, and errors still name the array, chunk key and sample. The stores are
// wrapped in a LatencyStore so that reads overlap measurably (counted, never timed).

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include "chute/array/array.h"
#include "chute/array/array_test_support.h"
#include "chute/array/read_plan.h"
#include "chute/store/counting_store.h"
#include "chute/store/latency_store.h"
#include "chute/store/memory_store.h"

namespace chute {
namespace {

using namespace chute::testing;
using std::chrono::milliseconds;

const std::vector<CodecSpec> kBlosc = {
    bytes_codec(),
    {"blosc", {{"cname", "lz4"}, {"shuffle", "shuffle"}, {"typesize", 4}, {"blocksize", 256}}}};

TEST(ReadsInFlight, SameBytesAsOneReadPerWorker) {
  auto memory = std::make_shared<MemoryStore>();
  auto slow = std::make_shared<LatencyStore>(memory, milliseconds(1));
  // Channel chunks (gathered), blosc chunks read in part by crops, and a missing chunk.
  Coords shape{6, 7, 9, 12};
  const Present present = [](std::span<const int64_t> c) { return !(c[0] == 2 && c[3] == 1); };
  auto channels = make_metadata<float>(shape, {1, 3, 9, 5}, {}, -1.f);
  write_chunks<float>(*memory, "channels", channels, present);
  auto blosc = make_metadata<float>(shape, {2, 7, 9, 12}, kBlosc, -1.f);
  write_chunks<float>(*memory, "blosc", blosc, present);
  Array a(slow, "channels", channels, "channels");
  Array b(slow, "blosc", blosc, "blosc");
  std::mt19937_64 rng(5);
  for (size_t io : {size_t{1}, size_t{4}, size_t{16}}) {
    for (int i = 0; i < 6; ++i) {
      auto [start_a, extent_a] = random_box(rng, shape);
      auto [start_b, extent_b] = random_box(rng, shape);
      std::vector<float> out_a(static_cast<size_t>(element_count(extent_a)), -7.f);
      std::vector<float> out_b(static_cast<size_t>(element_count(extent_b)), -7.f);
      std::vector<float> whole(static_cast<size_t>(element_count(shape)), -7.f);
      ReadPlan plan;
      plan.add(a, start_a, view_of(out_a, extent_a), "sample 0");
      plan.add(b, start_b, view_of(out_b, extent_b), "sample 1");
      plan.add(b, Coords{0, 0, 0, 0}, view_of(whole, shape), "sample 2");
      ThreadPool pool(2);
      std::vector<ReadScratch> scratch;
      ReadStats stats;
      plan.execute(&pool, scratch, &stats, io);
      EXPECT_EQ(plan.last_io_concurrency(), io);
      const Coords chunks_a{1, 3, 9, 5}, chunks_b{2, 7, 9, 12};
      ASSERT_TRUE(
          same_elements(expected_box<float>(start_a, extent_a, chunks_a, -1.f, present), out_a))
          << "io " << io << ", box " << i;
      ASSERT_TRUE(
          same_elements(expected_box<float>(start_b, extent_b, chunks_b, -1.f, present), out_b))
          << "io " << io << ", box " << i;
      ASSERT_TRUE(same_elements(
          expected_box<float>(Coords{0, 0, 0, 0}, shape, chunks_b, -1.f, present), whole));
      EXPECT_GT(stats.bytes_read.load(), 0);
    }
  }
}

TEST(ReadsInFlight, InnerChunksOfShards) {
  auto memory = std::make_shared<MemoryStore>();
  auto slow = std::make_shared<LatencyStore>(memory, milliseconds(1));
  const Coords inner{2, 4};
  for (bool at_end : {false, true}) {
    auto m = make_sharded_metadata<float>({8, 16}, {4, 8}, inner, at_end, -2.f);
    const Present present = [](std::span<const int64_t> c) { return (c[0] + c[1]) % 3 != 0; };
    const std::string prefix = at_end ? "end" : "start";
    write_shards<float>(*memory, prefix, m, inner, at_end, present);
    Array array(slow, prefix, m, prefix);
    std::vector<float> out(8 * 16, -7.f);
    ReadPlan plan;
    plan.add(array, Coords{0, 0}, view_of(out, {8, 16}));
    ThreadPool pool(2);
    std::vector<ReadScratch> scratch;
    plan.execute(&pool, scratch, nullptr, 8);
    EXPECT_TRUE(
        same_elements(expected_box<float>(Coords{0, 0}, Coords{8, 16}, inner, -2.f, present), out))
        << prefix;
  }
}

TEST(ReadsInFlight, TheWindowBoundsTheReadsOutstanding) {
  // 24 chunks that each take 20 ms: a window of 8 keeps several in flight and never more
  // than 8; a window of 1 reads them one per worker at a time.
  auto memory = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({24, 16}, {1, 16});
  write_chunks<float>(*memory, "", m);
  auto slow = std::make_shared<LatencyStore>(memory, milliseconds(20));
  Array array(slow, "", m, "slow");
  for (size_t io : {size_t{1}, size_t{8}}) {
    slow->reset_counts();
    std::vector<float> out(24 * 16);
    ReadPlan plan;
    plan.add(array, Coords{0, 0}, view_of(out, {24, 16}));
    ThreadPool pool(1);
    std::vector<ReadScratch> scratch;
    plan.execute(&pool, scratch, nullptr, io);
    EXPECT_TRUE(
        same_elements(expected_box<float>(Coords{0, 0}, Coords{24, 16}, Coords{1, 16}, 0.f), out));
    EXPECT_EQ(slow->reads(), 24);
    EXPECT_LE(slow->max_in_flight(), static_cast<int64_t>(io));
    if (io == 1) {
      EXPECT_EQ(slow->max_in_flight(), 1);
    } else {
      EXPECT_GE(slow->max_in_flight(), 4);  // the first 8 are submitted before any returns
    }
  }
}

TEST(ReadsInFlight, ErrorsNameArrayKeyAndSampleAndLeaveNothingBehind) {
  auto memory = std::make_shared<MemoryStore>();
  Coords shape{8, 8}, chunks{4, 4};
  auto m = make_metadata<float>(shape, chunks);
  write_chunks<float>(*memory, "data/temp", m);
  memory->set("data/temp/c/1/0", std::vector<std::byte>(10));  // 64 bytes expected
  auto slow = std::make_shared<LatencyStore>(memory, milliseconds(2));
  Array array(slow, "data/temp", m, "data/temp");
  std::vector<float> out(64);
  ReadPlan plan;
  plan.add(array, Coords{0, 0}, view_of(out, {8, 8}), "sample 17");
  for (size_t threads : {0, 2}) {
    ThreadPool pool(threads ? threads : 1);
    std::vector<ReadScratch> scratch;
    try {
      plan.execute(threads ? &pool : nullptr, scratch, nullptr, 4);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kCorruptData) << message;
      EXPECT_NE(message.find("array 'data/temp'"), std::string::npos) << message;
      EXPECT_NE(message.find("chunk 'data/temp/c/1/0'"), std::string::npos) << message;
      EXPECT_NE(message.find("sample 17"), std::string::npos) << message;
    }
    EXPECT_EQ(slow->in_flight(), 0);  // every read completed before execute() returned
  }
}

TEST(ReadsInFlight, AutoUsesTheStorePreference) {
  auto memory = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({4, 4}, {1, 4});
  write_chunks<float>(*memory, "", m);
  std::vector<float> out(16);
  for (int preferred : {1, 12}) {
    Array array(std::make_shared<LatencyStore>(memory, milliseconds(0), preferred), "", m, "a");
    ReadPlan plan;
    plan.add(array, Coords{0, 0}, view_of(out, {4, 4}));
    std::vector<ReadScratch> scratch;
    plan.execute(nullptr, scratch, nullptr);
    EXPECT_EQ(plan.last_io_concurrency(), static_cast<size_t>(preferred));
  }
}

// Fails the submitted reads of the keys in `failing` (kUnavailable) and serves the others from
// the inner store, within the same batch.
class FailingStore final : public Store {
 public:
  explicit FailingStore(StorePtr inner) : inner_(std::move(inner)) {}
  std::set<std::string> failing;

  std::optional<uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  bool read(std::string_view key, ByteBuffer& out) const override { return inner_->read(key, out); }
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override {
    return inner_->read_range(key, offset, out);
  }
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override {
    for (size_t k = 0; k < requests.size(); ++k) {
      if (failing.count(requests[k].key) == 0) {
        // The inner store is a MemoryStore: it completes before submit() returns.
        inner_->submit(requests.subspan(k, 1), [&](size_t, ReadOutcome o) { done(k, o); });
      } else {
        done(k, {ReadStatus::kFailed, 0,
                 std::make_exception_ptr(Error(ErrorCode::kUnavailable, "injected failure"))});
      }
    }
  }
  int preferred_concurrency() const override { return inner_->preferred_concurrency(); }
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return "failing"; }

 private:
  StorePtr inner_;
};

TEST(ReadsInFlight, EachRoundIsOneSubmitPerStore) {
  // Two arrays of 32 chunks on two stores, one decode thread: the first round submits a
  // window of reads in one call, later rounds what completed meanwhile; every read goes
  // through some batch, no batch is larger than the window, and a window holding everything
  // is one call per store.
  auto memory = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({32, 16}, {1, 16});
  write_chunks<float>(*memory, "a", m);
  write_chunks<float>(*memory, "b", m);
  auto counting_a =
      std::make_shared<CountingStore>(std::make_shared<LatencyStore>(memory, milliseconds(2)));
  auto counting_b =
      std::make_shared<CountingStore>(std::make_shared<LatencyStore>(memory, milliseconds(2)));
  Array a(counting_a, "a", m, "a");
  Array b(counting_b, "b", m, "b");
  for (size_t io : {size_t{2}, size_t{8}, size_t{64}}) {
    counting_a->reset();
    counting_b->reset();
    std::vector<float> out_a(32 * 16, -7.f), out_b(32 * 16, -7.f);
    ReadPlan plan;
    plan.add(a, Coords{0, 0}, view_of(out_a, {32, 16}));
    plan.add(b, Coords{0, 0}, view_of(out_b, {32, 16}));
    ThreadPool pool(1);
    std::vector<ReadScratch> scratch;
    plan.execute(&pool, scratch, nullptr, io);
    const auto expected = expected_box<float>(Coords{0, 0}, Coords{32, 16}, Coords{1, 16}, 0.f);
    EXPECT_TRUE(same_elements(expected, out_a)) << "io " << io;
    EXPECT_TRUE(same_elements(expected, out_b)) << "io " << io;
    EXPECT_EQ(counting_a->reads() + counting_a->range_reads() + counting_b->reads() +
                  counting_b->range_reads(),
              64u)
        << "io " << io;
    EXPECT_LE(counting_a->largest_batch(), io) << "io " << io;
    EXPECT_LE(counting_b->largest_batch(), io) << "io " << io;
    if (io == 64) {  // everything fits the window: one round, one call per store
      EXPECT_EQ(counting_a->submits(), 1u);
      EXPECT_EQ(counting_b->submits(), 1u);
      EXPECT_EQ(counting_a->largest_batch(), 32u);
    } else {  // the first round fills the window with reads of a, in one call
      EXPECT_EQ(counting_a->largest_batch(), io);
      EXPECT_LT(counting_a->submits() + counting_b->submits(), 64u) << "io " << io;
    }
  }
}

TEST(ReadsInFlight, AFailureInsideABatchFailsThePlanAndTheRestStillCompletes) {
  auto memory = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({16, 16}, {1, 16});
  write_chunks<float>(*memory, "x", m);
  auto failing = std::make_shared<FailingStore>(memory);
  auto slow = std::make_shared<LatencyStore>(failing, milliseconds(2));
  auto counting = std::make_shared<CountingStore>(slow);
  Array array(counting, "x", m, "x");
  std::vector<float> out(16 * 16, -7.f);
  ReadPlan plan;
  plan.add(array, Coords{0, 0}, view_of(out, {16, 16}), "sample 3");
  const auto expected = expected_box<float>(Coords{0, 0}, Coords{16, 16}, Coords{1, 16}, 0.f);
  for (const char* key : {"x/c/0/0", "x/c/5/0", "x/c/15/0"}) {  // first, middle, last of a batch
    failing->failing = {key};
    counting->reset();
    ThreadPool pool(2);
    std::vector<ReadScratch> scratch;
    try {
      plan.execute(&pool, scratch, nullptr, 16);
      FAIL() << "expected an error for " << key;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << message;
      EXPECT_NE(message.find(std::string("chunk '") + key + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("sample 3"), std::string::npos) << message;
    }
    EXPECT_EQ(slow->in_flight(), 0) << key;  // every read of the batch completed first
    EXPECT_EQ(counting->submits(), 1u) << key;
    EXPECT_EQ(counting->largest_batch(), 16u) << key;
    // The same plan without the failure reads exact bytes.
    failing->failing.clear();
    std::fill(out.begin(), out.end(), -7.f);
    plan.execute(&pool, scratch, nullptr, 16);
    EXPECT_TRUE(same_elements(expected, out)) << key;
  }
}

}  // namespace
}  // namespace chute
