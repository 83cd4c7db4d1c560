// WindowOptions checked field by field by validate(), the WindowDataset constructor and
// open_window_dataset(): one row per field and bad value, each error naming the field and value.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "chute/dataset/window_dataset.h"
#include "chute/util/error.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

using Nan = WindowOptions::NanPolicy;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct WindowRow {
  std::string what;  // the message must hold this
  std::function<void(WindowOptions&)> mutate;
};

std::vector<WindowRow> bad_window_rows() {
  return {
      {"variables must not be empty", [](WindowOptions& o) { o.variables.clear(); }},
      {"variables[1] = '' is empty",
       [](WindowOptions& o) {
         o.variables = {"t", ""};
       }},
      {"target_variables[0] = ''", [](WindowOptions& o) { o.target_variables = {""}; }},
      {"forcings[0] = ''", [](WindowOptions& o) { o.forcings = {""}; }},
      {"statics[0] = ''", [](WindowOptions& o) { o.statics = {""}; }},
      {"computed_forcings[0] = ''", [](WindowOptions& o) { o.computed_forcings = {""}; }},
      {"computed forcing 'moon_phase'",
       [](WindowOptions& o) { o.computed_forcings = {"moon_phase"}; }},
      {"lat_values[1] = nan",
       [](WindowOptions& o) {
         o.lat_values = {1, kNaN};
       }},
      {"lon_values[0] = inf", [](WindowOptions& o) { o.lon_values = {kInf}; }},
      {"levels[0] = nan", [](WindowOptions& o) { o.level_values = {kNaN}; }},
      {"level_indices[0] = -1", [](WindowOptions& o) { o.level_indices = {-1}; }},
      {"level_indices or level_values",
       [](WindowOptions& o) {
         o.level_indices = {0};
         o.level_values = {500};
       }},
      {"input_offsets must not be empty", [](WindowOptions& o) { o.input_offsets.clear(); }},
      {"input_offsets[0] = -9223372036854775808",
       [](WindowOptions& o) { o.input_offsets = {INT64_MIN}; }},
      {"target_offsets[1] = 1099511627776",
       [](WindowOptions& o) {
         o.target_offsets = {1, int64_t{1} << 40};
       }},
      {"forcings need target_offsets",
       [](WindowOptions& o) {
         o.forcings = {"f"};
         o.target_offsets.clear();
       }},
      {"nan = 7", [](WindowOptions& o) { o.nan = static_cast<Nan>(7); }},
      {"nan_value = nan",
       [](WindowOptions& o) {
         o.nan = Nan::kFill;
         o.nan_value = std::nanf("");
       }},
      {"nan_value = -inf",
       [](WindowOptions& o) {
         o.nan = Nan::kFill;
         o.nan_value = -std::numeric_limits<float>::infinity();
       }},
      {"std_floor = -0.5", [](WindowOptions& o) { o.std_floor = -0.5; }},
      {"std_floor = inf",
       [](WindowOptions& o) { o.std_floor = std::numeric_limits<double>::infinity(); }},
      {"masked_points = 5",
       [](WindowOptions& o) { o.masked_points = static_cast<WindowOptions::MaskedPoints>(5); }},
      {"dtype = 'int32' is not one of",
       [](WindowOptions& o) {
         o.output_dtype = DataType{DTypeKind::kInt, 4};
       }},
      {"level_coordinate = ''", [](WindowOptions& o) { o.level_coordinate.clear(); }},
      {"time_start = -1", [](WindowOptions& o) { o.time_start = -1; }},
      {"time_stop = -5", [](WindowOptions& o) { o.time_stop = -5; }},
      {"sample_stride = 0", [](WindowOptions& o) { o.sample_stride = 0; }},
      {"sample_times[0] = -1", [](WindowOptions& o) { o.sample_times = {-1}; }},
      {"sample_times[0] = 9223372036854775807",
       [](WindowOptions& o) { o.sample_times = {INT64_MAX}; }},
      {"time_map[1] = -2",
       [](WindowOptions& o) {
         o.time_map = {5, -2};
       }},
      {"lat_start = -1", [](WindowOptions& o) { o.lat_start = -1; }},
      {"lat_stop = -5", [](WindowOptions& o) { o.lat_stop = -5; }},
      {"lon_start = -3", [](WindowOptions& o) { o.lon_start = -3; }},
      {"lon_stop = -2", [](WindowOptions& o) { o.lon_stop = -2; }},
      {"mean[0] = nan", [](WindowOptions& o) { o.mean = {std::nanf("")}; }},
      {"std[1] = 0",
       [](WindowOptions& o) {
         o.std = {1, 0};
       }},
      {"std[0] = -1", [](WindowOptions& o) { o.std = {-1}; }},
      {"std[0] = inf", [](WindowOptions& o) { o.std = {std::numeric_limits<float>::infinity()}; }},
      {"mean_suffix = '_mean' and std_suffix = ''",
       [](WindowOptions& o) { o.mean_suffix = "_mean"; }},
  };
}

WindowOptions valid() {
  WindowOptions o;
  o.variables = {"t"};
  return o;
}

using chute::testing::message_of;

TEST(WindowOptionsAudit, DefaultsAndEdgesAreValid) {
  WindowOptions o = valid();
  EXPECT_NO_THROW(validate(o));
  o.input_offsets = {-(int64_t{1} << 31), 0};
  o.target_offsets = {int64_t{1} << 31};
  o.time_stop = -1;
  o.lat_stop = 0;
  o.nan = Nan::kFill;
  o.nan_value = -999;
  o.mean = {0};
  o.std = {1e-30f};
  o.mean_suffix = "_mean";
  o.std_suffix = "_std";
  o.computed_forcings = {"toa_radiation"};
  EXPECT_NO_THROW(validate(o));
  o.nan = Nan::kKeep;  // nan_value is not used, so any value is fine
  o.nan_value = std::nanf("");
  EXPECT_NO_THROW(validate(o));
}

TEST(WindowOptionsAudit, EveryBadFieldIsNamedWithItsValue) {
  for (const WindowRow& row : bad_window_rows()) {
    SCOPED_TRACE(row.what);
    WindowOptions o = valid();
    row.mutate(o);
    const std::string message = message_of([&] { validate(o); });
    EXPECT_NE(message.find(row.what), std::string::npos) << message;
    // Both openers check before they open anything: a missing path is not what they report.
    EXPECT_EQ(message_of([&] { open_window_dataset("/nonexistent/chute/era5.zarr", o); }), message);
    EXPECT_EQ(message_of([&] {
                open_window_dataset(
                    std::vector<std::string>{"/nonexistent/a.zarr", "/nonexistent/b.zarr"}, o);
              }),
              message);
    // And the constructor, before it looks for any variable in the group.
    EXPECT_EQ(message_of([&] { WindowDataset(Group{}, o); }), message);
  }
}

}  // namespace
}  // namespace chute
