#include "chute/dataset/window_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "chute/array/read_plan.h"
#include "chute/dataset/computed_forcings.h"
#include "chute/dataset/many_files.h"
#include "chute/dataset/store_join.h"
#include "chute/dataset/window_axes.h"
#include "chute/pipeline/transforms.h"
#include "chute/util/error.h"
#include "chute/util/option_check.h"

namespace chute {

namespace {

std::string offset_name(int64_t offset) { return fmt::format("t{:+d}", offset); }

}  // namespace

const std::vector<OptionField<WindowOptions>>& WindowOptions::fields() {
  using O = WindowOptions;
  constexpr auto kOffset = static_cast<long double>(kMaxWindowOffset);
  const OptionCheck internal{.internal = true};
  static const std::vector<OptionField<O>> table = {
      {"variables", &O::variables, "input variables, in channel order", {.non_empty = true}},
      {"target_variables",
       &O::target_variables,
       "variables of \"targets\"",
       {.non_empty = true, .none = "the input variables", .default_none = true}},
      {"forcings", &O::forcings, "variables read at the target steps, appended to the inputs"},
      {"computed_forcings", &O::computed_forcings,
       "cos_local_time, sin_local_time, cos_day_of_year, sin_day_of_year, toa_radiation: "
       "computed at the target steps, after the stored forcings (not normalised)"},
      {"statics", &O::statics, "2-D (lat, lon) fields appended to the inputs once"},
      {"levels",
       &O::level_values,
       "values of the level coordinate to read",
       {.non_empty = true, .none = "every level", .default_none = true}},
      {"level_indices",
       &O::level_indices,
       "positions along the level axis to read",
       {.low = 0, .non_empty = true, .none = "every level", .default_none = true}},
      {"input_offsets",
       &O::input_offsets,
       "input steps, in store steps from the sample's time",
       {.low = -kOffset, .high = kOffset, .non_empty = true}},
      {"target_offsets",
       &O::target_offsets,
       "target steps, in store steps",
       {.low = -kOffset, .high = kOffset}},
      {"channels_last", &O::channels_last,
       "outputs (lat, lon, channels), else (channels, lat, lon)"},
      {"dtype",
       OptionText<O>{[](const O& o) { return o.output_dtype.name(); },
                     [](O& o, const std::string& name) {
                       o.output_dtype = name == "float16"    ? DataType{DTypeKind::kFloat, 2}
                                        : name == "bfloat16" ? DataType{DTypeKind::kBFloat, 2}
                                                             : DataType{DTypeKind::kFloat, 4};
                     }},
       "the outputs' dtype",
       {.choices = {"float32", "float16", "bfloat16"}}},
      {"decode_cf", &O::decode_cf, "CF decoding: fill values -> NaN, scale_factor/add_offset"},
      {"nan_mask", &O::nan_mask,
       "append a channel per input channel: 1 where the value was missing (\"<channel>/mask\")"},
      {"mean",
       &O::mean,
       "normalisation: one mean per channel of one step of the inputs",
       {.none = "no explicit values", .default_none = true}},
      {"std",
       &O::std,
       "normalisation: one standard deviation per channel (> 0)",
       {.low = std::numeric_limits<float>::denorm_min(),
        .none = "no explicit values",
        .default_none = true}},
      {"mean_suffix", &O::mean_suffix,
       "normalise with the arrays named variable + suffix (\"mean/{}\": a pattern)"},
      {"std_suffix", &O::std_suffix, "the same for the standard deviations"},
      {"statistics",
       &O::statistics,
       "a group written by `chute stats`: normalise with its mean/<v> and std/<v>",
       {.none = "no statistics group", .default_none = true, .path = true}},
      {"masked_points",
       OptionText<O>{[](const O& o) -> std::string {
                       return o.masked_points == O::MaskedPoints::kNan ? "nan" : "error";
                     },
                     [](O& o, const std::string& name) {
                       o.masked_points =
                           name == "nan" ? O::MaskedPoints::kNan : O::MaskedPoints::kError;
                     }},
       "a read point whose statistics are not finite or std <= 0: an error, or NaN values",
       {.choices = {"error", "nan"}}},
      {"std_floor", &O::std_floor, "raise every finite std below it to it", {.low = 0}},
      {"level_coordinate", &O::level_coordinate,
       "the coordinate array of levels when not named like the level dimension"},
      // Computed by chute.windows() from start/end/frequency, area, grid_shard, nan, time_range.
      {"nan",
       OptionText<O>{[](const O& o) -> std::string {
                       return o.nan == O::NanPolicy::kError  ? "error"
                              : o.nan == O::NanPolicy::kFill ? "fill"
                                                             : "keep";
                     },
                     [](O& o, const std::string& name) {
                       o.nan = name == "error"  ? O::NanPolicy::kError
                               : name == "fill" ? O::NanPolicy::kFill
                                                : O::NanPolicy::kKeep;
                     }},
       "missing values",
       {.choices = {"keep", "error", "fill"}, .internal = true}},
      {"nan_value",
       &O::nan_value,
       "the value replacing missing ones (finite with nan = fill)",
       {.internal = true, .non_finite = true}},
      {"time_start", &O::time_start, "first time index of the windows", internal},
      {"time_stop", &O::time_stop, "time index the windows stay before (-1: the end)", internal},
      {"sample_stride", &O::sample_stride, "time steps between samples", internal},
      {"sample_times", &O::sample_times, "the samples' time indices", internal},
      {"time_map", &O::time_map, "store time index of each step of a regular axis", internal},
      {"time_seconds", &O::time_seconds, "seconds since 1970 of every time index", internal},
      {"lat_values", &O::lat_values, "degrees of every grid row", internal},
      {"lon_values", &O::lon_values, "degrees of every grid column", internal},
      {"lat_start", &O::lat_start, "first latitude row read", internal},
      {"lat_stop", &O::lat_stop, "latitude row the read stops before (-1: the end)", internal},
      {"lon_start", &O::lon_start, "first longitude column read", internal},
      {"lon_stop", &O::lon_stop, "longitude column the read stops before (-1: the end)", internal},
  };
  return table;
}

void validate(const WindowOptions& o) {
  using detail::check_option;
  using detail::check_option_range;
  constexpr std::string_view kOwner = "window dataset";
  check_fields(kOwner, o);
  const std::pair<const char*, const std::vector<std::string>*> name_lists[] = {
      {"variables", &o.variables},
      {"target_variables", &o.target_variables},
      {"forcings", &o.forcings},
      {"statics", &o.statics},
      {"computed_forcings", &o.computed_forcings}};
  for (const auto& [field, names] : name_lists) {
    for (size_t i = 0; i < names->size(); ++i) {
      check_option(!(*names)[i].empty(), kOwner, fmt::format("{}[{}]", field, i), "''",
                   "is empty: expected a variable name");
    }
  }
  for (const std::string& name : o.computed_forcings) parse_computed_forcing(name);
  const std::pair<const char*, const std::vector<double>*> coordinates[] = {
      {"lat_values", &o.lat_values},
      {"lon_values", &o.lon_values},
      {"level_values", &o.level_values}};
  for (const auto& [field, values] : coordinates) {
    for (size_t i = 0; i < values->size(); ++i) {
      check_option(std::isfinite((*values)[i]), kOwner, fmt::format("{}[{}]", field, i),
                   (*values)[i], "is not a finite number");
    }
  }
  for (size_t i = 0; i < o.level_indices.size(); ++i) {
    check_option_range<int64_t>(kOwner, fmt::format("level_indices[{}]", i), o.level_indices[i], 0,
                                INT64_MAX);
  }
  if (!o.level_indices.empty() && !o.level_values.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "window dataset: give level_indices or level_values, not both");
  }
  if (o.input_offsets.empty()) {
    fail(ErrorCode::kInvalidArgument, "window dataset: input_offsets is empty");
  }
  const std::pair<const char*, const std::vector<int64_t>*> offsets[] = {
      {"input_offsets", &o.input_offsets}, {"target_offsets", &o.target_offsets}};
  for (const auto& [field, values] : offsets) {
    for (size_t i = 0; i < values->size(); ++i) {
      check_option_range<int64_t>(kOwner, fmt::format("{}[{}]", field, i), (*values)[i],
                                  -kMaxWindowOffset, kMaxWindowOffset);
    }
  }
  if (!o.forcings.empty() && o.target_offsets.empty()) {
    fail(ErrorCode::kInvalidArgument, "window dataset: forcings need target_offsets");
  }
  if (o.nan != WindowOptions::NanPolicy::kKeep && o.nan != WindowOptions::NanPolicy::kError &&
      o.nan != WindowOptions::NanPolicy::kFill) {
    fail(ErrorCode::kInvalidArgument, "window dataset: nan = {} is not keep, error or fill",
         static_cast<int>(o.nan));
  }
  check_option(std::isfinite(o.std_floor) && o.std_floor >= 0, kOwner, "std_floor", o.std_floor,
               "is not a finite number >= 0");
  if (o.masked_points != WindowOptions::MaskedPoints::kError &&
      o.masked_points != WindowOptions::MaskedPoints::kNan) {
    fail(ErrorCode::kInvalidArgument, "window dataset: masked_points = {} is not error or nan",
         static_cast<int>(o.masked_points));
  }
  if (o.nan == WindowOptions::NanPolicy::kFill) {
    check_option(std::isfinite(o.nan_value), kOwner, "nan_value", o.nan_value,
                 "is not a finite number (it replaces missing values)");
  }
  if (!(o.output_dtype == kFloat32 || o.output_dtype == DataType{DTypeKind::kFloat, 2} ||
        o.output_dtype == DataType{DTypeKind::kBFloat, 2})) {
    fail(ErrorCode::kInvalidArgument,
         "window dataset: output dtype must be float32, float16 or bfloat16, got {}",
         o.output_dtype.name());
  }
  check_option(!o.level_coordinate.empty(), kOwner, "level_coordinate", "''",
               "is empty: expected the name of the level coordinate array");
  check_option_range<int64_t>(kOwner, "time_start", o.time_start, 0, kMaxWindowTime);
  check_option_range<int64_t>(kOwner, "time_stop", o.time_stop, -1, kMaxWindowTime,
                              " (-1: the time axis length)");
  check_option_range<int64_t>(kOwner, "sample_stride", o.sample_stride, 1, kMaxWindowTime);
  const std::pair<const char*, const std::vector<int64_t>*> times[] = {
      {"sample_times", &o.sample_times}, {"time_map", &o.time_map}};
  for (const auto& [field, values] : times) {
    for (size_t i = 0; i < values->size(); ++i) {
      check_option_range<int64_t>(kOwner, fmt::format("{}[{}]", field, i), (*values)[i], 0,
                                  kMaxWindowTime);
    }
  }
  check_option_range<int64_t>(kOwner, "lat_start", o.lat_start, 0, INT64_MAX);
  check_option_range<int64_t>(kOwner, "lat_stop", o.lat_stop, -1, INT64_MAX, " (-1: to the end)");
  check_option_range<int64_t>(kOwner, "lon_start", o.lon_start, 0, INT64_MAX);
  check_option_range<int64_t>(kOwner, "lon_stop", o.lon_stop, -1, INT64_MAX, " (-1: to the end)");
  const std::pair<const char*, const std::vector<float>*> statistics[] = {{"mean", &o.mean},
                                                                          {"std", &o.std}};
  for (const auto& [field, values] : statistics) {
    for (size_t i = 0; i < values->size(); ++i) {
      const float value = (*values)[i];
      const bool is_std = field == std::string_view("std");
      check_option(std::isfinite(value) && (!is_std || value > 0), kOwner,
                   fmt::format("{}[{}]", field, i), value,
                   is_std ? "is not a finite number > 0" : "is not a finite number");
    }
  }
  if (o.mean_suffix.empty() != o.std_suffix.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "window dataset: mean_suffix = '{}' and std_suffix = '{}': give both or neither",
         o.mean_suffix, o.std_suffix);
  }
}

