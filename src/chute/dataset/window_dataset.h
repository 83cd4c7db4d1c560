#pragma once
// Weather windows: windows over the time axis of a Zarr group in xarray layout (WeatherBench2,
// ERA5 as written by xarray.to_zarr). Variables have a time, an optional level, a latitude and a
// longitude axis, found by dimension name in any stored order (see window_axes.h); all share
// the time, lat and lon sizes. A sample is a time step t: "inputs" holds the input variables at
// t + input_offsets, then the forcing variables at t + target_offsets, then the static fields;
// "targets" holds the target variables at t + target_offsets.
//
// Samples: sample i is time sample_times[i] when that list is given (every offset of it must lie
// inside the time axis), else t = first_time() + i × sample_stride for every t whose offsets all
// lie in [time_start, time_stop); windows that would cross the ends are never produced.
//
// Channel order (fixed; channel_names() spells it out, e.g. "temperature/level=850/t-1"):
//   inputs:  for each input offset, for each input variable, for each chosen level;
//            then for each target offset, for each forcing variable, for each level, then
//            each computed forcing; then for each static field (one channel each);
//   targets: for each target offset, for each target variable, for each chosen level.
// A variable without a level axis contributes one channel per time step.
//
// Outputs: per sample (lat, lon, C) when channels_last, else (C, lat, lon); lat and lon are the
// chosen index ranges. dtype float32, float16 or bfloat16 (output_dtype).
//
// Reading and placement: each channel is one box of its variable's array, read as stored values
// into a contiguous plane of a per-batch staging buffer (chunks decode straight into it). finish()
// then makes the outputs in one front-to-back pass: CF decoding (cf_decoding.h: fill values to
// NaN, scale_factor/add_offset), normalisation x = (x - mean) × (1 / std) in float32 with
// statistics per channel or per grid point, the cast,
// and for channels-last the interleave of the planes, in tiles of pixels that stay in cache. It
// runs per sample (finishes_per_sample()): the worker that places a sample's last plane places
// the sample, while its planes are still in the caches, not after the whole batch. When
// every channel is plain float32, the output is float32 and channels-first, the planes are read
// straight into the output and only normalisation runs after.

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chute/array/dtype.h"
#include "chute/dataset/cf_decoding.h"
#include "chute/dataset/dataset.h"
#include "chute/format/open.h"
#include "chute/format/zarr.h"
#include "chute/util/option_table.h"

namespace chute {

struct WindowOptions {
  std::vector<std::string> variables;         // input variables, in channel order
  std::vector<std::string> target_variables;  // empty: the same as `variables`
  std::vector<std::string> forcings;          // read at the target offsets, appended to the inputs
  std::vector<std::string> statics;           // (lat, lon) fields appended to the inputs once
  /// Forcings computed from date and grid (computed_forcings.h), at the target offsets, after
  /// the stored forcings; not normalised. They need the three vectors below; left empty, they
  /// are read from the store's time (CF units/calendar decoded in C++), latitude and longitude
  /// coordinates (time_seconds must be given with time_map).
  std::vector<std::string> computed_forcings;
  std::vector<int64_t> time_seconds;   // seconds since 1970-01-01 UTC of every time index
  std::vector<double> lat_values;      // degrees, every row of the grid
  std::vector<double> lon_values;      // degrees, every column
  std::vector<int64_t> level_indices;  // chosen levels by position along the level axis, or
  std::vector<double> level_values;    // by value of the level coordinate array (named like
                                       // the level dimension, else `level_coordinate`)
                                       // (both empty: every level)
  std::vector<int64_t> input_offsets = {-1, 0};
  std::vector<int64_t> target_offsets = {1};
  bool channels_last = true;
  bool decode_cf = true;  // scale_factor/add_offset, fill values -> NaN
  /// Missing values (NaN after decoding): kept, an error naming variable and time, or
  /// replaced by nan_value (in physical units, before normalisation).
  enum class NanPolicy { kKeep, kError, kFill } nan = NanPolicy::kKeep;
  float nan_value = 0.0f;
  /// Appends to the inputs, for every input channel of a stored variable (in order), a mask
  /// channel: 1 where that channel's value is missing (NaN after decoding, before any
  /// nan_value replacement), else 0. Named "<channel>/mask"; not normalised.
  bool nan_mask = false;
  /// false: plain float32 channels-last windows are placed straight into the output with strides
  /// (the placement before staging; kept so `chute bench --direct-placement` can compare).
  bool stage_channels_last = true;
  DataType output_dtype{DTypeKind::kFloat, 4};  // float32, float16 or bfloat16
  std::string level_coordinate = "level";
  int64_t time_start = 0;     // windows stay inside [time_start, time_stop)
  int64_t time_stop = -1;     // -1: the time axis length
  int64_t sample_stride = 1;  // sample i is first_time() + i × sample_stride
  std::vector<int64_t> sample_times;
  /// Non-empty: the time axis seen by windows is this list of store time indices (a regular
  /// grid where a missing date maps to the closest step); offsets and sample times count in it.
  std::vector<int64_t> time_map;         // or exactly these times (then the three above are unused)
  int64_t lat_start = 0, lat_stop = -1;  // the latitude rows read ([start, stop), -1: to the end)
  int64_t lon_start = 0, lon_stop = -1;  // the longitude columns read

