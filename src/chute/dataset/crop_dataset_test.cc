// W3 crops: every crop of a batch equals the box at its corner, transformed by its id as the
// NumPy composition says, in both output layouts and for channels stored first or last; crops
// and transforms are a pure function of (seed, epoch, sample) (threads, prefetch, resume and
// ranks do not change them); bad arguments give clear errors.

#include "chute/dataset/crop_dataset.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <set>
#include <tuple>

#include "chute/dataset/cube_symmetry.h"
#include "chute/pipeline/loader.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/error.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

using namespace chute::loader_testing;
using chute::testing::message_of;

constexpr int64_t kGrid = 12;

/// "inputs" (2, 12, 12, 12) and "targets" (3, 12, 12, 12) channels-first, and the same data
/// channels-last "inputs_last" (12, 12, 12, 2).
struct VolumeFixture {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>();
  ArrayPtr inputs = make_float_array(store, "inputs", {2, kGrid, kGrid, kGrid}, {1, 5, 5, 5}, 1);
  ArrayPtr targets = make_float_array(store, "targets", {3, kGrid, kGrid, kGrid}, {1, 4, 6, 12}, 2);
  ArrayPtr inputs_last;
  VolumeFixture() {
    std::vector<float> values;
    for (int64_t x = 0; x < kGrid; ++x)
      for (int64_t y = 0; y < kGrid; ++y)
        for (int64_t z = 0; z < kGrid; ++z)
          for (int64_t c = 0; c < 2; ++c) values.push_back(value_at(1, std::vector{c, x, y, z}));
    inputs_last =
        make_float_array(store, "inputs_last", {kGrid, kGrid, kGrid, 2}, {7, 7, 7, 2}, 0, &values);
  }
};

/// The expected crop: channel c of the box at `corner` of edge n, transformed by `id`,
/// value_at(array_id, (c, x, y, z)) at output position (c or last, o0, o1, o2).
std::vector<float> expected_crop(int array_id, int64_t channels, const std::vector<int64_t>& corner,
                                 int64_t n, int id, bool channels_last) {
  const CubeSymmetry& s = cube_symmetry(id);
  std::vector<float> out(static_cast<size_t>(channels * n * n * n));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t o0 = 0; o0 < n; ++o0)
      for (int64_t o1 = 0; o1 < n; ++o1)
        for (int64_t o2 = 0; o2 < n; ++o2) {
          const int64_t o[3] = {o0, o1, o2};
          int64_t i[3];
          for (size_t k = 0; k < 3; ++k) {
            i[s.axes[k]] = s.flips[k] ? n - 1 - o[k] : o[k];
          }
          const float v = value_at(
              array_id, std::vector{c, corner[0] + i[0], corner[1] + i[1], corner[2] + i[2]});
          const int64_t spatial = (o0 * n + o1) * n + o2;
          out[static_cast<size_t>(channels_last ? spatial * channels + c
                                                : c * n * n * n + spatial)] = v;
        }
  }
  return out;
}

CropOptions crop_options(int64_t size, const std::string& transforms, bool channels_last) {
  CropOptions o;
  o.size = {size};
  o.channel_axis = 0;
  o.crops_per_epoch = 40;
  o.transforms = transforms;
  o.channels_last = channels_last;
  return o;
}

LoaderOptions loader_options(int64_t batch, size_t threads, size_t prefetch) {
  LoaderOptions o;
  o.batch_size = batch;
  o.threads = threads;
  o.prefetch = prefetch;
  o.seed = 7;
  return o;
}

TEST(CropDataset, CropsEqualTheTransformedBoxesInBothLayouts) {
  VolumeFixture f;
  for (bool channels_last : {false, true}) {
    auto dataset = std::make_shared<CropDataset>(
        std::vector<std::pair<std::string, ArrayPtr>>{{"inputs", f.inputs}, {"targets", f.targets}},
        crop_options(5, "symmetries", channels_last));
    ASSERT_EQ(dataset->outputs().size(), 4u);
    EXPECT_EQ(dataset->outputs()[0].sample_shape, channels_last
                                                      ? std::vector<int64_t>({5, 5, 5, 2})
                                                      : std::vector<int64_t>({2, 5, 5, 5}));
    EXPECT_EQ(dataset->outputs()[2].name, "crops");
    EXPECT_EQ(dataset->outputs()[3].name, "transforms");
    Loader loader(dataset, loader_options(8, 2, 2));
    std::set<int64_t> ids;
    for (const Batch& batch : loader) {
      for (int64_t k = 0; k < batch.size(); ++k) {
        const int64_t* corner = batch["crops"].as<int64_t>() + 3 * k;
        const int64_t id = batch["transforms"].as<int64_t>()[k];
        ids.insert(id);
        const CropDataset::Crop crop = dataset->crop(7, batch.epoch, batch.indices[k]);
        ASSERT_EQ(std::vector<int64_t>(corner, corner + 3), crop.corner);
        ASSERT_EQ(id, crop.transform);
        for (int64_t d = 0; d < 3; ++d) ASSERT_LE(corner[d] + 5, kGrid);
        for (const auto& [name, channels, array_id] :
             {std::tuple{"inputs", int64_t{2}, 1}, std::tuple{"targets", int64_t{3}, 2}}) {
          const BatchArray& a = batch[name];
          const int64_t per = a.elements() / batch.size();
          const std::vector<float> got(a.as<float>() + k * per, a.as<float>() + (k + 1) * per);
          ASSERT_EQ(got, expected_crop(array_id, channels, crop.corner, 5, static_cast<int>(id),
                                       channels_last))
              << name << " sample " << batch.indices[k] << " transform " << id;
        }
      }
    }
    EXPECT_GT(ids.size(), 20u);  // many different ids were exercised
  }
}