WindowDataset::WindowDataset(const Group& group, WindowOptions options)
    : options_(std::move(options)) {
  const WindowOptions& o = options_;
  validate(o);
  const std::vector<std::string>& targets =
      o.target_variables.empty() ? o.variables : o.target_variables;

  // Variables: axes by name, sizes agree on time, lat, lon and level.
  std::string level_dimension;
  for (const auto* names : {&o.variables, &targets, &o.forcings}) {
    for (const std::string& name : *names) {
      const Variable& v = add_variable(group, name, false);
      if (v.level_axis >= 0 && level_dimension.empty()) {
        level_dimension =
            find_weather_axes(*v.array, name).names[static_cast<size_t>(v.level_axis)];
      }
    }
  }
  for (const std::string& name : o.statics) add_variable(group, name, true);
  if (time_length_ < 0) {
    fail(ErrorCode::kInvalidArgument, "window dataset: no variable has a time axis");
  }
  if (!o.time_map.empty()) {
    for (int64_t t : o.time_map) {
      if (t < 0 || t >= time_length_) {
        fail(ErrorCode::kInvalidArgument, "time_map entry {} outside the time axis [0, {})", t,
             time_length_);
      }
    }
    time_length_ = static_cast<int64_t>(o.time_map.size());
  }

  // Levels, by position or by value of the level coordinate.
  if (num_levels_ > 0) {
    std::string coordinate_name = o.level_coordinate;
    if (!level_dimension.empty() && group.arrays.count(level_dimension)) {
      coordinate_name = level_dimension;
    }
    auto coordinate = group.arrays.find(coordinate_name);
    if (coordinate != group.arrays.end() && coordinate->second->rank() == 1 &&
        coordinate->second->metadata().shape[0] == num_levels_) {
      level_values_ = read_as_doubles(*coordinate->second);
    }
    if (!o.level_values.empty()) {
      if (level_values_.empty()) {
        fail(ErrorCode::kInvalidArgument,
             "level values given but group '{}' has no 1-D '{}' array of {} levels", group.name,
             coordinate_name, num_levels_);
      }
      for (double value : o.level_values) {
        auto it = std::find_if(level_values_.begin(), level_values_.end(), [&](double v) {
          return std::abs(v - value) <= 1e-9 * std::max(1.0, std::abs(value));
        });
        if (it == level_values_.end()) {
          fail(ErrorCode::kInvalidArgument, "level {} not in '{}' (it has: {})", value,
               coordinate_name, fmt::join(level_values_, ", "));
        }
        levels_.push_back(it - level_values_.begin());
      }
    } else if (!o.level_indices.empty()) {
      for (int64_t index : o.level_indices) {
        if (index < 0 || index >= num_levels_) {
          fail(ErrorCode::kInvalidArgument, "level index {} outside [0, {})", index, num_levels_);
        }
        levels_.push_back(index);
      }
    } else {
      for (int64_t l = 0; l < num_levels_; ++l) levels_.push_back(l);
    }
  }

  // The part of the grid read.
  const int64_t lat_stop = o.lat_stop < 0 ? full_height_ : o.lat_stop;
  const int64_t lon_stop = o.lon_stop < 0 ? full_width_ : o.lon_stop;
  if (o.lat_start < 0 || o.lat_start >= lat_stop || lat_stop > full_height_ || o.lon_start < 0 ||
      o.lon_start >= lon_stop || lon_stop > full_width_) {
    fail(ErrorCode::kInvalidArgument,
         "grid window lat [{}, {}) × lon [{}, {}) is not inside the grid of {} × {}", o.lat_start,
         lat_stop, o.lon_start, lon_stop, full_height_, full_width_);
  }
  height_ = lat_stop - o.lat_start;
  width_ = lon_stop - o.lon_start;

  // Windows: t and every t + offset inside [time_start, time_stop).
  int64_t min_offset = 0, max_offset = 0;
  for (const auto* list : {&o.input_offsets, &o.target_offsets}) {
    for (int64_t offset : *list) {
      min_offset = std::min(min_offset, offset);
      max_offset = std::max(max_offset, offset);
    }
  }
  if (!o.sample_times.empty()) {
    for (int64_t t : o.sample_times) {
      if (t + min_offset < 0 || t + max_offset >= time_length_) {
        fail(ErrorCode::kInvalidArgument,
             "sample time {} with offsets [{}, {}] leaves the time axis [0, {})", t, min_offset,
             max_offset, time_length_);
      }
    }
    num_samples_ = static_cast<int64_t>(o.sample_times.size());
  } else {
    const int64_t stop = o.time_stop < 0 ? time_length_ : o.time_stop;
    if (o.time_start < 0 || o.time_start >= stop || stop > time_length_) {
      fail(ErrorCode::kInvalidArgument, "time range [{}, {}) is not inside [0, {})", o.time_start,
           stop, time_length_);
    }
    if (o.sample_stride < 1) {
      fail(ErrorCode::kInvalidArgument, "sample_stride must be >= 1, got {}", o.sample_stride);
    }
    first_time_ = o.time_start - min_offset;
    const int64_t span = stop - max_offset - first_time_;  // valid times: first_time_ + [0, span)
    num_samples_ = span <= 0 ? 0 : (span - 1) / o.sample_stride + 1;
    if (num_samples_ <= 0) {
      fail(ErrorCode::kInvalidArgument,
           "no window with offsets [{}, {}] fits in time range [{}, {})", min_offset, max_offset,
           o.time_start, stop);
    }
  }

  load_statistics(group, targets);
  find_computed_forcing_coordinates(group);

  // Channels and outputs.
  layout_.resize(2);
  add_channels(layout_[0], o.variables, o.input_offsets);
  step_channels_ = static_cast<int64_t>(layout_[0].channels.size() / o.input_offsets.size());
  add_channels(layout_[0], o.forcings, o.target_offsets);
  add_computed_channels(layout_[0]);
  add_channels(layout_[0], o.statics, {0});
  if (o.nan_mask) {
    const size_t inputs = layout_[0].channels.size();
    for (size_t k = 0; k < inputs; ++k) {
      if (layout_[0].channels[k].computed >= 0) continue;
      Channel mask = layout_[0].channels[k];
      mask.mask_of = static_cast<int64_t>(k);
      mask.decode.mean = 0, mask.decode.inv_std = 1, mask.decode.replace_nan = false;
      mask.point_mean = mask.point_inv_std = nullptr;
      layout_[0].channels.push_back(std::move(mask));
    }
  }
  if (!o.target_offsets.empty()) add_channels(layout_[1], targets, o.target_offsets);
  if (layout_[1].channels.empty()) layout_.pop_back();

  bool direct = (!o.channels_last || !o.stage_channels_last) && o.output_dtype == kFloat32;
  for (const Output& output : layout_) {
    for (const Channel& c : output.channels) {
      direct = direct && c.computed < 0 && c.mask_of < 0 && c.point_mean == nullptr &&
               c.decode.stored == kFloat32 && !c.decode.cf.any() &&
               o.nan == WindowOptions::NanPolicy::kKeep;
    }
  }
  const int64_t plane = height_ * width_;
  const char* names[2] = {"inputs", "targets"};
  for (size_t k = 0; k < layout_.size(); ++k) {
    Output& output = layout_[k];
    const auto channels = static_cast<int64_t>(output.channels.size());
    int64_t bytes = direct ? 0 : kSlotHeader;
    for (Channel& c : output.channels) {
      c.plane_offset = bytes;
      if (c.computed < 0 && c.mask_of < 0) bytes += plane * (direct ? 4 : c.decode.stored.size);
    }
    for (Channel& c : output.channels) {  // a mask reads its channel's plane
      if (c.mask_of >= 0)
        c.plane_offset = output.channels[static_cast<size_t>(c.mask_of)].plane_offset;
    }
    bytes = (bytes + 7) / 8 * 8;  // the next slot's header stays aligned
    output.slot_bytes = bytes;
    std::vector<int64_t> shape = o.channels_last ? std::vector<int64_t>{height_, width_, channels}
                                                 : std::vector<int64_t>{channels, height_, width_};
    outputs_.push_back(OutputSpec{names[k], o.output_dtype, std::move(shape)});
    if (!direct) {
      staging_.push_back(OutputSpec{names[k], DataType{DTypeKind::kUInt, 1}, {bytes}});
    }
  }
}

