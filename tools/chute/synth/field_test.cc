#include "chute/synth/field.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "chute/util/error.h"

namespace chute::synth {
namespace {

FieldSpec packed_spec(uint64_t seed = 7) {
  FieldSpec spec;
  spec.shape = {3, 9, 12, 5};
  spec.wavelength = {24.0, 9.0, 12.0, 6.0};
  spec.channel_axis = 3;
  spec.channels = random_channel_levels(5, seed, 100.0, 10.0, 0.05);
  spec.seed = seed;
  return spec;
}

std::vector<float> fill_all(const Field& field) {
  const auto& shape = field.spec().shape;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> out(static_cast<size_t>(n));
  std::vector<int64_t> start(shape.size(), 0);
  field.fill(start, shape, out);
  return out;
}

TEST(SynthField, SameSeedSameValues) {
  EXPECT_EQ(fill_all(Field(packed_spec())), fill_all(Field(packed_spec())));
}

TEST(SynthField, DifferentSeedDifferentValues) {
  EXPECT_NE(fill_all(Field(packed_spec(1))), fill_all(Field(packed_spec(2))));
}

TEST(SynthField, ValuesDoNotDependOnTheBox) {
  Field field(packed_spec());
  const auto whole = fill_all(field);
  // Box [1, 2, 4, 1] + (2, 5, 7, 3), compared element by element with the whole array.
  const std::vector<int64_t> start = {1, 2, 4, 1}, box = {2, 5, 7, 3};
  std::vector<float> part(2 * 5 * 7 * 3);
  field.fill(start, box, part);
  size_t k = 0;
  for (int64_t a = 0; a < box[0]; ++a)
    for (int64_t b = 0; b < box[1]; ++b)
      for (int64_t c = 0; c < box[2]; ++c)
        for (int64_t d = 0; d < box[3]; ++d, ++k) {
          int64_t i = (((start[0] + a) * 9 + start[1] + b) * 12 + start[2] + c) * 5 + start[3] + d;
          ASSERT_EQ(part[k], whole[static_cast<size_t>(i)]) << "element " << k;
        }
}

TEST(SynthField, ValuesStayWithinChannelLevels) {
  Field field(packed_spec());
  const auto values = fill_all(field);
  const auto& levels = field.spec().channels;
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& l = levels[i % 5];
    ASSERT_TRUE(std::isfinite(values[i]));
    ASSERT_LE(std::abs(values[i] - l.offset), l.amplitude + l.noise + 1e-3) << "element " << i;
  }
}

TEST(SynthField, ChannelsDifferAndNeighboursAreClose) {
  Field field(packed_spec());
  const auto v = fill_all(field);
  EXPECT_NE(v[0], v[1]);  // channels 0 and 1 of the first point
  // Smooth along lon: neighbouring points of one channel differ by much less than the amplitude.
  double step = 0, amplitude = field.spec().channels[0].amplitude;
  for (int lon = 0; lon + 1 < 12; ++lon)
    step = std::max(step, double(std::abs(v[lon * 5] - v[(lon + 1) * 5])));
  EXPECT_LT(step, amplitude);
}

TEST(SynthField, NoiseIsBoundedAndPresent) {
  FieldSpec smooth_spec = packed_spec();
  for (auto& l : smooth_spec.channels) l.noise = 0;
  const auto smooth = fill_all(Field(smooth_spec));
  const auto noisy = fill_all(Field(packed_spec()));
  ASSERT_EQ(smooth.size(), noisy.size());
  size_t differing = 0;
  for (size_t i = 0; i < smooth.size(); ++i) {
    double noise = packed_spec().channels[i % 5].noise;
    ASSERT_LE(std::abs(noisy[i] - smooth[i]), noise * 1.0001 + 1e-4) << "element " << i;
    differing += noisy[i] != smooth[i];
  }
  EXPECT_GT(differing, smooth.size() * 9 / 10);
}

TEST(SynthField, RejectsInconsistentSpecs) {
  FieldSpec spec = packed_spec();
  spec.wavelength.pop_back();
  EXPECT_THROW(Field{spec}, Error);
  spec = packed_spec();
  spec.channels.resize(3);
  EXPECT_THROW(Field{spec}, Error);
  spec = packed_spec();
  spec.channel_axis = 4;
  EXPECT_THROW(Field{spec}, Error);
  Field field(packed_spec());
  std::vector<float> small(3);
  const std::vector<int64_t> start = {0, 0, 0, 0}, box = {1, 1, 1, 4};
  EXPECT_THROW(field.fill(start, box, small), Error);
}

TEST(SynthField, WorksForOneDimensionAndNoChannelAxis) {
  FieldSpec spec;
  spec.shape = {100};
  spec.wavelength = {50.0};
  spec.channels = {{10.0, 2.0, 0.1}};
  Field field(spec);
  const auto v = fill_all(field);
  for (float x : v) {
    ASSERT_GE(x, 10.0 - 2.1 - 1e-3);
    ASSERT_LE(x, 10.0 + 2.1 + 1e-3);
  }
}

}  // namespace
}  // namespace chute::synth