TEST(CropDataset, ChannelsLastStorageGivesTheSameCrops) {
  VolumeFixture f;
  for (bool channels_last : {false, true}) {
    CropOptions first = crop_options(4, "rotations", channels_last);
    CropOptions last = first;
    last.channel_axis = -1;
    auto a = std::make_shared<CropDataset>(
        std::vector<std::pair<std::string, ArrayPtr>>{{"x", f.inputs}}, first);
    auto b = std::make_shared<CropDataset>(
        std::vector<std::pair<std::string, ArrayPtr>>{{"x", f.inputs_last}}, last);
    Loader la(a, loader_options(5, 1, 1)), lb(b, loader_options(5, 2, 3));
    la.begin_epoch(1);
    lb.begin_epoch(1);
    int batches = 0;
    while (auto x = la.next()) {
      auto y = lb.next();
      ASSERT_TRUE(y.has_value());
      for (size_t k = 0; k < x->arrays.size(); ++k) {
        ASSERT_EQ(x->arrays[k].nbytes(), y->arrays[k].nbytes());
        ASSERT_EQ(0, std::memcmp(x->arrays[k].data, y->arrays[k].data,
                                 static_cast<size_t>(x->arrays[k].nbytes())));
      }
      ++batches;
    }
    EXPECT_EQ(batches, 8);
  }
}

TEST(CropDataset, CropsAndTransformsArePureFunctionsOfSeedEpochSample) {
  VolumeFixture f;
  auto dataset = std::make_shared<CropDataset>(
      std::vector<std::pair<std::string, ArrayPtr>>{{"inputs", f.inputs}},
      crop_options(6, "rotations", false));
  // Threads and prefetch do not change a batch.
  std::vector<std::vector<std::byte>> reference;
  for (size_t threads : {1, 3}) {
    for (size_t prefetch : {1, 4}) {
      Loader loader(dataset, loader_options(6, threads, prefetch));
      loader.begin_epoch(2);
      std::vector<std::vector<std::byte>> epoch;
      while (auto batch = loader.next()) {
        for (const BatchArray& a : batch->arrays) epoch.emplace_back(a.data, a.data + a.nbytes());
      }
      if (reference.empty()) {
        reference = epoch;
      } else {
        ASSERT_EQ(epoch, reference) << threads << " threads, prefetch " << prefetch;
      }
    }
  }
  // Epochs and seeds draw different crops; the same triple draws the same one.
  EXPECT_EQ(dataset->crop(1, 2, 3).corner, dataset->crop(1, 2, 3).corner);
  int same_epoch = 0, same_seed = 0;
  for (int64_t s = 0; s < 40; ++s) {
    same_epoch += dataset->crop(1, 0, s).corner == dataset->crop(1, 1, s).corner;
    same_seed += dataset->crop(1, 0, s).corner == dataset->crop(2, 0, s).corner;
  }
  EXPECT_LT(same_epoch, 5);
  EXPECT_LT(same_seed, 5);
}