const WindowDataset::Variable& WindowDataset::add_variable(const Group& group,
                                                           const std::string& name,
                                                           bool is_static) {
  for (const auto& v : variables_) {
    if (v->name == name) return *v;
  }
  auto v = std::make_shared<Variable>();
  v->name = name;
  v->array = find_group_array(group, name, is_static ? "static field" : "variable");
  const ArrayMetadata& meta = v->array->metadata();
  const AxisPositions axes = find_weather_axes(*v->array, name);
  v->time_axis = axes.time, v->level_axis = axes.level, v->lat_axis = axes.lat,
  v->lon_axis = axes.lon;
  if (!detail::is_decodable(meta.data_type)) {
    fail(ErrorCode::kInvalidArgument, "variable '{}' has dtype {}, expected a number type", name,
         meta.data_type.name());
  }
  if (options_.decode_cf) v->cf = detail::parse_cf_encoding(meta, name);
  auto size = [&](int axis) { return axis < 0 ? -1 : meta.shape[static_cast<size_t>(axis)]; };
  const int64_t h = size(axes.lat), w = size(axes.lon), t = size(axes.time);
  if (full_height_ < 0) {
    full_height_ = h, full_width_ = w, first_name_ = name;
  } else if (h != full_height_ || w != full_width_) {
    fail(ErrorCode::kInvalidArgument,
         "variable '{}' has (lat, lon) = ({}, {}) but '{}' has ({}, {})", name, h, w, first_name_,
         full_height_, full_width_);
  }
  if (is_static) {
    if (axes.level >= 0 || (axes.time >= 0 && t != 1)) {
      fail(ErrorCode::kInvalidArgument,
           "static field '{}' has dimensions ({}) of shape [{}], expected (lat, lon)", name,
           fmt::join(axes.names, ", "), fmt::join(meta.shape, ", "));
    }
  } else {
    if (axes.time < 0) {
      fail(ErrorCode::kInvalidArgument,
           "variable '{}' has dimensions ({}) without a time axis (pass it as a static field)",
           name, fmt::join(axes.names, ", "));
    }
    if (time_length_ < 0) {
      time_length_ = t;
    } else if (t != time_length_) {
      fail(ErrorCode::kInvalidArgument, "variable '{}' has {} time steps but others have {}", name,
           t, time_length_);
    }
    if (axes.level >= 0) {
      const int64_t l = size(axes.level);
      if (num_levels_ < 0) {
        num_levels_ = l;
      } else if (l != num_levels_) {
        fail(ErrorCode::kInvalidArgument, "variable '{}' has {} levels but others have {}", name, l,
             num_levels_);
      }
    }
  }
  variables_.push_back(std::move(v));
  return *variables_.back();
}

