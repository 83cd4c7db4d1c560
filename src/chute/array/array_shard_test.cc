// Reading sharded arrays through partial reads: the shard index (at the start or the end) is
// read once per shard and cached, only the inner chunks a box needs are fetched, and empty inner
// chunks and missing shards read as the fill value.

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "chute/array/array.h"
#include "chute/array/array_test_support.h"
#include "chute/array/read_scratch.h"
#include "chute/store/counting_store.h"
#include "chute/store/memory_store.h"
#include "chute/util/thread_pool.h"

namespace chute {
namespace {

using namespace chute::testing;

struct Sharded {
  std::shared_ptr<MemoryStore> memory = std::make_shared<MemoryStore>();
  std::shared_ptr<CountingStore> counting = std::make_shared<CountingStore>(memory, true);
  ArrayMetadata metadata;
  std::unique_ptr<Array> array;
};

Sharded make_sharded(Coords shape, Coords shard, Coords inner, bool index_at_end, float fill,
                     const Present& present) {
  Sharded s;
  s.metadata = make_sharded_metadata<float>(shape, shard, inner, index_at_end, fill);
  write_shards<float>(*s.memory, "sharded", s.metadata, inner, index_at_end, present);
  s.array = std::make_unique<Array>(s.counting, "sharded", s.metadata, "sharded/var");
  return s;
}

TEST(ArrayShard, ReadChunkShapeIsTheInnerChunkShape) {
  Sharded s = make_sharded({20, 30}, {10, 15}, {5, 5}, true, 0.f, all_present);
  EXPECT_EQ(s.array->read_chunk_shape(), (Coords{5, 5}));
  EXPECT_EQ(s.array->read_grid_shape(), (Coords{4, 6}));
  EXPECT_EQ(s.array->storage_key(Coords{3, 4}), "sharded/c/1/1");
}

TEST(ArrayShard, WholeArraysAndRandomBoxesWithIndexAtStartAndEnd) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Some inner chunks empty; shard (1, 1) has none and so is not stored at all.
  Present present = [](std::span<const int64_t> c) {
    if (c[0] >= 2 && c[1] >= 3) return false;
    return (c[0] * 7 + c[1]) % 4 != 1;
  };
  std::mt19937_64 rng(9);
  for (bool at_end : {true, false}) {
    Coords shape{19, 28}, inner{5, 5};
    Sharded s = make_sharded(shape, {10, 15}, inner, at_end, nan, present);
    EXPECT_FALSE(s.memory->size("sharded/c/1/1").has_value());
    EXPECT_TRUE(same_elements(expected_box<float>(Coords{0, 0}, shape, inner, nan, present),
                              read_box<float>(*s.array, Coords{0, 0}, shape)))
        << "index at " << (at_end ? "end" : "start");
    for (int i = 0; i < 50; ++i) {
      auto [start, box] = random_box(rng, shape);
      ASSERT_TRUE(same_elements(expected_box<float>(start, box, inner, nan, present),
                                read_box<float>(*s.array, start, box)))
          << "box " << i;
    }
  }
}

TEST(ArrayShard, ThreeDimensionalShardsOnAPool) {
  Coords shape{6, 9, 10}, inner{2, 3, 5};
  Present present = [](std::span<const int64_t> c) { return c[2] == 0 || c[0] != 1; };
  Sharded s = make_sharded(shape, {4, 6, 10}, inner, true, -2.f, present);
  ThreadPool pool(4);
  std::mt19937_64 rng(4);
  for (int i = 0; i < 30; ++i) {
    auto [start, box] = random_box(rng, shape);
    ASSERT_TRUE(same_elements(expected_box<float>(start, box, inner, -2.f, present),
                              read_box<float>(*s.array, start, box, &pool)));
  }
}

TEST(ArrayShard, PartialReadFetchesTheIndexOnceAndOnlyNeededInnerChunks) {
  Sharded s = make_sharded({20, 20}, {10, 10}, {5, 5}, true, 0.f, all_present);
  const uint64_t index_nbytes = 4 * 16;
  // Uncompressed inner chunks are read in part, like whole chunks: just the byte range from
  // the box's first element in the inner chunk to its last, (row 1, col 1) to (row 3, col 3).
  const uint64_t inner_nbytes = ((3 * 5 + 3 + 1) - (1 * 5 + 1)) * 4;
  ReadStats stats;
  // Inside inner chunk (0, 1) of shard (0, 0): the index, then part of that inner chunk.
  EXPECT_TRUE(same_elements(expected_box<float>(Coords{1, 6}, Coords{3, 3}, Coords{5, 5}, 0.f),
                            read_box<float>(*s.array, Coords{1, 6}, {3, 3}, nullptr, &stats)));
  EXPECT_EQ(s.counting->reads(), 0u);
  EXPECT_EQ(s.counting->range_reads(), 2u);
  EXPECT_EQ(s.counting->bytes_read(), index_nbytes + inner_nbytes);
  EXPECT_EQ(stats.bytes_read.load(), static_cast<int64_t>(index_nbytes + inner_nbytes));
  // Another inner chunk of the same shard: the cached index is reused.
  s.counting->reset();
  read_box<float>(*s.array, Coords{6, 6}, {2, 2});
  EXPECT_EQ(s.counting->range_reads(), 1u);
  EXPECT_EQ(s.counting->bytes_read(), ((2 * 5 + 2 + 1) - (1 * 5 + 1)) * 4u);
  // Inner chunks (0..1, 1..2): two in the cached shard (0, 0), two in shard (0, 1) whose index
  // is read first.
  s.counting->reset();
  EXPECT_TRUE(same_elements(expected_box<float>(Coords{4, 8}, Coords{2, 4}, Coords{5, 5}, 0.f),
                            read_box<float>(*s.array, Coords{4, 8}, {2, 4})));
  EXPECT_EQ(s.counting->range_reads(), 1u + 4u);
}

TEST(ArrayShard, EmptyInnerChunksAndMissingShardsReadNothingMore) {
  Present present = [](std::span<const int64_t> c) { return c[0] == 0 && c[1] == 0; };
  Sharded s = make_sharded({20, 20}, {10, 10}, {5, 5}, false, 4.f, present);
  ReadStats stats;
  auto out = read_box<float>(*s.array, Coords{5, 5}, {10, 10}, nullptr, &stats);
  EXPECT_EQ(out, std::vector<float>(100, 4.f));
  // Shard (0, 0) exists: its index is read; its inner chunk (1, 1) is empty. The rest: no shard.
  EXPECT_EQ(s.counting->range_reads(), 1u);
  EXPECT_EQ(stats.missing_chunks.load(), 4);
}

TEST(ArrayShard, IndexPointingPastTheEndIsCorruptData) {
  Sharded s = make_sharded({10, 10}, {10, 10}, {5, 5}, true, 0.f, all_present);
  ByteBuffer shard;
  ASSERT_TRUE(s.memory->read("sharded/c/0/0", shard));
  std::vector<std::byte> bytes(shard.data(), shard.data() + shard.size());
  const uint64_t bad_offset = 1 << 20;
  std::memcpy(&bytes[bytes.size() - 64 + 16], &bad_offset, 8);  // entry 1's offset
  s.memory->set("sharded/c/0/0", std::move(bytes));
  std::vector<float> out(100);
  try {
    s.array->read(Coords{0, 0},
                  StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {10, 10}, 4));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData) << e.what();
    EXPECT_NE(std::string(e.what()).find("sharded/var"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sharded/c/0/0"), std::string::npos) << e.what();
  }
}

TEST(ArrayShard, ShardShorterThanItsIndexIsCorruptData) {
  Sharded s = make_sharded({10, 10}, {10, 10}, {5, 5}, true, 0.f, all_present);
  s.memory->set("sharded/c/0/0", std::vector<std::byte>(20));
  std::vector<float> out(4);
  try {
    s.array->read(Coords{0, 0},
                  StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {2, 2}, 4));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData) << e.what();
    EXPECT_NE(std::string(e.what()).find("sharded/c/0/0"), std::string::npos) << e.what();
  }
}

TEST(ArrayShard, ChecksummedIndexWrittenByTheEncoder) {
  // Shards encoded by chute's own sharding encoder with a crc32c-protected index.
  Coords shape{12, 10}, shard{6, 10}, inner{3, 5};
  auto m = make_sharded_metadata<float>(shape, shard, inner, true, 0.f, /*crc=*/true);
  auto memory = std::make_shared<MemoryStore>();
  write_chunks<float>(*memory, "", m);
  Array array(memory, "", m, "crc");
  ASSERT_NE(array.codecs().sharding(), nullptr);
  std::mt19937_64 rng(8);
  for (int i = 0; i < 20; ++i) {
    auto [start, box] = random_box(rng, shape);
    // The generator writes each shard as one chunk, so compare against shard-sized chunks.
    ASSERT_TRUE(same_elements(expected_box<float>(start, box, shard, 0.f),
                              read_box<float>(array, start, box)));
  }
}

}  // namespace
}  // namespace chute