TEST(CropDataset, RanksGetDisjointCropsAndResumeIsExact) {
  VolumeFixture f;
  auto dataset =
      std::make_shared<CropDataset>(std::vector<std::pair<std::string, ArrayPtr>>{{"t", f.targets}},
                                    crop_options(3, "symmetries", true));
  std::multiset<int64_t> seen;
  for (int64_t rank = 0; rank < 2; ++rank) {
    LoaderOptions o = loader_options(4, 1, 1);
    o.rank = rank;
    o.world_size = 2;
    Loader loader(dataset, o);
    for (const Batch& batch : loader) {
      for (int64_t k = 0; k < batch.size() - batch.padding; ++k) {
        seen.insert(batch.indices[k]);
        // The crop a rank reads is the sample's, whatever rank reads it.
        const int64_t* corner = batch["crops"].as<int64_t>() + 3 * k;
        EXPECT_EQ(std::vector<int64_t>(corner, corner + 3),
                  dataset->crop(7, batch.epoch, batch.indices[k]).corner);
      }
    }
  }
  EXPECT_EQ(seen.size(), 40u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 40u);

  Loader full(dataset, loader_options(4, 2, 2));
  full.begin_epoch(1);
  std::vector<std::vector<std::byte>> expected;
  while (auto b = full.next())
    expected.emplace_back(b->arrays[0].data, b->arrays[0].data + b->arrays[0].nbytes());
  Loader first(dataset, loader_options(4, 2, 2));
  first.begin_epoch(1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(first.next().has_value());
  Loader resumed(dataset, loader_options(4, 1, 1));
  resumed.restore(first.state());
  resumed.begin_epoch();
  size_t i = 4;
  while (auto b = resumed.next()) {
    ASSERT_LT(i, expected.size());
    EXPECT_EQ(std::vector<std::byte>(b->arrays[0].data, b->arrays[0].data + b->arrays[0].nbytes()),
              expected[i++]);
  }
  EXPECT_EQ(i, expected.size());
}

TEST(CropDataset, CropWithoutTransformsOrChannelAxis) {
  VolumeFixture f;
  CropOptions o;
  o.size = {2, 12, 3, 4};  // every axis spatial, a non-cubic box
  o.channel_axis = std::nullopt;
  o.crops_per_epoch = 6;
  auto dataset = std::make_shared<CropDataset>(
      std::vector<std::pair<std::string, ArrayPtr>>{{"v", f.inputs}}, o);
  EXPECT_EQ(dataset->outputs()[0].sample_shape, (std::vector<int64_t>{2, 12, 3, 4}));
  Loader loader(dataset, loader_options(3, 2, 1));
  for (const Batch& batch : loader) {
    for (int64_t k = 0; k < batch.size(); ++k) {
      const int64_t* c = batch["crops"].as<int64_t>() + 4 * k;
      EXPECT_EQ(c[0], 0);  // the only start that fits 2 of 2
      EXPECT_EQ(batch["transforms"].as<int64_t>()[k], 0);
      const std::vector<float> want =
          read_floats(*f.inputs, {c[0], c[1], c[2], c[3]}, {2, 12, 3, 4});
      const std::vector<float> got(batch["v"].as<float>() + k * 288,
                                   batch["v"].as<float>() + (k + 1) * 288);
      EXPECT_EQ(got, want);
    }
  }
}

TEST(CropDataset, BadArgumentsGiveClearErrors) {
  VolumeFixture f;
  auto store = std::make_shared<MemoryStore>();
  ArrayPtr other = make_float_array(store, "other", {4, kGrid, kGrid, 10}, {4, 6, 6, 5}, 3);
  using Arrays = std::vector<std::pair<std::string, ArrayPtr>>;
  auto make = [&](Arrays arrays, CropOptions o) { CropDataset d(std::move(arrays), o); };
  EXPECT_NE(message_of([&] {
              make({{"x", f.inputs}}, crop_options(13, "rotations", false));
            }).find("crop size (13, 13, 13) does not fit the spatial grid (12, 12, 12)"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              make({{"x", f.inputs}, {"y", other}}, crop_options(4, "", false));
            }).find("'x' has (12, 12, 12) and 'y' has (12, 12, 10)"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              make({{"x", f.inputs}}, crop_options(4, "flips", false));
            }).find("transforms = 'flips' is not one of"),
            std::string::npos);
  CropOptions box = crop_options(4, "rotations", false);
  box.size = {4, 4, 5};
  EXPECT_NE(message_of([&] {
              make({{"x", f.inputs}}, box);
            }).find("rotate a cube"),
            std::string::npos);
  CropOptions axis = crop_options(4, "", false);
  axis.channel_axis = 4;
  EXPECT_NE(message_of([&] {
              make({{"x", f.inputs}}, axis);
            }).find("channel_axis 4 is outside"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              make({{"crops", f.inputs}}, crop_options(4, "", false));
            }).find("names a batch entry of its own"),
            std::string::npos);
  CropOptions none = crop_options(4, "", false);
  none.crops_per_epoch = 0;
  EXPECT_NE(message_of([&] {
              make({{"x", f.inputs}}, none);
            }).find("crops_per_epoch = 0 is outside [1, "),
            std::string::npos);
}

}  // namespace
}  // namespace chute