WindowDataset::Variable* WindowDataset::find_variable(const std::string& name) {
  for (const auto& v : variables_) {
    if (v->name == name) return v.get();
  }
  fail(ErrorCode::kInternal, "window dataset: variable '{}' was not added", name);
}

void WindowDataset::add_channels(Output& output, const std::vector<std::string>& names,
                                 const std::vector<int64_t>& offsets) {
  const bool timeless = &names == &options_.statics;
  for (int64_t offset : offsets) {
    for (const std::string& name : names) {
      const Variable* v = find_variable(name);
      const int64_t levels = v->level_axis >= 0 ? static_cast<int64_t>(levels_.size()) : 1;
      for (int64_t li = 0; li < levels; ++li) {
        Channel c;
        c.variable = v;
        c.level = v->level_axis >= 0 ? levels_[static_cast<size_t>(li)] : -1;
        c.offset = offset;
        c.timeless = timeless;
        c.decode.stored = v->array->metadata().data_type;
        c.decode.cf = v->cf;
        c.decode.replace_nan = options_.nan == WindowOptions::NanPolicy::kFill;
        c.decode.nan_value = options_.nan_value;
        if (normalise_ && !v->point_mean.empty()) {  // per grid point: applied in finish()
          const size_t at = static_cast<size_t>(li * height_ * width_);
          c.point_mean = v->point_mean.data() + at;
          c.point_inv_std = v->point_inv_std.data() + at;
        } else if (normalise_) {
          c.decode.mean = static_cast<float>(v->mean[static_cast<size_t>(li)]);
          c.decode.inv_std = static_cast<float>(1.0 / v->stddev[static_cast<size_t>(li)]);
        }
        output.channels.push_back(std::move(c));
      }
    }
  }
}

