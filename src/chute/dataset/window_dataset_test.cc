// W2 windows: sample numbering, channel order, both layouts, levels by index and by value,
// normalisation and casts, all compared with a reference computed here from the formula.

#include "chute/dataset/window_dataset.h"

#include <gtest/gtest.h>

#include <cstring>

#include "chute/pipeline/batch_assembler.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/pipeline/transforms.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using namespace chute::loader_testing;

using small_weather::kH;
using small_weather::kL;
using small_weather::kLevels;
using small_weather::kT;
using small_weather::kT2mMean;
using small_weather::kT2mStd;
using small_weather::kW;
using small_weather::kZMean;
using small_weather::kZStd;
using small_weather::make_group;

struct Channel {
  int64_t offset;
  bool is_z;
  int64_t level;  // position along the level axis (z only)
  float mean = 0, inv_std = 1;
};

/// The reference channel list: for each offset, for each variable (z, t2m), for each level.
std::vector<Channel> reference_channels(const std::vector<int64_t>& offsets,
                                        const std::vector<int64_t>& levels, bool normalise) {
  std::vector<Channel> channels;
  for (int64_t offset : offsets) {
    for (int64_t level : levels) {
      Channel c{offset, true, level};
      if (normalise) c.mean = kZMean[level], c.inv_std = static_cast<float>(1.0 / kZStd[level]);
      channels.push_back(c);
    }
    Channel c{offset, false, 0};
    if (normalise) c.mean = kT2mMean[0], c.inv_std = static_cast<float>(1.0 / kT2mStd[0]);
    channels.push_back(c);
  }
  return channels;
}

float reference_value(const Channel& c, int64_t time, int64_t y, int64_t x) {
  float v;
  if (c.is_z) {
    const int64_t index[4] = {time + c.offset, c.level, y, x};
    v = value_at(1, index);
  } else {
    const int64_t index[3] = {time + c.offset, y, x};
    v = value_at(2, index);
  }
  return (v - c.mean) * c.inv_std;
}

/// Assembles every sample of `dataset` in one batch and checks both outputs element by element.
void check_all_windows(const std::shared_ptr<WindowDataset>& dataset,
                       const std::vector<int64_t>& levels, bool normalise, size_t threads) {
  const WindowOptions& o = dataset->options();
  const int64_t n = dataset->num_samples();
  std::vector<int64_t> samples(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) samples[static_cast<size_t>(i)] = n - 1 - i;  // reversed
  BatchAssembler assembler(dataset, n, threads);
  std::vector<std::byte> buffer(assembler.layout().total_bytes);
  assembler.assemble(samples, buffer.data());
  for (size_t k = 0; k < dataset->outputs().size(); ++k) {
    const auto channels =
        reference_channels(k == 0 ? o.input_offsets : o.target_offsets, levels, normalise);
    const int64_t nc = static_cast<int64_t>(channels.size());
    const OutputSpec& spec = dataset->outputs()[k];
    ASSERT_EQ(spec.sample_elements(), nc * kH * kW);
    const std::byte* base = buffer.data() + assembler.layout().offsets[k];
    for (int64_t slot = 0; slot < n; ++slot) {
      const int64_t time = dataset->first_time() + samples[static_cast<size_t>(slot)];
      for (int64_t c = 0; c < nc; ++c) {
        for (int64_t y = 0; y < kH; ++y) {
          for (int64_t x = 0; x < kW; ++x) {
            const int64_t within = o.channels_last ? (y * kW + x) * nc + c : (c * kH + y) * kW + x;
            const int64_t at = slot * nc * kH * kW + within;
            const float expected = reference_value(channels[static_cast<size_t>(c)], time, y, x);
            if (spec.dtype.size == 4) {
              float actual;
              std::memcpy(&actual, base + at * 4, 4);
              ASSERT_EQ(actual, expected) << "output " << k << " slot " << slot << " c " << c;
            } else {
              uint16_t actual;
              std::memcpy(&actual, base + at * 2, 2);
              const uint16_t want = spec.dtype.kind == DTypeKind::kBFloat
                                        ? float_to_bfloat16(expected)
                                        : float_to_half(expected);
              ASSERT_EQ(actual, want) << "output " << k << " slot " << slot << " c " << c;
            }
          }
        }
      }
    }
  }
}

WindowOptions base_options() {
  WindowOptions o;
  o.variables = {"z", "t2m"};
  o.input_offsets = {-1, 0};
  o.target_offsets = {1};
  return o;
}

TEST(WindowDataset, NumbersValidWindows) {
  const Group group = make_group();
  WindowDataset dataset(group, base_options());
  EXPECT_EQ(dataset.first_time(), 1);
  EXPECT_EQ(dataset.num_samples(), kT - 2);
  EXPECT_EQ(dataset.step_channels(), kL + 1);
  EXPECT_EQ(dataset.outputs()[0].sample_shape, (std::vector<int64_t>{kH, kW, 2 * (kL + 1)}));
  EXPECT_EQ(dataset.outputs()[1].sample_shape, (std::vector<int64_t>{kH, kW, kL + 1}));

  WindowOptions o = base_options();
  o.input_offsets = {-3, 0};
  o.target_offsets = {2};
  o.time_start = 1;
  o.time_stop = 7;
  WindowDataset ranged(group, o);
  EXPECT_EQ(ranged.first_time(), 4);
  EXPECT_EQ(ranged.num_samples(), 1);  // t = 4 only: 1..6 holds t-3 and t+2

  o.target_offsets = {};
  o.input_offsets = {2, 3};
  WindowDataset forward(group, o);
  EXPECT_EQ(forward.first_time(), 1);  // t itself must lie in the range too
  EXPECT_EQ(forward.num_samples(), 3);
  EXPECT_EQ(forward.outputs().size(), 1u);
}