  // Normalisation per channel (off when all four are empty). Either explicit values, one per
  // channel of ONE time step of the input variables (in the order above; applied to every offset
  // and to targets; not allowed with forcings, statics or other target variables):
  std::vector<float> mean;
  std::vector<float> std;
  // or arrays of the group named variable + suffix (e.g. "temperature_mean"), or by a pattern
  // where {} stands for the variable (e.g. "mean/{}", the layout of `chute make-dataset`): shape
  // (level,) for a variable with levels (the chosen levels are taken), () or (1,) for one
  // without; any float or integer dtype. Every variable of every output needs them.
  std::string mean_suffix;
  std::string std_suffix;
  // or a statistics group written by `chute stats` (arrays mean/<variable>, std/<variable>);
  // a local path, opened with open_group().
  // Statistics arrays (by suffix or in a group) of shape (level, lat, lon) for a variable with
  // levels, or (lat, lon) for one without, hold statistics per grid point (`chute stats
  // --per-gridpoint`; lat and lon over the whole stored grid, in stored index order): each
  // value is normalised with the mean and std of its own point (the chosen levels and the
  // lat/lon window are taken), in the same placement pass and with the same float arithmetic
  // as per-channel statistics. A point of the window whose mean or std is not finite or whose
  // std is not > 0 (after std_floor) is masked: an error naming the variable, level and point
  // (kError), or every value there becomes NaN (kNan: e.g. sea-surface temperature over land).
  std::string statistics;
  enum class MaskedPoints { kError, kNan } masked_points = MaskedPoints::kError;
  // A finite std below std_floor (e.g. 0 at a point that never changed) is raised to it, per
  // channel and per grid point; 0 leaves every std as it is. Finite and >= 0.
  double std_floor = 0.0;

  /// Name, help and check of every field (option_table.h); the fields marked internal are
  /// computed by chute.windows() from its date, area and step arguments.
  static const std::vector<OptionField<WindowOptions>>& fields();
};

/// Offsets (input_offsets, target_offsets) lie in [-kMaxWindowOffset, kMaxWindowOffset], and
/// sample and mapped times in [0, kMaxWindowTime], so that time + offset never overflows.
inline constexpr int64_t kMaxWindowOffset = int64_t{1} << 31;
inline constexpr int64_t kMaxWindowTime = int64_t{1} << 62;

/// Checks every field on its own (no group needed; what needs the arrays, e.g. a level index
/// past the level axis, is checked by the constructor): names non-empty; input_offsets
/// non-empty; offsets, time_start/time_stop, sample_stride, sample_times, time_map and the
/// lat/lon window in range (a stop is -1 for "to the end" or >= 0: -5 is an error, not the
/// end); level_indices >= 0, not together with level_values; level, lat/lon, mean values
/// finite, std finite and > 0; std_floor finite and >= 0; masked_points known; mean_suffix
/// and std_suffix given together; nan_value finite
/// when it replaces NaN; output_dtype float32/float16/bfloat16; level_coordinate non-empty;
/// computed forcings known. Throws kInvalidArgument naming the field, the value and the
/// allowed range. The WindowDataset constructor calls it first.
void validate(const WindowOptions& options);

class WindowDataset final : public Dataset {
 public:
  /// Throws kInvalidArgument (naming the variable or option) when a variable is missing from
  /// the group, has a dimension that is not time/level/lat/lon or a dtype that is not a number,
  /// sizes disagree, a level is unknown or out of range, offsets are empty or no window fits,
  /// normalisation vectors have the wrong length or a std is not positive, or output_dtype is
  /// not float32/float16/bfloat16.
  WindowDataset(const Group& group, WindowOptions options);

