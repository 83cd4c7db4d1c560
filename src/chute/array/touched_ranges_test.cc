// Crops of uncompressed chunks read only the byte ranges they touch: the ranges themselves, and
// reads through a counting store that see those bytes (plus gaps below kTouchedRangeGap), not
// the span from the crop's first to its last byte.

#include "chute/array/touched_ranges.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "chute/array/array.h"
#include "chute/array/array_test_support.h"
#include "chute/store/counting_store.h"
#include "chute/store/file_store.h"
#include "chute/store/memory_store.h"
#include "chute/util/thread_pool.h"

namespace chute {
namespace {

using namespace chute::testing;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

ChunkTarget box(Coords start, Coords shape) {
  ChunkTarget target;
  target.chunk_start = std::move(start);
  target.dst.shape = std::move(shape);
  return target;
}

Ranges ranges_of(const std::vector<ChunkTarget>& targets, const Coords& chunk, uint64_t gap) {
  Ranges out;
  touched_ranges(targets, chunk, 4, gap, out);
  return out;
}

TEST(TouchedRanges, WholeRowsOfAPlaneAreOneRangePerPlane) {
  // (1, 64, 64, 64) float32: planes of 16 KiB, rows of 256 bytes. 8 rows of 8 planes.
  const Coords chunk{1, 64, 64, 64};
  const Ranges ranges = ranges_of({box({0, 10, 20, 0}, {1, 8, 8, 64})}, chunk, kTouchedRangeGap);
  ASSERT_EQ(ranges.size(), 8u);
  for (size_t k = 0; k < 8; ++k) {
    const uint64_t begin = (10 + k) * 16384 + 20 * 256;
    EXPECT_EQ(ranges[k], std::make_pair(begin, begin + 8 * 256)) << k;
  }
}

TEST(TouchedRanges, GapsBelowTheThresholdAreReadAndAboveItAreNot) {
  const Coords chunk{1, 64, 64, 64};
  // Runs of 8 floats (32 bytes) 256 bytes apart: merged within a plane, apart across planes.
  const Ranges merged = ranges_of({box({0, 3, 5, 7}, {1, 4, 6, 8})}, chunk, kTouchedRangeGap);
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged[0].first, 3u * 16384 + 5 * 256 + 7 * 4);
  EXPECT_EQ(merged[0].second - merged[0].first, 5u * 256 + 32);
  // With no gap allowed: one range per run.
  const Ranges apart = ranges_of({box({0, 3, 5, 7}, {1, 4, 6, 8})}, chunk, 0);
  EXPECT_EQ(apart.size(), 24u);
  for (const auto& [begin, end] : apart) EXPECT_EQ(end - begin, 32u);
}

TEST(TouchedRanges, WholeChunkAndOverlappingTargetsMerge) {
  const Coords chunk{4, 6, 8};
  EXPECT_EQ(ranges_of({box({0, 0, 0}, {4, 6, 8})}, chunk, 0), (Ranges{{0, 4 * 6 * 8 * 4}}));
  // Whole trailing planes are one range: rows 1..2 of a (6, 8) plane.
  EXPECT_EQ(ranges_of({box({1, 0, 0}, {2, 6, 8})}, chunk, 0), (Ranges{{192, 192 + 2 * 192}}));
  // Two samples' boxes over the same rows: sorted, overlaps merged.
  EXPECT_EQ(ranges_of({box({0, 2, 0}, {1, 1, 8}), box({0, 1, 0}, {1, 2, 8})}, chunk, 0),
            (Ranges{{32, 96}}));
  EXPECT_TRUE(ranges_of({box({0, 0, 0}, {0, 6, 8})}, chunk, 0).empty());
}

// Crops of uncompressed (1, 16, 16, 16) chunks of a (2, 40, 40, 40) array, through a counting
// store: exact for random boxes (edge chunks included), and reading only the touched rows.
template <typename MakeStore>
void check_crops(MakeStore&& make_store) {
  auto m = make_metadata<float>({2, 40, 40, 40}, {1, 16, 16, 16});
  auto counting = std::make_shared<CountingStore>(make_store(m));
  Array array(counting, "", m, "test/array");
  ThreadPool pool(2);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 60; ++i) {
    auto [start, shape] = random_box(rng, m.shape);
    EXPECT_TRUE(same_elements(expected_box<float>(start, shape, m.chunk_shape, 0.f),
                              read_box<float>(array, start, shape, i % 2 ? &pool : nullptr)))
        << i;
  }
  // 4 planes of 4 rows of 16 floats in chunk (0, 0, 0, 0): 4 ranges of 256 bytes, 768 bytes
  // apart, below the gap: read as one range, the span.
  counting->reset();
  ReadStats stats;
  const Coords start{0, 2, 5, 0}, shape{1, 4, 4, 16};
  EXPECT_TRUE(same_elements(expected_box<float>(start, shape, m.chunk_shape, 0.f),
                            read_box<float>(array, start, shape, &pool, &stats)));
  const uint64_t plane = 16 * 16 * 4, row = 16 * 4;
  static_assert(16 * 16 * 4 - 4 * 16 * 4 < kTouchedRangeGap);
  EXPECT_EQ(counting->bytes_read(), 3 * plane + 4 * row);
  EXPECT_EQ(stats.bytes_read.load(), static_cast<int64_t>(3 * plane + 4 * row));
  EXPECT_EQ(counting->reads(), 0u);
  // A crop of a few columns of a larger chunk: rows 4 KiB apart are read apart.
  auto big = make_metadata<float>({1, 64, 64, 64}, {1, 64, 64, 64});
  auto counting_big = std::make_shared<CountingStore>(make_store(big));
  Array big_array(counting_big, "", big, "test/big");
  const Coords corner{0, 10, 20, 0}, crop{1, 8, 8, 64};
  EXPECT_TRUE(same_elements(expected_box<float>(corner, crop, big.chunk_shape, 0.f),
                            read_box<float>(big_array, corner, crop, &pool)));
  EXPECT_EQ(counting_big->bytes_read(), 8u * 8 * 64 * 4);  // the span is 7 planes + 8 rows
  EXPECT_EQ(counting_big->range_reads(), 8u);
  EXPECT_EQ(counting_big->submits(), 1u);  // one batch for the chunk's eight ranges
}

