// Reading boxes of regular (unsharded) arrays: whole arrays and random boxes from 0-D to 5-D,
// partial edge chunks, missing chunks, strided destinations, transposed chains, thread counts.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "chute/array/array.h"
#include "chute/array/array_test_support.h"
#include "chute/array/read_plan.h"
#include "chute/store/counting_store.h"
#include "chute/store/memory_store.h"

namespace chute {
namespace {

using namespace chute::testing;

struct Case {
  Coords shape;
  Coords chunks;
};

// Shapes that leave partial edge chunks in most dimensions.
const Case kCases[] = {
    {{37}, {8}},
    {{10, 13}, {4, 5}},
    {{6, 7, 9}, {3, 4, 4}},
    {{5, 4, 6, 7}, {2, 3, 6, 3}},
    {{3, 4, 5, 6, 7}, {2, 2, 3, 4, 3}},
    {{9, 9}, {9, 9}},  // one chunk
    {{4, 100}, {1, 100}},
};

template <typename T>
Array make_array(const ArrayMetadata& m, const Present& present = all_present,
                 const std::string& prefix = "") {
  auto store = std::make_shared<MemoryStore>();
  write_chunks<T>(*store, prefix, m, present);
  return Array(store, prefix, m, "test/array");
}

TEST(ArrayRead, WholeArraysFrom1DTo5D) {
  for (const Case& c : kCases) {
    auto m = make_metadata<float>(c.shape, c.chunks);
    Array array = make_array<float>(m);
    Coords origin(c.shape.size(), 0);
    auto actual = read_box<float>(array, origin, c.shape);
    EXPECT_TRUE(same_elements(expected_box<float>(origin, c.shape, c.chunks, 0.f), actual))
        << "rank " << c.shape.size();
  }
}

TEST(ArrayRead, RandomBoxesFrom1DTo5D) {
  std::mt19937_64 rng(1234);
  for (const Case& c : kCases) {
    auto m = make_metadata<int32_t>(c.shape, c.chunks);
    Array array = make_array<int32_t>(m, all_present, "group/var");
    for (int i = 0; i < 60; ++i) {
      auto [start, shape] = random_box(rng, c.shape);
      auto actual = read_box<int32_t>(array, start, shape);
      ASSERT_TRUE(same_elements(expected_box<int32_t>(start, shape, c.chunks, 0), actual))
          << "rank " << c.shape.size() << " box " << i;
    }
  }
}

TEST(ArrayRead, OtherDataTypes) {
  std::mt19937_64 rng(5);
  Coords shape{11, 6}, chunks{4, 4};
  auto m8 = make_metadata<uint8_t>(shape, chunks, {}, uint8_t{0});
  auto m16 = make_metadata<int16_t>(shape, chunks, {}, int16_t{-1});
  auto m64 = make_metadata<double>(shape, chunks, {}, 2.5);
  Array a8 = make_array<uint8_t>(m8), a16 = make_array<int16_t>(m16), a64 = make_array<double>(m64);
  for (int i = 0; i < 20; ++i) {
    auto [start, box] = random_box(rng, shape);
    EXPECT_TRUE(same_elements(expected_box<uint8_t>(start, box, chunks, 0),
                              read_box<uint8_t>(a8, start, box)));
    EXPECT_TRUE(same_elements(expected_box<int16_t>(start, box, chunks, -1),
                              read_box<int16_t>(a16, start, box)));
    EXPECT_TRUE(same_elements(expected_box<double>(start, box, chunks, 2.5),
                              read_box<double>(a64, start, box)));
  }
}

TEST(ArrayRead, ScalarArray) {
  auto m = make_metadata<double>({}, {});
  Array array = make_array<double>(m);
  auto actual = read_box<double>(array, {}, {});
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_EQ(actual[0], generate<double>(Coords{}));
}

TEST(ArrayRead, MissingChunksReadAsNaNFill) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Coords shape{10, 13}, chunks{4, 5};
  Present present = [](std::span<const int64_t> c) { return (c[0] + c[1]) % 2 == 0; };
  auto m = make_metadata<float>(shape, chunks, {}, nan);
  Array array = make_array<float>(m, present);
  ReadStats stats;
  auto actual = read_box<float>(array, Coords{0, 0}, shape, nullptr, &stats);
  EXPECT_TRUE(
      same_elements(expected_box<float>(Coords{0, 0}, shape, chunks, nan, present), actual));
  EXPECT_TRUE(std::isnan(actual[5]));  // chunk (0, 1) is missing
  EXPECT_EQ(stats.chunks.load(), 9);
  EXPECT_EQ(stats.missing_chunks.load(), 4);
  // Present chunks (0,0) and (1,1) whole; of the edge chunks (0,2), (2,0) and (2,2) only the
  // bytes from their first element to the last one inside the array: 18, 10 and 8 elements.
  EXPECT_EQ(stats.bytes_decoded.load(), (20 + 20 + 18 + 10 + 8) * 4);