void WindowDataset::add_computed_channels(Output& output) {
  const WindowOptions& o = options_;
  if (o.computed_forcings.empty()) return;
  if (o.time_seconds.size() != static_cast<size_t>(time_length_) ||
      o.lat_values.size() != static_cast<size_t>(full_height_) ||
      o.lon_values.size() != static_cast<size_t>(full_width_)) {
    fail(ErrorCode::kInvalidArgument,
         "computed forcings need the time of each of the {} steps and the {} latitudes and {} "
         "longitudes of the grid (got {}, {}, {}; chute.windows() passes them from the store's "
         "coordinates)",
         time_length_, full_height_, full_width_, o.time_seconds.size(), o.lat_values.size(),
         o.lon_values.size());
  }
  if (o.target_offsets.empty()) {
    fail(ErrorCode::kInvalidArgument, "window dataset: computed forcings need target_offsets");
  }
  for (int64_t offset : o.target_offsets) {
    for (const std::string& name : o.computed_forcings) {
      Channel c;
      c.computed = static_cast<int>(parse_computed_forcing(name));
      c.computed_index = static_cast<int>(&name - o.computed_forcings.data());
      c.offset = offset;
      c.decode.stored = kFloat32;
      output.channels.push_back(std::move(c));
    }
  }
}