  int64_t num_samples() const override { return num_samples_; }
  const std::vector<OutputSpec>& outputs() const override { return outputs_; }
  const std::vector<OutputSpec>& staging() const override { return staging_; }
  void plan(int64_t sample, int64_t slot, const BatchMemory& memory, ReadPlan& plan) const override;
  void finish(const BatchMemory& memory, ThreadPool* pool) const override;
  /// Staged windows are placed sample by sample, as soon as a sample's planes are read.
  bool finishes_per_sample() const override { return staged(); }
  void finish_sample(const BatchMemory& memory, int64_t slot) const override;
  /// The placement of one staged sample (what finish_sample() runs): `staged[k]` holds the
  /// sample's slot of staging()[k] (its header and planes as plan() read them) and `out[k]`
  /// its place in output k (outputs()[k].sample_nbytes() bytes). The roofline times it on
  /// cache-resident planes (bench/window_roofline.h). Precondition: staged().
  void place_sample(std::span<const std::byte* const> staged,
                    std::span<std::byte* const> out) const;
  std::string describe() const override;

  const WindowOptions& options() const { return options_; }
  /// The time index of sample 0.
  int64_t first_time() const { return sample_time(0); }
  /// The time index of sample `sample`.
  int64_t sample_time(int64_t sample) const;
  /// Channels of one time step of the input variables.
  int64_t step_channels() const { return step_channels_; }
  int64_t height() const { return height_; }  // lat
  int64_t width() const { return width_; }    // lon
  /// The chosen level positions (empty for a group without levels).
  const std::vector<int64_t>& levels() const { return levels_; }
  /// Channel names of output `output` (0 inputs, 1 targets), in channel order.
  std::vector<std::string> channel_names(size_t output) const;
  /// Bytes of the decoded chunk values a sample holds: every plane it reads, in its stored
  /// dtype (computed forcings and masks read nothing). What the benchmark's roofline, which
  /// counts decoded chunk bytes, charges for one sample.
  int64_t decoded_bytes_per_sample() const;
  /// True when planes are read into staging and finish() places them (see the header comment).
  bool staged() const { return !staging_.empty(); }