  std::mt19937_64 rng(3);
  for (int i = 0; i < 40; ++i) {
    auto [start, box] = random_box(rng, shape);
    ASSERT_TRUE(same_elements(expected_box<float>(start, box, chunks, nan, present),
                              read_box<float>(array, start, box)));
  }
}

TEST(ArrayRead, AllChunksMissingReadsIntFill) {
  auto m = make_metadata<int32_t>({9, 9}, {4, 4}, {}, -7);
  Array array = make_array<int32_t>(m, [](std::span<const int64_t>) { return false; });
  auto actual = read_box<int32_t>(array, Coords{1, 2}, {8, 5});
  EXPECT_EQ(actual, std::vector<int32_t>(40, -7));
}

TEST(ArrayRead, IntoEveryThirdChannelOfABiggerBuffer) {
  // Read a (6, 7) box into channel 1 of a (6, 7, 3) buffer: the other channels stay untouched.
  Coords shape{10, 13}, chunks{4, 5};
  auto m = make_metadata<float>(shape, chunks, {}, -1.f);
  Array array = make_array<float>(m, [](std::span<const int64_t> c) { return c[1] != 1; });
  std::vector<float> buffer(6 * 7 * 3, 123.f);
  StridedView dst{reinterpret_cast<std::byte*>(buffer.data() + 1), {6, 7}, {7 * 3 * 4, 3 * 4}};
  Coords start{3, 2};
  array.read(start, dst);
  auto expected = expected_box<float>(start, Coords{6, 7}, chunks, -1.f,
                                      [](std::span<const int64_t> c) { return c[1] != 1; });
  for (size_t i = 0; i < 42; ++i) {
    ASSERT_EQ(buffer[3 * i], 123.f);
    ASSERT_EQ(buffer[3 * i + 1], expected[i]) << i;
    ASSERT_EQ(buffer[3 * i + 2], 123.f);
  }
}

TEST(ArrayRead, TransposedChainReadsLikeCOrder) {
  // The v2 order 'F' maps to a transpose codec with the reversed axis order.
  Coords shape{7, 9, 5}, chunks{3, 4, 5};
  CodecSpec transpose{"transpose", {{"order", {2, 1, 0}}}};
  auto m = make_metadata<float>(shape, chunks, {transpose, bytes_codec()});
  Array array = make_array<float>(m);
  std::mt19937_64 rng(11);
  EXPECT_TRUE(same_elements(expected_box<float>(Coords{0, 0, 0}, shape, chunks, 0.f),
                            read_box<float>(array, Coords{0, 0, 0}, shape)));
  for (int i = 0; i < 30; ++i) {
    auto [start, box] = random_box(rng, shape);
    ASSERT_TRUE(same_elements(expected_box<float>(start, box, chunks, 0.f),
                              read_box<float>(array, start, box)));
  }
}

TEST(ArrayRead, ThreadCountsGiveIdenticalResults) {
  Coords shape{3, 4, 5, 6, 7}, chunks{2, 2, 3, 4, 3};
  auto m = make_metadata<float>(shape, chunks, {}, 0.f);
  Array array = make_array<float>(m, [](std::span<const int64_t> c) { return c[2] != 1; });
  Coords origin(5, 0);
  auto reference = read_box<float>(array, origin, shape);
  for (size_t threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    ReadStats stats;
    auto actual = read_box<float>(array, origin, shape, &pool, &stats);
    EXPECT_TRUE(same_elements(reference, actual)) << threads << " threads";
    EXPECT_EQ(stats.chunks.load(), 2 * 2 * 2 * 2 * 3);
  }
}

TEST(ArrayRead, StorageKeysFollowTheKeyEncodingAndPrefix) {
  auto m = make_metadata<float>({10, 10}, {5, 5});
  Array v3(std::make_shared<MemoryStore>(), "root/temp", m, "temp");
  EXPECT_EQ(v3.storage_key(Coords{1, 0}), "root/temp/c/1/0");
  m.chunk_key_encoding = {ChunkKeyKind::kV2, '.'};
  Array v2(std::make_shared<MemoryStore>(), "", m, "temp");
  EXPECT_EQ(v2.storage_key(Coords{1, 0}), "1.0");
}

TEST(ArrayRead, ChunkKeyFormattingMatchesChunkKey) {
  const ChunkKeyEncoding encodings[] = {{ChunkKeyKind::kDefault, '/'},
                                        {ChunkKeyKind::kDefault, '.'},
                                        {ChunkKeyKind::kV2, '.'},
                                        {ChunkKeyKind::kV2, '/'}};
  const Coords coords[] = {{}, {0}, {12, 3}, {1, 22, 333, 4444, 5}};
  for (const auto& encoding : encodings) {
    for (const auto& c : coords) {
      for (std::string prefix : {"", "a/b", "a/b/"}) {
        std::string key = "stale";
        key.clear();
        append_chunk_key(key, prefix, encoding, c);
        EXPECT_EQ(key, join_key(prefix, chunk_key(encoding, c)));
      }
    }
  }
}

TEST(ArrayRead, V2KeysWithSlashSeparatorAreRead) {
  Coords shape{6, 6}, chunks{4, 4};
  auto m = make_metadata<int32_t>(shape, chunks);
  m.chunk_key_encoding = {ChunkKeyKind::kV2, '/'};
  Array array = make_array<int32_t>(m, all_present, "v2");
  EXPECT_TRUE(same_elements(expected_box<int32_t>(Coords{1, 1}, Coords{5, 5}, chunks, 0),
                            read_box<int32_t>(array, Coords{1, 1}, {5, 5})));
}

TEST(ArrayRead, ChunkRankMustMatchShapeRank) {
  auto m = make_metadata<float>({10, 10}, {5});
  try {
    Array array(std::make_shared<MemoryStore>(), "", m, "bad/array");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidMetadata);
    EXPECT_NE(std::string(e.what()).find("bad/array"), std::string::npos) << e.what();
  }
}

