// The crop roofline runs the loader's own plans: every probe sees the crops' chunk reads, the
// peers get the crops the loader read (corner + transform id per sample, epoch by position).

#include "chute/bench/crop_roofline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "chute/format/npy.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/store/latency_store.h"

namespace chute::bench {
namespace {

using namespace chute::loader_testing;

std::shared_ptr<CropDataset> small_volume() {
  auto store = std::make_shared<MemoryStore>();
  ArrayPtr input = make_float_array(store, "input", {2, 16, 16, 16}, {1, 8, 8, 8}, 1);
  ArrayPtr target = make_float_array(store, "target", {3, 16, 16, 16}, {1, 8, 8, 8}, 2);
  CropOptions options;
  options.size = {6};
  options.crops_per_epoch = 8;
  options.transforms = "symmetries";
  return std::make_shared<CropDataset>(
      std::vector<std::pair<std::string, ArrayPtr>>{{"inputs", input}, {"targets", target}},
      options);
}

TEST(CropRoofline, MeasuresEveryStepOnTheBatchesCrops) {
  auto dataset = small_volume();
  const std::vector<std::vector<int64_t>> batches = {{0, 1, 2, 3}, {4, 5, 6, 7}, {3, 2, 1, 0}};
  const CropRooflineResult r = measure_crop_roofline(*dataset, batches, 9, 2, 2);
  EXPECT_EQ(r.samples, 12);
  EXPECT_EQ(r.sample_bytes, 5 * 6 * 6 * 6 * 4);
  EXPECT_GE(r.chunk_reads, 12 * 5);  // every crop touches at least one chunk per channel
  EXPECT_GT(r.read_samples_per_s, 0);
  // Uncompressed chunks: a crop's rows are read straight into place, there is no decode step
  // (and it does not bound the limit).
  EXPECT_EQ(r.decode_samples_per_s, 0);
  EXPECT_GT(r.place_samples_per_s, 0);
  EXPECT_GT(r.loop_samples_per_s, 0);
  EXPECT_FALSE(r.fused_mapped_copy);  // chunks, not a mapping: read and place add up
  EXPECT_LT(r.combined_samples_per_s, r.place_samples_per_s);
  EXPECT_LT(r.combined_samples_per_s, r.read_samples_per_s);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["samples"], 12);
  EXPECT_DOUBLE_EQ(j["combined_gb_per_s"].get<double>(),
                   r.combined_samples_per_s * r.sample_bytes / 1e9);
}

/// A float32 .npy file of `shape` holding 0, 1, 2, ... (a mapped source: no decode step).
std::string write_counting_npy(const std::string& name, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  int64_t count = 1;
  for (int64_t n : shape) {
    dict += std::to_string(n) + ", ";
    count *= n;
  }
  dict += "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary);
  const uint16_t header_len = static_cast<uint16_t>(dict.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&header_len), 2);
  out << dict;
  for (int64_t i = 0; i < count; ++i) {
    const float value = static_cast<float>(i);
    out.write(reinterpret_cast<const char*>(&value), sizeof value);
  }
  return path;
}

TEST(CropRoofline, AMappedSourceHasNoDecodeStepAndStillALimit) {
  CropOptions options;
  options.size = {6};
  options.crops_per_epoch = 8;
  CropDataset dataset({{"inputs", open_npy(write_counting_npy("roof_in.npy", {2, 16, 16, 16}))},
                       {"targets", open_npy(write_counting_npy("roof_tg.npy", {1, 16, 16, 16}))}},
                      options);
  const CropRooflineResult r =
      measure_crop_roofline(dataset, {{0, 1, 2, 3}, {4, 5, 6, 7}}, 9, 2, 2);
  EXPECT_EQ(r.decode_samples_per_s, 0);  // nothing decodes
  ASSERT_GT(r.read_samples_per_s, 0);
  ASSERT_GT(r.place_samples_per_s, 0);
  // Warm, the copy out of the mapping and the transform are one pass: the slower half bounds it.
  EXPECT_TRUE(r.fused_mapped_copy);
  EXPECT_DOUBLE_EQ(r.combined_samples_per_s, std::min(r.read_samples_per_s, r.place_samples_per_s));
  EXPECT_EQ(to_json(r)["fused_mapped_copy"], true);
  // Cold, each page fault stalls the copy: the times add.
  const CropRooflineResult cold =
      measure_crop_roofline(dataset, {{0, 1, 2, 3}, {4, 5, 6, 7}}, 9, 2, 2, [] {});
  EXPECT_FALSE(cold.fused_mapped_copy);
  EXPECT_DOUBLE_EQ(cold.combined_samples_per_s,
                   1.0 / (1.0 / cold.read_samples_per_s + 1.0 / cold.place_samples_per_s));
}