 private:
  struct Variable {
    std::string name;
    ArrayPtr array;
    int time_axis = -1, level_axis = -1, lat_axis = -1, lon_axis = -1;
    detail::CfEncoding cf;
    std::vector<double> mean, stddev;  // per level position (or one value), when normalising
    // Per grid point instead (statistics arrays of shape (level, lat, lon) or (lat, lon)): for
    // each chosen level, a plane of the chosen lat × lon window; inv_std = 1 / std.
    std::vector<float> point_mean, point_inv_std;
  };
  struct Channel {
    const Variable* variable = nullptr;
    int64_t level = -1;        // position along the level axis, -1 without
    int64_t offset = 0;        // time offset
    bool timeless = false;     // a static field
    int computed = -1;         // a ComputedForcing (no read), -1 for stored variables
    int computed_index = -1;   // its position in options.computed_forcings
    int64_t mask_of = -1;      // a NaN mask: 1 where input channel mask_of is missing
    int64_t plane_offset = 0;  // bytes from the start of the slot's planes
    detail::ChannelDecode decode;
    // Statistics per grid point (height × width each; null for per-channel statistics): then
    // decode has mean 0 and inv_std 1 and finish() normalises per point after decoding.
    const float* point_mean = nullptr;
    const float* point_inv_std = nullptr;
  };
  struct Output {
    std::vector<Channel> channels;
    int64_t slot_bytes = 0;  // planes of one sample (staged: after an int64 header, the time)
  };
  /// Staged slots start with the sample's time index (written by plan(), read by finish()).
  static constexpr int64_t kSlotHeader = 8;
  void add_computed_channels(Output& output);
  /// Computed forcings without explicit time_seconds/lat_values/lon_values: decodes them from
  /// the group's time coordinate (cf_time.h) and its 1-D latitude and longitude coordinates,
  /// named like the variables' dimensions (window_coordinates.cc).
  void find_computed_forcing_coordinates(const Group& group);
  /// Throws kInvalidArgument naming the channel's variable, level and time when the decoded
  /// values of `c` at `time` hold a NaN (nan = kError).
  void check_no_nan(const Channel& c, int64_t time, const float* values, int64_t n) const;
  void place_computed(const Channel& c, int64_t time, int64_t p0, int64_t n, std::byte* dst,
                      int64_t stride, DataType out_type) const;
  const Variable& add_variable(const Group& group, const std::string& name, bool is_static);
  Variable* find_variable(const std::string& name);
  void load_statistics(const Group& group, const std::vector<std::string>& targets);
  /// Reads per-grid-point statistics array `array` (named `name`) of variable `v`: the chosen
  /// levels' planes over the chosen lat × lon window.
  std::vector<double> read_point_statistics(const Variable& v, const Array& array,
                                            const std::string& name) const;
  /// Sets v.point_mean and v.point_inv_std from the values read_point_statistics gave, applying
  /// std_floor and masked_points; names the arrays `names` (mean, std) in errors.
  void set_point_statistics(Variable& v, const std::vector<double>& mean,
                            const std::vector<double>& stddev,
                            const std::pair<std::string, std::string>& names) const;
  /// Makes `n` values of channel `c` starting at pixel p0 of the window into `dst` (out_type,
  /// contiguous): decoded from `src` (stored values), NaN-checked, normalised (per channel or
  /// per grid point), cast. `scratch` holds at least n floats.
  void make_row(const Channel& c, const std::byte* slot_in, int64_t p0, int64_t n, std::byte* dst,
                DataType out_type, float* scratch) const;
  /// The placement of finish(): channel `ci` of slot `slot` of output `k` (channels-first), or
  /// tiles [first_tile, end_tile) of tile_pixels(k) pixels of it (channels-last, staged).
  /// `slot_in` is the sample's staged slot (or, direct, its output) and `slot_out` its output.
  void place_plane(size_t k, const std::byte* slot_in, std::byte* slot_out, int64_t ci) const;
  void place_tiles(size_t k, const std::byte* slot_in, std::byte* slot_out, int64_t first_tile,
                   int64_t end_tile) const;
  int64_t tile_pixels(size_t k) const;
  void add_channels(Output& output, const std::vector<std::string>& names,
                    const std::vector<int64_t>& offsets);
  void plan_output(const Output& output, int64_t time, std::byte* base, int64_t slot,
                   ReadPlan& plan, int64_t sample) const;

  WindowOptions options_;
  std::vector<std::shared_ptr<Variable>> variables_;  // shared: channels point into them
  std::vector<Output> layout_;                        // inputs, then targets
  std::vector<int64_t> levels_;
  std::vector<double> level_values_;  // for channel names (empty when no coordinate)
  std::vector<OutputSpec> outputs_;
  std::vector<OutputSpec> staging_;
  int64_t num_samples_ = 0;
  int64_t first_time_ = 0;
  int64_t time_length_ = -1;
  int64_t num_levels_ = -1;
  int64_t step_channels_ = 0;
  int64_t height_ = 0, width_ = 0;  // the chosen window of the grid
  int64_t full_height_ = -1, full_width_ = -1;
  std::string first_name_;
  bool normalise_ = false;
};

/// Opens the group at local `path` with open_group() and builds a WindowDataset.
std::shared_ptr<WindowDataset> open_window_dataset(
    const std::string& path, WindowOptions options,
    const CacheOptions& cache = default_cache_options());
/// Several stores joined into one group (store_join.h): coordinates checked, arrays by name.
std::shared_ptr<WindowDataset> open_window_dataset(
    const std::vector<std::string>& paths, WindowOptions options,
    const CacheOptions& cache = default_cache_options());

}  // namespace chute