TEST(WindowDataset, ChannelOrderIsOffsetVariableLevel) {
  const Group group = make_group();
  WindowOptions o = base_options();
  o.level_values = {850, 500};
  WindowDataset dataset(group, o);
  EXPECT_EQ(dataset.levels(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(dataset.channel_names(0),
            (std::vector<std::string>{"z/level=850/t-1", "z/level=500/t-1", "t2m/t-1",
                                      "z/level=850/t+0", "z/level=500/t+0", "t2m/t+0"}));
  EXPECT_EQ(dataset.channel_names(1),
            (std::vector<std::string>{"z/level=850/t+1", "z/level=500/t+1", "t2m/t+1"}));
}

TEST(WindowDataset, ChannelsLastMatchesReference) {
  WindowOptions o = base_options();
  o.level_values = {850, 500};
  auto dataset = std::make_shared<WindowDataset>(make_group(), o);
  EXPECT_TRUE(dataset->staged());
  for (size_t threads : {1, 3}) check_all_windows(dataset, {2, 0}, false, threads);
  o.stage_channels_last = false;  // the former path: chunks placed straight into the output
  o.mean_suffix = "_mean";
  o.std_suffix = "_std";
  auto direct = std::make_shared<WindowDataset>(make_group(), o);
  EXPECT_FALSE(direct->staged());
  check_all_windows(direct, {2, 0}, true, 2);
}

TEST(WindowDataset, ChannelsFirstMatchesReference) {
  WindowOptions o = base_options();
  o.channels_last = false;
  o.level_indices = {1};
  o.input_offsets = {0, -2};
  o.target_offsets = {1, 2};
  auto dataset = std::make_shared<WindowDataset>(make_group(), o);
  EXPECT_EQ(dataset->outputs()[0].sample_shape, (std::vector<int64_t>{4, kH, kW}));
  check_all_windows(dataset, {1}, false, 2);
}

TEST(WindowDataset, NormalisedFromArraysAndCast) {
  for (DataType dtype : {DataType{DTypeKind::kFloat, 4}, DataType{DTypeKind::kFloat, 2},
                         DataType{DTypeKind::kBFloat, 2}}) {
    for (bool channels_last : {true, false}) {
      WindowOptions o = base_options();
      o.mean_suffix = "_mean";
      o.std_suffix = "_std";
      o.output_dtype = dtype;
      o.channels_last = channels_last;
      auto dataset = std::make_shared<WindowDataset>(make_group(), o);
      EXPECT_EQ(dataset->outputs()[0].dtype, dtype);
      check_all_windows(dataset, {0, 1, 2}, true, 2);
    }
  }
}

TEST(WindowDataset, StatisticsArraysByPattern) {
  WindowOptions o = base_options();
  o.mean_suffix = "{}_mean";  // the same arrays as the suffix "_mean", named by a pattern
  o.std_suffix = "{}_std";
  auto dataset = std::make_shared<WindowDataset>(make_group(), o);
  check_all_windows(dataset, {0, 1, 2}, true, 2);
  o.mean_suffix = "mean/{}";  // no such arrays: the error names the array looked for
  try {
    WindowDataset missing(make_group(), o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'mean/z'"), std::string::npos) << e.what();
  }
}

TEST(WindowDataset, NormalisedFromValues) {
  WindowOptions o = base_options();
  o.level_indices = {0, 1, 2};
  o.mean = {kZMean[0], kZMean[1], kZMean[2], kT2mMean[0]};
  o.std = {kZStd[0], kZStd[1], kZStd[2], kT2mStd[0]};
  o.output_dtype = DataType{DTypeKind::kBFloat, 2};
  auto dataset = std::make_shared<WindowDataset>(make_group(), o);
  check_all_windows(dataset, {0, 1, 2}, true, 1);
}

TEST(WindowDataset, RejectsBadOptionsWithClearMessages) {
  const Group group = make_group();
  auto message_of = [&](WindowOptions o) -> std::string {
    try {
      WindowDataset dataset(group, o);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "no error";
  };
  WindowOptions o = base_options();
  o.variables = {"z", "u10"};
  EXPECT_NE(message_of(o).find("'u10'"), std::string::npos);
  o = base_options();
  o.level_values = {925};
  EXPECT_NE(message_of(o).find("925"), std::string::npos);
  o = base_options();
  o.level_indices = {3};
  EXPECT_NE(message_of(o).find("level index 3"), std::string::npos);
  o = base_options();
  o.input_offsets = {-4, 0};
  o.target_offsets = {4};
  EXPECT_NE(message_of(o).find("no window"), std::string::npos);
  o = base_options();
  o.mean = {1, 2};
  o.std = {1, 2};
  EXPECT_NE(message_of(o).find("expected 4"), std::string::npos);
  o = base_options();
  o.mean = {0, 0, 0, 0};
  o.std = {1, 0, 1, 1};
  EXPECT_NE(message_of(o).find("std"), std::string::npos);
  o = base_options();
  o.output_dtype = DataType{DTypeKind::kInt, 4};
  EXPECT_NE(message_of(o).find("int32"), std::string::npos);
  o = base_options();
  o.variables = {"level"};
  EXPECT_NE(message_of(o).find("'level'"), std::string::npos);
}

}  // namespace
}  // namespace chute