TEST(ArrayRead, BoxesOfLargeBloscChunksDecodeOnlyTheRowsTheyRead) {
  const std::vector<CodecSpec> codecs = {
      bytes_codec(),
      {"blosc", {{"cname", "lz4"}, {"shuffle", "shuffle"}, {"typesize", 4}, {"blocksize", 256}}}};
  // Whole-row chunks (decoded into staging, then copied) and channel-split chunks (gathered).
  for (const Coords& chunks : {Coords{32, 64, 8}, Coords{32, 64, 2}}) {
    auto m = make_metadata<float>({64, 64, 8}, chunks, codecs);
    Array array = make_array<float>(m);
    const int64_t chunk_nbytes = element_count(chunks) * 4;
    ThreadPool pool(2);
    std::mt19937_64 rng(99);
    for (int i = 0; i < 40; ++i) {
      auto [start, shape] = random_box(rng, m.shape);
      if (i % 2 == 0) shape[0] = 1;  // thin boxes: a few rows of a chunk
      EXPECT_TRUE(same_elements(expected_box<float>(start, shape, chunks, 0.f),
                                read_box<float>(array, start, shape, i % 3 ? &pool : nullptr)));
    }
    // Two rows of one chunk: a few blocks decoded, not the chunk.
    ReadStats stats;
    const Coords start{5, 0, 0}, shape{2, 64, 8};
    EXPECT_TRUE(same_elements(expected_box<float>(start, shape, chunks, 0.f),
                              read_box<float>(array, start, shape, &pool, &stats)));
    EXPECT_EQ(stats.chunks.load(), 8 / chunks[2]);
    EXPECT_LT(stats.bytes_decoded.load(), stats.chunks.load() * chunk_nbytes / 4);
  }
}