TEST(TouchedRanges, CropsOfUncompressedChunksInMemoryReadOnlyTheirRows) {
  check_crops([](const ArrayMetadata& m) {
    auto memory = std::make_shared<MemoryStore>();
    write_chunks<float>(*memory, "", m);
    return memory;
  });
}

TEST(TouchedRanges, CropsOfUncompressedChunkFilesReadOnlyTheirRows) {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  check_crops([&](const ArrayMetadata& m) {
    MemoryStore memory;
    write_chunks<float>(memory, "", m);
    const fs::path root =
        fs::temp_directory_path() /
        ("chute_touched_" + std::to_string(::getpid()) + "_" + std::to_string(roots.size()));
    roots.push_back(root);
    fs::create_directories(root);
    const Coords grid = chunk_grid_shape(m.shape, m.chunk_shape);
    Coords coords(grid.size(), 0);
    do {
      const std::string key = chunk_key(m.chunk_key_encoding, coords);
      ByteBuffer bytes;
      memory.read(key, bytes);
      fs::create_directories((root / key).parent_path());
      std::FILE* f = std::fopen((root / key).c_str(), "wb");
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    } while (next_index(coords, grid));
    return std::make_shared<FileStore>(root.string());
  });
  for (const auto& root : roots) fs::remove_all(root);
}

TEST(TouchedRanges, UncompressedInnerChunksOfAShardReadOnlyTheirRows) {
  // One shard of two (1, 32, 64, 64) inner chunks stored with `bytes` only: a box of 8 rows of
  // 8 planes of the second reads those rows at the inner chunk's offset in the shard, plus at
  // most the shard's index (2 entries of 16 bytes), not the planes in between.
  auto m = make_sharded_metadata<float>({1, 64, 64, 64}, {1, 64, 64, 64}, {1, 32, 64, 64},
                                        /*index_at_end=*/true);
  auto memory = std::make_shared<MemoryStore>();
  write_shards<float>(*memory, "", m, {1, 32, 64, 64}, true, all_present);
  auto counting = std::make_shared<CountingStore>(memory);
  Array array(counting, "", m, "test/sharded");
  const Coords start{0, 42, 20, 0}, shape{1, 8, 8, 64};
  EXPECT_TRUE(same_elements(expected_box<float>(start, shape, m.chunk_shape, 0.f),
                            read_box<float>(array, start, shape)));
  EXPECT_GE(counting->bytes_read(), 8u * 8 * 64 * 4);
  EXPECT_LE(counting->bytes_read(), 8u * 8 * 64 * 4 + 2 * 16);
  // Random boxes across both inner chunks stay exact.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 30; ++i) {
    auto [corner, extent] = random_box(rng, m.shape);
    EXPECT_TRUE(same_elements(expected_box<float>(corner, extent, m.chunk_shape, 0.f),
                              read_box<float>(array, corner, extent)))
        << i;
  }
}

TEST(TouchedRanges, SampleAtTheArrayEdgeReadsThePaddedChunkRows) {
  // Edge chunks hold padding past the array's end: the ranges stay inside the stored chunk.
  auto m = make_metadata<int16_t>({5, 7, 9}, {4, 4, 4});
  auto memory = std::make_shared<MemoryStore>();
  write_chunks<int16_t>(*memory, "", m);
  Array array(memory, "", m, "test/edge");
  const Coords start{4, 5, 7}, shape{1, 2, 2};
  EXPECT_TRUE(same_elements(expected_box<int16_t>(start, shape, m.chunk_shape, int16_t{0}),
                            read_box<int16_t>(array, start, shape)));
}

}  // namespace
}  // namespace chute
