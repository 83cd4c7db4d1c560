// Crops of mapped sources (.npy, contiguous HDF5) are placed straight out of the mapping with
// the transform's strides: the read plan makes one task per piece of the box (no chunk of the
// source's virtual slab grid is staged), reads exactly the box's bytes, and each of the 48
// transforms gives the box transformed as its NumPy composition says.

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "chute/array/read_plan.h"
#include "chute/dataset/cube_symmetry.h"
#include "chute/format/npy.h"
#include "chute/util/error.h"

namespace chute {
namespace {

constexpr int64_t kMappedGrid = 80;

/// A float32 .npy file of (2, 80, 80, 80) holding its own C-order indices 0, 1, 2, ...
std::string write_index_volume_npy(const std::string& name) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 80, 80, 80), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary);
  const auto header_len = static_cast<uint16_t>(dict.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&header_len), 2);
  out << dict;
  std::vector<float> values(static_cast<size_t>(2 * kMappedGrid * kMappedGrid * kMappedGrid));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  return path;
}

/// Channels [c0, c0 + channels) of the cube of edge n at `corner`, transformed by `id`
/// (channels first): y[c, o] = x[c, corner + i(o)] with i as the NumPy composition gives it.
std::vector<float> expected_mapped_crop(int64_t c0, int64_t channels, const int64_t* corner,
                                        int64_t n, int id) {
  const CubeSymmetry& s = cube_symmetry(id);
  std::vector<float> out;
  for (int64_t c = c0; c < c0 + channels; ++c)
    for (int64_t o0 = 0; o0 < n; ++o0)
      for (int64_t o1 = 0; o1 < n; ++o1)
        for (int64_t o2 = 0; o2 < n; ++o2) {
          const int64_t o[3] = {o0, o1, o2};
          int64_t i[3];
          for (size_t k = 0; k < 3; ++k) i[s.axes[k]] = s.flips[k] ? n - 1 - o[k] : o[k];
          const int64_t x = corner[0] + i[0], y = corner[1] + i[1], z = corner[2] + i[2];
          out.push_back(
              static_cast<float>(((c * kMappedGrid + x) * kMappedGrid + y) * kMappedGrid + z));
        }
  return out;
}

TEST(MappedCrops, EveryTransformIsPlacedStraightFromTheMapping) {
  const ArrayPtr array = open_npy(write_index_volume_npy("mapped_crops.npy"));
  constexpr int64_t kEdge = 72;  // one channel: 1.5 MB, more than one piece
  const int64_t corner[3] = {3, 5, 7};
  for (const int64_t channels : {int64_t{1}, int64_t{2}}) {
    const int64_t c0 = 2 - channels;  // one channel: the second (a unit outer axis)
    const int64_t box_bytes = channels * kEdge * kEdge * kEdge * 4;
    for (int id = 0; id < kCubeSymmetries; ++id) {
      std::vector<float> out(static_cast<size_t>(box_bytes / 4), -1.f);
      StridedView spatial = StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()),
                                                    {kEdge, kEdge, kEdge}, 4);
      const StridedView placed = transform_view(cube_symmetry(id), spatial);
      StridedView dst{placed.data, {channels}, {kEdge * kEdge * kEdge * 4}};
      dst.shape.insert(dst.shape.end(), placed.shape.begin(), placed.shape.end());
      dst.byte_strides.insert(dst.byte_strides.end(), placed.byte_strides.begin(),
                              placed.byte_strides.end());
      const std::vector<int64_t> start{c0, corner[0], corner[1], corner[2]};

      ReadPlan plan;
      plan.add(*array, start, dst, "crop");
      // One task per piece of the box, each with one target at its place in the array: no
      // chunk of the slab grid is staged.
      int64_t planned = 0;
      for (const ChunkTask& task : plan.tasks()) {
        ASSERT_EQ(task.targets.size(), 1u);
        EXPECT_EQ(task.chunk_coords, std::vector<int64_t>(4, 0));
        int64_t elements = 1;
        for (int64_t n : task.targets[0].dst.shape) elements *= n;
        planned += elements * 4;
      }
      EXPECT_EQ(planned, box_bytes);
      // One channel: 72 planes of 20 KiB in pieces of 50; two: one piece per channel.
      EXPECT_EQ(plan.task_count(), 2u);
      std::vector<ReadScratch> scratch(1);
      ReadStats stats;
      plan.execute(nullptr, scratch, &stats);
      EXPECT_EQ(stats.bytes_read.load(), box_bytes);  // the box's bytes, no whole slab
      ASSERT_EQ(out, expected_mapped_crop(c0, channels, corner, kEdge, id))
          << "transform " << id << ", " << channels << " channel(s)";
    }
  }
}