int64_t WindowDataset::sample_time(int64_t sample) const {
  if (!options_.sample_times.empty()) return options_.sample_times[static_cast<size_t>(sample)];
  return first_time_ + sample * options_.sample_stride;
}

void WindowDataset::plan(int64_t sample, int64_t slot, const BatchMemory& memory,
                         ReadPlan& plan) const {
  const int64_t time = sample_time(sample);
  for (size_t k = 0; k < layout_.size(); ++k) {
    plan_output(layout_[k], time, staged() ? memory.staging[k] : memory.outputs[k], slot, plan,
                sample);
  }
}

void WindowDataset::plan_output(const Output& output, int64_t time, std::byte* base, int64_t slot,
                                ReadPlan& plan, int64_t sample) const {
  std::byte* slot_base = base + slot * output.slot_bytes;
  if (staged()) std::memcpy(slot_base, &time, sizeof(time));
  std::string context;
  int64_t context_time = -1;
  int64_t start[kMaxCopyRank];
  StridedView dst;
  const bool interleaved = !staged() && options_.channels_last;  // the former direct path
  const int64_t plane = height_ * width_;
  const size_t count = output.channels.size();
  for (size_t i = 0; i < count;) {
    const Channel& c = output.channels[i];
    if (c.computed >= 0 || c.mask_of >= 0) {  // made in finish()
      ++i;
      continue;
    }
    const Variable& v = *c.variable;
    const int64_t item = staged() ? c.decode.stored.size : 4;
    // Consecutive levels of one variable at one time are one box into consecutive planes, so a
    // chunk holding them all decodes straight into place (no copy) when the box is the chunk.
    size_t run = 1;
    while (!interleaved && c.level >= 0 && i + run < count) {
      const Channel& next = output.channels[i + run];
      if (next.variable != c.variable || next.offset != c.offset || next.computed >= 0 ||
          next.mask_of >= 0 || next.level != c.level + static_cast<int64_t>(run) ||
          next.plane_offset != c.plane_offset + static_cast<int64_t>(run) * plane * item) {
        break;
      }
      ++run;
    }
    int64_t t = c.timeless ? 0 : time + c.offset;
    if (!c.timeless && !options_.time_map.empty()) t = options_.time_map[static_cast<size_t>(t)];
    if (t != context_time) {
      context = fmt::format("sample {} (time {})", sample, t);
      context_time = t;
    }
    const size_t rank = v.array->rank();
    // Planes of (lat, lon) values; direct channels-last: channel c of every pixel instead.
    const int64_t pixel = interleaved ? item * static_cast<int64_t>(count) : item;
    dst.data = slot_base + (interleaved ? static_cast<int64_t>(i) * item : c.plane_offset);
    dst.shape.assign(rank, 1);
    dst.byte_strides.assign(rank, item);
    for (size_t d = 0; d < rank; ++d) start[d] = 0;
    if (v.time_axis >= 0) start[v.time_axis] = t;
    if (v.level_axis >= 0) {
      start[v.level_axis] = c.level;
      dst.shape[static_cast<size_t>(v.level_axis)] = static_cast<int64_t>(run);
      dst.byte_strides[static_cast<size_t>(v.level_axis)] = plane * item;
    }
    start[v.lat_axis] = options_.lat_start;
    start[v.lon_axis] = options_.lon_start;
    dst.shape[static_cast<size_t>(v.lat_axis)] = height_;
    dst.shape[static_cast<size_t>(v.lon_axis)] = width_;
    dst.byte_strides[static_cast<size_t>(v.lat_axis)] = width_ * pixel;
    dst.byte_strides[static_cast<size_t>(v.lon_axis)] = pixel;
    plan.add(*v.array, {start, rank}, dst, context);
    i += run;
  }
}

