// Planning reads of many boxes: duplicate chunks are read once, targets land in the right
// places, and errors name the array, the chunk key and the sample.

#include "chute/array/read_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "chute/array/array.h"
#include "chute/array/array_test_support.h"
#include "chute/store/counting_store.h"
#include "chute/store/memory_store.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

using chute::testing::message_of;

using namespace chute::testing;

struct Fixture {
  std::shared_ptr<MemoryStore> memory = std::make_shared<MemoryStore>();
  std::shared_ptr<CountingStore> counting = std::make_shared<CountingStore>(memory, true);
};

TEST(ReadPlan, SharedChunksAreReadOnce) {
  Fixture f;
  Coords shape{20, 20}, chunks{5, 5};
  auto m = make_metadata<float>(shape, chunks);
  write_chunks<float>(*f.memory, "", m);
  Array array(f.counting, "", m, "shared");

  // Boxes [2:8, 3:9] and [4:10, 6:12] touch chunks {0,1}x{0,1} and {0,1}x{1,2}: 6 distinct.
  std::vector<float> a(36), b(36);
  ReadPlan plan;
  plan.add(array, Coords{2, 3}, view_of(a, {6, 6}), "sample 0");
  plan.add(array, Coords{4, 6}, view_of(b, {6, 6}), "sample 1");
  EXPECT_EQ(plan.task_count(), 6u);
  std::vector<ReadScratch> scratch;
  ThreadPool pool(2);
  plan.execute(&pool, scratch, nullptr);
  // Each chunk read once, whole or (boxes covering part of it) as the range they need.
  EXPECT_EQ(f.counting->reads() + f.counting->range_reads(), 6u);
  auto keys = f.counting->logged_keys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::unique(keys.begin(), keys.end()), keys.end());
  EXPECT_TRUE(same_elements(expected_box<float>(Coords{2, 3}, Coords{6, 6}, chunks, 0.f), a));
  EXPECT_TRUE(same_elements(expected_box<float>(Coords{4, 6}, Coords{6, 6}, chunks, 0.f), b));
}

TEST(ReadPlan, ManySamplesOfOneChunkDecodeOnceIntoEach) {
  // Whole-chunk boxes requested by several samples: one read, one decode straight into the
  // first destination, copies into the others.
  Fixture f;
  Coords shape{4, 8, 8}, chunks{1, 8, 8};
  auto m = make_metadata<float>(shape, chunks);
  write_chunks<float>(*f.memory, "", m);
  Array array(f.counting, "", m, "samples");
  std::vector<float> batch(4 * 64);
  ReadPlan plan;
  const int64_t picks[] = {2, 0, 2, 2};
  for (int64_t s = 0; s < 4; ++s) {
    StridedView slot = view_of(batch, {1, 8, 8});
    slot.data += s * 64 * sizeof(float);
    plan.add(array, Coords{picks[s], 0, 0}, slot, fmt::format("sample {}", s));
  }
  EXPECT_EQ(plan.task_count(), 2u);
  std::vector<ReadScratch> scratch(1);
  ReadStats stats;
  plan.execute(nullptr, scratch, &stats);
  EXPECT_EQ(f.counting->reads(), 2u);
  EXPECT_EQ(stats.bytes_decoded.load(), 2 * 64 * 4);
  for (int64_t s = 0; s < 4; ++s) {
    std::vector<float> slot(batch.begin() + s * 64, batch.begin() + (s + 1) * 64);
    EXPECT_TRUE(same_elements(
        expected_box<float>(Coords{picks[s], 0, 0}, Coords{1, 8, 8}, chunks, 0.f), slot))
        << "sample " << s;
  }
}