TEST(MappedCrops, TheirTasksAreBoxesThatNeverLoadAChunk) {
  const ArrayPtr array = open_npy(write_index_volume_npy("mapped_crops_load.npy"));
  std::vector<float> out(4 * 4 * 4);
  ReadPlan plan;
  plan.add(*array, std::vector<int64_t>{1, 2, 3, 4},
           StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {1, 4, 4, 4}, 4));
  ASSERT_EQ(plan.task_count(), 1u);
  EXPECT_EQ(plan.tasks()[0].targets[0].chunk_start, (std::vector<int64_t>{1, 2, 3, 4}));
  ReadScratch scratch;
  std::vector<std::byte> chunk(static_cast<size_t>(array->read_chunk_nbytes()));
  try {
    array->load(plan.tasks()[0], scratch, chunk.data(), nullptr);
    FAIL() << "a mapped box was loaded as a chunk";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

TEST(MappedCrops, BoxesThatContinueOneAnotherAreOneCopy) {
  // Channel 0 then channel 1 of the same 4 x 4 x 4 box, as windows plan the channels of a
  // stacked array: one task when the destinations continue each other (consecutive planes, or
  // interleaved channels-last), two when they do not or the tags differ.
  const ArrayPtr array = open_npy(write_index_volume_npy("mapped_continue.npy"));
  const int64_t corner[3] = {2, 3, 4};
  const auto expect_box = [&](const std::vector<float>& out, int64_t plane_step, int64_t step) {
    for (int64_t c = 0; c < 2; ++c) {
      const std::vector<float> want = expected_mapped_crop(c, 1, corner, 4, 0);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(out[static_cast<size_t>(c * plane_step) + i * static_cast<size_t>(step)], want[i])
            << "channel " << c << " element " << i;
      }
    }
  };
  const auto plan_two = [&](std::vector<float>& out, int64_t plane_step, int64_t step,
                            int64_t second_tag) {
    ReadPlan plan;
    for (int64_t c = 0; c < 2; ++c) {
      if (c == 1) plan.set_target_tag(second_tag);
      StridedView dst;
      dst.data = reinterpret_cast<std::byte*>(out.data() + c * plane_step);
      dst.shape = {1, 4, 4, 4};
      dst.byte_strides = {4, 64 * step, 16 * step, 4 * step};
      plan.add(*array, std::vector<int64_t>{c, corner[0], corner[1], corner[2]}, dst);
    }
    std::vector<ReadScratch> scratch(1);
    plan.execute(nullptr, scratch);
    return plan.task_count();
  };
  std::vector<float> planes(2 * 64, -1.0f);
  EXPECT_EQ(plan_two(planes, 64, 1, -1), 1u);  // consecutive planes
  expect_box(planes, 64, 1);
  std::vector<float> interleaved(2 * 64, -1.0f);
  EXPECT_EQ(plan_two(interleaved, 1, 2, -1), 1u);  // channels-last: one element apart
  expect_box(interleaved, 1, 2);
  std::vector<float> apart(3 * 64, -1.0f);
  EXPECT_EQ(plan_two(apart, 64 + 1, 1, -1), 1u);  // one channel each: any step between them
  expect_box(apart, 65, 1);
  std::vector<float> tagged(2 * 64, -1.0f);
  EXPECT_EQ(plan_two(tagged, 64, 1, 5), 2u);  // another tag: finished on its own
  expect_box(tagged, 64, 1);

  // Two channels, then a third box along x whose destination does not continue their step.
  ReadPlan plan;
  std::vector<float> out(4 * 64, -1.0f);
  StridedView first =
      StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {2, 4, 4, 4}, 4);
  plan.add(*array, std::vector<int64_t>{0, 2, 3, 4}, first);
  StridedView next = first;
  next.shape = {2, 1, 4, 4};
  next.data += (2 * 64 + 1) * 4;  // x = 6 follows x = 2..5, its destination not their step
  plan.add(*array, std::vector<int64_t>{0, 6, 3, 4}, next);
  EXPECT_EQ(plan.task_count(), 2u);
  // The same along x into a (2, 5, 4, 4) destination: x = 6 continues x = 2..5, one copy.
  std::vector<float> wide(2 * 5 * 16, -1.0f);
  StridedView head;
  head.data = reinterpret_cast<std::byte*>(wide.data());
  head.shape = {2, 4, 4, 4};
  head.byte_strides = {5 * 64, 64, 16, 4};
  StridedView tail = head;
  tail.shape = {2, 1, 4, 4};
  tail.data += 4 * 64;
  ReadPlan continued;
  continued.add(*array, std::vector<int64_t>{0, 2, 3, 4}, head);
  continued.add(*array, std::vector<int64_t>{0, 6, 3, 4}, tail);
  EXPECT_EQ(continued.task_count(), 1u);
  std::vector<ReadScratch> scratch(1);
  continued.execute(nullptr, scratch);
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t x = 0; x < 5; ++x)
      for (int64_t y = 0; y < 4; ++y)
        for (int64_t z = 0; z < 4; ++z) {
          const float want = static_cast<float>(
              ((c * kMappedGrid + 2 + x) * kMappedGrid + 3 + y) * kMappedGrid + 4 + z);
          ASSERT_EQ(wide[static_cast<size_t>(((c * 5 + x) * 4 + y) * 4 + z)], want);
        }
}

}  // namespace
}  // namespace chute