int64_t WindowDataset::decoded_bytes_per_sample() const {
  int64_t bytes = 0;
  for (const Output& output : layout_) {
    for (const Channel& c : output.channels) {
      if (c.computed < 0 && c.mask_of < 0) bytes += height_ * width_ * c.decode.stored.size;
    }
  }
  return bytes;
}

std::vector<std::string> WindowDataset::channel_names(size_t output) const {
  std::vector<std::string> names;
  if (output >= layout_.size()) return names;
  for (const Channel& c : layout_[output].channels) {
    if (c.mask_of >= 0) {
      names.push_back(names[static_cast<size_t>(c.mask_of)] + "/mask");
      continue;
    }
    if (c.computed >= 0) {
      const std::string& name = options_.computed_forcings[static_cast<size_t>(c.computed_index)];
      names.push_back(fmt::format("{}/{}", name, offset_name(c.offset)));
      continue;
    }
    const std::string& name = c.variable->name;
    std::string level;
    if (c.level >= 0) {
      level = level_values_.empty()
                  ? fmt::format("/level[{}]", c.level)
                  : fmt::format("/level={}", level_values_[static_cast<size_t>(c.level)]);
    }
    names.push_back(c.timeless ? name : fmt::format("{}{}/{}", name, level, offset_name(c.offset)));
  }
  return names;
}