TEST(ReadPlan, SeveralArraysInOnePlan) {
  Fixture f;
  auto m1 = make_metadata<float>({8, 8}, {4, 4});
  auto m2 = make_metadata<float>({8, 8}, {4, 4}, {}, 9.f);
  write_chunks<float>(*f.memory, "one", m1);
  Array one(f.counting, "one", m1, "one");
  Array two(f.counting, "two", m2, "two");  // nothing stored: all fill
  std::vector<float> a(16), b(16);
  ReadPlan plan;
  plan.add(one, Coords{2, 2}, view_of(a, {4, 4}));
  plan.add(two, Coords{2, 2}, view_of(b, {4, 4}));
  EXPECT_EQ(plan.task_count(), 8u);
  std::vector<ReadScratch> scratch;
  plan.execute(nullptr, scratch);
  EXPECT_TRUE(same_elements(expected_box<float>(Coords{2, 2}, Coords{4, 4}, Coords{4, 4}, 0.f), a));
  EXPECT_EQ(b, std::vector<float>(16, 9.f));
  plan.clear();
  EXPECT_EQ(plan.task_count(), 0u);
}

TEST(ReadPlan, BoxOutsideTheArrayIsOutOfRange) {
  auto m = make_metadata<float>({10, 12}, {5, 5});
  Array array(std::make_shared<MemoryStore>(), "", m, "era5/t2m");
  std::vector<float> out(100);
  for (Coords start : {Coords{6, 0}, Coords{-1, 0}, Coords{0, 3}}) {
    std::string message = message_of(
        [&] {
          array.read(start, view_of(out, {5, 10}));
        },
        ErrorCode::kOutOfRange);
    EXPECT_NE(message.find("era5/t2m"), std::string::npos) << message;
    EXPECT_NE(message.find("[10, 12]"), std::string::npos) << message;
  }
  std::string message = message_of(
      [&] {
        array.read(Coords{6, 0}, view_of(out, {5, 10}));
      },
      ErrorCode::kOutOfRange);
  EXPECT_NE(message.find("[6:11, 0:10]"), std::string::npos) << message;
  message_of([&] { array.read(Coords{0}, view_of(out, {5})); }, ErrorCode::kInvalidArgument);
}

TEST(ReadPlan, EmptyBoxReadsNothing) {
  Fixture f;
  auto m = make_metadata<float>({10, 12}, {5, 5});
  Array array(f.counting, "", m, "a");
  std::vector<float> out(1);
  array.read(Coords{10, 3}, view_of(out, {0, 4}));
  EXPECT_EQ(f.counting->reads(), 0u);
}

TEST(ReadPlan, TruncatedChunkNamesArrayKeyAndSample) {
  Fixture f;
  Coords shape{8, 8}, chunks{4, 4};
  auto m = make_metadata<float>(shape, chunks);
  write_chunks<float>(*f.memory, "data/temp", m);
  f.memory->set("data/temp/c/1/0", std::vector<std::byte>(10));  // 64 bytes expected
  Array array(f.counting, "data/temp", m, "data/temp");
  std::vector<float> out(64);
  ReadPlan plan;
  plan.add(array, Coords{0, 0}, view_of(out, {8, 8}), "sample 17");
  for (size_t threads : {0, 2}) {
    ThreadPool pool(threads ? threads : 1);
    std::vector<ReadScratch> scratch;
    std::string message = message_of([&] { plan.execute(threads ? &pool : nullptr, scratch); },
                                     ErrorCode::kCorruptData);
    EXPECT_NE(message.find("array 'data/temp'"), std::string::npos) << message;
    EXPECT_NE(message.find("chunk 'data/temp/c/1/0'"), std::string::npos) << message;
    EXPECT_NE(message.find("sample 17"), std::string::npos) << message;
  }
}

TEST(ReadPlan, ScratchIsReusedWithoutGrowth) {
  Fixture f;
  Coords shape{16, 16}, chunks{4, 4};
  auto m = make_metadata<float>(shape, chunks);
  write_chunks<float>(*f.memory, "", m);
  Array array(f.memory, "", m, "a");
  std::vector<float> out(9);
  std::vector<ReadScratch> scratch(1);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 50; ++i) {
    Coords start{int64_t(rng() % 13), int64_t(rng() % 13)};
    ReadPlan plan;
    plan.add(array, start, view_of(out, {3, 3}));
    plan.execute(nullptr, scratch);
    ASSERT_TRUE(same_elements(expected_box<float>(start, Coords{3, 3}, chunks, 0.f), out));
  }
  // Chunks of 64 bytes: every buffer stays at its first (smallest) allocation.
  EXPECT_LE(scratch[0].staging.capacity(), 4096u);
  EXPECT_LE(scratch[0].gather.capacity(), 4096u);
  EXPECT_LE(scratch[0].encoded.capacity(), 4096u);
  EXPECT_GT(scratch[0].staging.capacity() + scratch[0].gather.capacity(), 0u);
}

