#pragma once
// W2 "variables": windows over the time axis of a Zarr group in xarray layout (WeatherBench2).
// Variables are float32 arrays (time, level, lat, lon) or (time, lat, lon), all with the same
// time, lat and lon sizes. A sample is a time step t: its inputs are the chosen variables and
// levels at t + input_offsets, its targets the same at t + target_offsets.
//
// Samples: a window is valid when every t + offset lies in [time_start, time_stop); valid windows
// are numbered i = 0..num_samples()-1 and sample i is t = first_time() + i, where
// first_time() = time_start + max(0, -min(offsets)). Windows that would cross the ends are never
// produced.
//
// Channel order (fixed): for each time offset (in the order given), for each variable (in the
// order given), for each chosen level (in the order given; a 2-D variable contributes one channel):
//   channel = (offset_index × step_channels) + variable_channel_start[v] + level_index
// where step_channels = Σ_v (levels if 3-D else 1). channel_names() spells this out, e.g.
// "temperature/level=850/t-1".
//
// Outputs: "inputs" with input_offsets.size() × step_channels channels and "targets" (absent when
// target_offsets is empty) with target_offsets.size() × step_channels; per sample (lat, lon, C)
// when channels_last, else (C, lat, lon). dtype float32, float16 or bfloat16 (output_dtype).
//
// Reading: each (offset, variable, level) is one box of the variable's array written straight
// into a strided view of the batch buffer (channel stride), so no temporary is made. Then, in
// finish(), optional normalisation per channel, x = (x - mean[c]) / std[c], and the cast.

#include <string>
#include <vector>

#include "chute/array/dtype.h"
#include "chute/dataset/dataset.h"
#include "chute/format/zarr.h"

namespace chute {

struct WindowOptions {
  std::vector<std::string> variables;  // array paths inside the group, in channel order
  std::vector<int64_t> level_indices;  // chosen levels by position along the level axis, or
  std::vector<double> level_values;    // by value of the `level_coordinate` array
                                       // (both empty: every level)
  std::vector<int64_t> input_offsets = {-1, 0};
  std::vector<int64_t> target_offsets = {1};
  bool channels_last = true;
  DataType output_dtype{DTypeKind::kFloat, 4};  // float32, float16 or bfloat16
  std::string level_coordinate = "level";       // 1-D array of level values
  int64_t time_start = 0;                       // windows stay inside [time_start, time_stop)
  int64_t time_stop = -1;                       // -1: the time axis length

  // Normalisation per channel (off when all four are empty). Either explicit values, one per
  // channel of ONE time step (step_channels, in the order above; applied to every offset):
  std::vector<float> mean;
  std::vector<float> std;
  // or arrays of the group named variable + suffix (e.g. "temperature_mean"), or by a pattern
  // where {} stands for the variable (e.g. "mean/{}", the layout of `chute make-dataset`): shape
  // (level,) for a 3-D variable (the chosen levels are taken), () or (1,) for a 2-D one; any float
  // or integer dtype.
  std::string mean_suffix;
  std::string std_suffix;
};

class WindowDataset final : public Dataset {
 public:
  /// Throws kInvalidArgument (naming the variable or option) when a variable is missing from
  /// the group, is not 3-D/4-D float32, sizes disagree, a level is unknown or out of range,
  /// offsets are empty or no window fits, normalisation vectors have the wrong length or a std
  /// is not positive, or output_dtype is not float32/float16/bfloat16.
  WindowDataset(const Group& group, WindowOptions options);

  int64_t num_samples() const override { return num_samples_; }
  const std::vector<OutputSpec>& outputs() const override { return outputs_; }
  const std::vector<OutputSpec>& staging() const override { return staging_; }
  void plan(int64_t sample, int64_t slot, const BatchMemory& memory, ReadPlan& plan) const override;
  void finish(const BatchMemory& memory, ThreadPool* pool) const override;
  std::string describe() const override;

  const WindowOptions& options() const { return options_; }
  /// The time index of sample 0; sample i is time first_time() + i.
  int64_t first_time() const { return first_time_; }
  int64_t step_channels() const { return step_channels_; }
  int64_t height() const { return height_; }  // lat
  int64_t width() const { return width_; }    // lon
  /// The chosen level positions (empty for a group of 2-D variables only).
  const std::vector<int64_t>& levels() const { return levels_; }
  /// Channel names of output `output` (0 inputs, 1 targets), in channel order.
  std::vector<std::string> channel_names(size_t output) const;
  /// Per-channel mean and 1/std of one time step (empty when not normalising).
  const std::vector<float>& channel_mean() const { return mean_; }
  const std::vector<float>& channel_inv_std() const { return inv_std_; }

 private:
  struct Variable {
    std::string name;
    ArrayPtr array;
    bool has_levels = false;
    int64_t channel_start = 0;  // within one time step
  };
  void plan_output(int64_t time, const std::vector<int64_t>& offsets, std::byte* slot_base,
                   int64_t slot, ReadPlan& plan, int64_t sample) const;

  WindowOptions options_;
  std::vector<Variable> variables_;
  std::vector<int64_t> levels_;
  std::vector<double> level_values_;  // for channel names (empty when no coordinate)
  std::vector<OutputSpec> outputs_;
  std::vector<OutputSpec> staging_;
  std::vector<float> mean_;
  std::vector<float> inv_std_;
  int64_t num_samples_ = 0;
  int64_t first_time_ = 0;
  int64_t step_channels_ = 0;
  int64_t height_ = 0;
  int64_t width_ = 0;
};

/// Opens the group at local `path` with open_group() and builds a WindowDataset.
std::shared_ptr<WindowDataset> open_window_dataset(const std::string& path, WindowOptions options);

}  // namespace chute