TEST(ArrayRead, BoxesOfLargeBloscChunksReadOnlyTheBlocksTheyNeed) {
  const std::vector<CodecSpec> codecs = {
      bytes_codec(),
      {"blosc", {{"cname", "lz4"}, {"shuffle", "shuffle"}, {"typesize", 4}, {"blocksize", 256}}}};
  auto m = make_metadata<float>({64, 64, 8}, {32, 64, 8}, codecs);
  auto memory = std::make_shared<MemoryStore>();
  write_chunks<float>(*memory, "", m, [](auto coords) { return coords[0] == 0; });
  auto counting = std::make_shared<CountingStore>(memory);
  Array array(counting, "", m, "test/array");
  const uint64_t stored = memory->size(chunk_key(m.chunk_key_encoding, Coords{0, 0, 0})).value();
  ThreadPool pool(2);
  ReadStats stats;
  const Coords start{5, 10, 0}, shape{2, 4, 8};
  EXPECT_TRUE(same_elements(expected_box<float>(start, shape, m.chunk_shape, 0.f),
                            read_box<float>(array, start, shape, &pool, &stats)));
  EXPECT_LT(counting->bytes_read(), stored / 8);
  EXPECT_EQ(stats.bytes_read.load(), static_cast<int64_t>(counting->bytes_read()));
  EXPECT_EQ(counting->reads(), 0u);  // only ranges
  // The missing chunk below is found missing through the same path.
  const Coords low{40, 0, 0}, one_row{1, 64, 8};
  EXPECT_TRUE(same_elements(std::vector<float>(64 * 8, 0.f),
                            read_box<float>(array, low, one_row, &pool, &stats)));
  EXPECT_EQ(stats.missing_chunks.load(), 1);
}

TEST(ArrayRead, OneLargeChunkIsDecodedInPartsOnEveryWorker) {
  const std::vector<CodecSpec> codecs = {
      bytes_codec(),
      {"blosc", {{"cname", "lz4"}, {"shuffle", "shuffle"}, {"typesize", 4}, {"blocksize", 256}}}};
  // 300 KB chunks of 1200 blocks: above kSplitMinBytes, so split when read whole.
  auto m = make_metadata<float>({64, 400, 6}, {32, 400, 6}, codecs);
  static_assert(32 * 400 * 6 * 4 > kSplitMinBytes);
  auto store = std::make_shared<MemoryStore>();
  write_chunks<float>(*store, "", m, [](auto coords) { return coords[0] == 0; });
  Array array(store, "", m, "test/array");
  for (size_t threads : {2, 3, 7}) {
    ThreadPool pool(threads);
    // The whole chunk (decoded straight into the result), most of it (staging), a crop, and
    // the missing chunk.
    for (const auto& [start, shape] : {std::pair{Coords{0, 0, 0}, Coords{32, 400, 6}},
                                       {Coords{1, 3, 1}, Coords{30, 390, 5}},
                                       {Coords{7, 0, 0}, Coords{2, 400, 6}},
                                       {Coords{40, 5, 0}, Coords{20, 20, 6}}}) {
      ReadStats stats;
      const auto expected = start[0] < 32 ? expected_box<float>(start, shape, m.chunk_shape, 0.f)
                                          : std::vector<float>(20 * 20 * 6, 0.f);  // fill value
      EXPECT_TRUE(same_elements(expected, read_box<float>(array, start, shape, &pool, &stats)))
          << threads << " threads, box at " << start[0] << "," << start[1];
      EXPECT_EQ(stats.chunks.load(), 1);
    }
  }
  // A block in the middle of the chunk whose start points past the end (the block table
  // follows the 16-byte header): an error naming the chunk, from whichever worker decoded it.
  const std::string key = chunk_key(m.chunk_key_encoding, Coords{0, 0, 0});
  ByteBuffer stored;
  ASSERT_TRUE(store->read(key, stored));
  std::vector<std::byte> bad(stored.data(), stored.data() + stored.size());
  for (size_t i = 16 + 4 * 60; i < 16 + 4 * 61; ++i) bad[i] = std::byte{0x7F};
  store->set(key, bad);
  ThreadPool pool(3);
  const Coords origin{0, 0, 0}, whole{32, 400, 6};
  try {
    read_box<float>(array, origin, whole, &pool);
    ADD_FAILURE() << "a corrupt block was decoded without an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData) << e.what();
    EXPECT_NE(std::string(e.what()).find("chunk '" + key + "'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace chute