TEST(CropRoofline, ColdRunsDropThePagesBeforeEveryReadingPass) {
  auto dataset = small_volume();
  int calls = 0;
  const CropRooflineResult r =
      measure_crop_roofline(*dataset, {{0, 1}, {2, 3}, {4, 5}}, 9, 2, 2, [&] { ++calls; });
  EXPECT_EQ(calls, 2 * 3);  // the one-loop pass and the read pass of each batch
  EXPECT_EQ(r.samples, 6);
}

// A volume of 2 input and 3 target channels of `side`³ in chunks of `chunk`³, its chunks behind
// a store that keeps `preferred` reads in flight (the read engine's automatic window), cut in
// crops of `crop`³.
std::shared_ptr<CropDataset> volume_behind(int preferred, int64_t side, int64_t chunk,
                                           int64_t crop) {
  auto memory = std::make_shared<MemoryStore>();
  auto store = std::make_shared<LatencyStore>(memory, std::chrono::nanoseconds(0), preferred);
  std::vector<std::pair<std::string, ArrayPtr>> arrays;
  for (const auto& [name, channels, id] :
       {std::tuple{"inputs", 2, 1}, std::tuple{"targets", 3, 2}}) {
    const ArrayPtr written =
        make_float_array(memory, name, {channels, side, side, side}, {1, chunk, chunk, chunk}, id);
    arrays.emplace_back(name, std::make_shared<Array>(store, name, written->metadata(), name));
  }
  CropOptions options;
  options.size = {crop};
  options.crops_per_epoch = 8;
  options.transforms = "symmetries";
  return std::make_shared<CropDataset>(arrays, options);
}

TEST(CropRoofline, ColdStorageReadsOverlapDecodingInTheLimit) {
  const std::vector<std::vector<int64_t>> batches = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  const auto cold = [] {};
  const auto sum = [](const CropRooflineResult& r) {
    double seconds = 1.0 / r.read_samples_per_s + 1.0 / r.place_samples_per_s;
    if (r.decode_samples_per_s > 0) seconds += 1.0 / r.decode_samples_per_s;
    return 1.0 / seconds;
  };
  const auto overlapped = [](const CropRooflineResult& r) {
    double seconds = 1.0 / r.place_samples_per_s;
    if (r.decode_samples_per_s > 0) seconds += 1.0 / r.decode_samples_per_s;
    return std::min(r.read_samples_per_s, 1.0 / seconds);
  };
  // Cold, every crop a whole chunk, the store keeping reads in flight: the engine reads every
  // chunk ahead while the workers decode and place, so the slower side bounds the loader.
  const CropRooflineResult r =
      measure_crop_roofline(*volume_behind(8, 8, 8, 8), batches, 9, 2, 2, cold);
  ASSERT_GT(r.read_samples_per_s, 0);
  ASSERT_GT(r.place_samples_per_s, 0);
  EXPECT_TRUE(r.read_overlaps);
  EXPECT_DOUBLE_EQ(r.combined_samples_per_s, overlapped(r));
  EXPECT_GT(r.combined_samples_per_s, sum(r));
  EXPECT_EQ(to_json(r)["read_overlaps"], true);
  // Warm reads are copies on the workers' cores: the times add.
  const CropRooflineResult warm =
      measure_crop_roofline(*volume_behind(8, 8, 8, 8), batches, 9, 2, 2);
  EXPECT_FALSE(warm.read_overlaps);
  EXPECT_DOUBLE_EQ(warm.combined_samples_per_s, sum(warm));
  // Cold, but one read at a time: each worker reads its own chunks.
  const CropRooflineResult one =
      measure_crop_roofline(*volume_behind(1, 8, 8, 8), batches, 9, 2, 2, cold);
  EXPECT_FALSE(one.read_overlaps);
  EXPECT_DOUBLE_EQ(one.combined_samples_per_s, sum(one));
  // Cold, crops cutting chunks in part: the part is read by the worker that places it.
  const CropRooflineResult part =
      measure_crop_roofline(*volume_behind(8, 16, 8, 6), batches, 9, 2, 2, cold);
  EXPECT_FALSE(part.read_overlaps);
  EXPECT_DOUBLE_EQ(part.combined_samples_per_s, sum(part));
  EXPECT_EQ(to_json(part)["read_overlaps"], false);
}

TEST(CropRoofline, CropsOfBatchesFollowTheEpochs) {
  auto dataset = small_volume();
  const std::vector<std::vector<int64_t>> batches = {{5, 1}, {0, 7}, {5, 1}};
  const auto rows = crops_of_batches(*dataset, batches, 3, /*batches_per_epoch=*/2);
  ASSERT_EQ(rows.size(), 3u);
  for (size_t b = 0; b < rows.size(); ++b) {
    ASSERT_EQ(rows[b].size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      const auto crop = dataset->crop(3, static_cast<int64_t>(b / 2), batches[b][k]);
      std::vector<int64_t> want = crop.corner;
      want.push_back(crop.transform);
      EXPECT_EQ(rows[b][k], want) << "batch " << b;
    }
  }
  EXPECT_NE(rows[0], rows[2]);  // the same samples in epoch 1 are other crops
}

}  // namespace
}  // namespace chute::bench