TEST(ReadPlan, ChannelSplitChunksAreGatheredIntoChannelsLastSamples) {
  // W1's layout: channels last, chunks of a few channels. Partial edge chunks on two axes, a
  // missing chunk (fill value), a sample asked for twice (its chunks then have two targets)
  // and several thread counts must all land exactly.
  Fixture f;
  Coords shape{6, 7, 9, 12}, chunks{1, 3, 9, 5};
  const Present present = [](std::span<const int64_t> c) { return !(c[0] == 2 && c[3] == 1); };
  auto m = make_metadata<float>(shape, chunks, {}, -1.f);
  write_chunks<float>(*f.memory, "", m, present);
  Array array(f.counting, "", m, "inputs");
  const int64_t sample_elements = 7 * 9 * 12;
  const int64_t picks[] = {2, 5, 0, 2};
  for (size_t threads : {1, 2, 3}) {
    std::vector<float> batch(4 * sample_elements, -7.f);
    ReadPlan plan;
    for (int64_t s = 0; s < 4; ++s) {
      StridedView slot = view_of(batch, {1, 7, 9, 12});
      slot.data += s * sample_elements * sizeof(float);
      plan.add(array, Coords{picks[s], 0, 0, 0}, slot, fmt::format("sample {}", s));
    }
    EXPECT_EQ(plan.task_count(), 3u * 3u * 3u);  // 3 samples × 3 row chunks × 3 channel chunks
    EXPECT_EQ(plan.gathered_task_count(), plan.task_count());
    EXPECT_EQ(plan.work_item_count(), 3u * 3u);
    ThreadPool pool(threads);
    std::vector<ReadScratch> scratch;
    ReadStats stats;
    plan.execute(&pool, scratch, &stats);
    EXPECT_EQ(stats.missing_chunks.load(), 3);
    for (int64_t s = 0; s < 4; ++s) {
      std::vector<float> slot(batch.begin() + s * sample_elements,
                              batch.begin() + (s + 1) * sample_elements);
      EXPECT_TRUE(same_elements(expected_box<float>(Coords{picks[s], 0, 0, 0}, Coords{1, 7, 9, 12},
                                                    chunks, -1.f, present),
                                slot))
          << "sample " << s << ", " << threads << " threads";
    }
  }
}

TEST(ReadPlan, GatherHandlesBoxesStartingInsideAChunk) {
  Fixture f;
  Coords shape{5, 40, 30}, chunks{2, 16, 4};
  auto m = make_metadata<float>(shape, chunks);
  write_chunks<float>(*f.memory, "", m);
  Array array(f.memory, "", m, "a");
  std::mt19937_64 rng(11);
  ThreadPool pool(2);
  for (int i = 0; i < 40; ++i) {
    auto [start, extent] = random_box(rng, shape);
    std::vector<float> out(static_cast<size_t>(element_count(extent)));
    ReadPlan plan;
    plan.add(array, start, view_of(out, extent));
    std::vector<ReadScratch> scratch;
    plan.execute(&pool, scratch);
    ASSERT_TRUE(same_elements(expected_box<float>(start, extent, chunks, 0.f), out)) << "box " << i;
  }
}

TEST(ReadPlan, WideChunksAreNotGathered) {
  // Runs of whole rows are long: each chunk is placed on its own, in parallel.
  Fixture f;
  auto m = make_metadata<float>({4, 8, 512}, {1, 8, 256});
  write_chunks<float>(*f.memory, "", m);
  Array array(f.memory, "", m, "a");
  std::vector<float> out(4 * 8 * 512);
  ReadPlan plan;
  plan.add(array, Coords{0, 0, 0}, view_of(out, {4, 8, 512}));
  EXPECT_EQ(plan.gathered_task_count(), 0u);
  EXPECT_EQ(plan.work_item_count(), plan.task_count());
}

}  // namespace
}  // namespace chute