std::string WindowDataset::describe() const {
  std::vector<std::string> names;
  for (const auto& v : variables_) names.push_back(v->name);
  return fmt::format(
      "variables: {} windows (t = {}..{}), [{}], {} levels, inputs at [{}], targets at [{}], "
      "{} channels per step, {} × {} grid, {}, {}{}{}",
      num_samples_, sample_time(0), sample_time(num_samples_ - 1), fmt::join(names, ", "),
      levels_.size(), fmt::join(options_.input_offsets, ", "),
      fmt::join(options_.target_offsets, ", "), step_channels_, height_, width_,
      options_.channels_last ? "channels-last" : "channels-first", options_.output_dtype.name(),
      normalise_ ? ", normalised" : "", staged() ? ", decoded in placement" : "");
}

std::shared_ptr<WindowDataset> open_window_dataset(const std::string& path, WindowOptions options,
                                                   const CacheOptions& cache) {
  if (is_glob(path)) return open_window_dataset(std::vector<std::string>{path}, options, cache);
  validate(options);  // before anything is opened
  validate(cache);
  return std::make_shared<WindowDataset>(open_group(path, cache), std::move(options));
}

std::shared_ptr<WindowDataset> open_window_dataset(const std::vector<std::string>& paths,
                                                   WindowOptions options,
                                                   const CacheOptions& cache) {
  if (paths.size() == 1 && !is_glob(paths[0])) {
    return open_window_dataset(paths[0], std::move(options), cache);
  }
  validate(options);
  validate(cache);
  const std::vector<std::string> files = paths.size() == 1 ? expand_glob(paths[0]) : paths;
  std::vector<Group> groups = open_groups(files, cache);
  // Stores holding the same variables are a time series (files per year or month); stores of
  // different variables (pressure and single levels) are joined by name.
  if (!same_variables(groups, "time")) {
    return std::make_shared<WindowDataset>(join_stores(groups), std::move(options));
  }
  JoinedFiles joined = join_along_time(std::move(groups), files, ManyFilesOptions{});
  return make_joined_window_dataset(joined, std::move(options));
}

std::shared_ptr<WindowDataset> make_joined_window_dataset(const JoinedFiles& joined,
                                                          WindowOptions options) {
  if (joined.segments.size() > 1 && options.sample_times.empty() && options.time_map.empty()) {
    // Windows never cross a gap between members: only times whose window fits in one run.
    std::vector<int64_t> offsets = options.input_offsets;
    offsets.insert(offsets.end(), options.target_offsets.begin(), options.target_offsets.end());
    // Joined variables have time on axis 0.
    auto first = joined.group.arrays.find(options.variables.empty() ? std::string("time")
                                                                    : options.variables[0]);
    const int64_t length =
        first == joined.group.arrays.end() || first->second->metadata().shape.empty()
            ? joined.segments.back()
            : first->second->metadata().shape[0];
    const int64_t stop = options.time_stop < 0 ? length : options.time_stop;
    for (int64_t t : times_within_segments(joined.segments, stop, offsets)) {
      if (t >= options.time_start && (t - options.time_start) % options.sample_stride == 0) {
        options.sample_times.push_back(t);
      }
    }
    if (options.sample_times.empty()) {
      fail(ErrorCode::kInvalidArgument,
           "no window fits between the gaps of '{}' ({} runs of members)", joined.group.name,
           joined.segments.size());
    }
  }
  return std::make_shared<WindowDataset>(joined.group, std::move(options));
}

}  // namespace chute
