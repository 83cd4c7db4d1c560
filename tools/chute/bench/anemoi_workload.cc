#include "chute/bench/anemoi_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "chute/array/read_plan.h"
#include "chute/array/read_scratch.h"
#include "chute/bench/bench_dataset.h"
#include "chute/dataset/cf_time.h"
#include "chute/dataset/window_axes.h"
#include "chute/format/open.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/util/byte_buffer.h"
#include "chute/util/clock.h"
#include "chute/util/error.h"
#include "chute/vocab/dtype.h"

namespace chute::bench {
namespace {

std::string anemoi_attribute_text(const Group& group, const char* name) {
  const auto& attrs = group.attributes;
  if (!attrs.contains(name) || !attrs[name].is_string()) {
    fail(ErrorCode::kInvalidMetadata, "{}: anemoi attribute '{}' is missing or not a string",
         group.name, name);
  }
  return attrs[name].get<std::string>();
}

/// The store's `frequency` as anemoi-datasets reads it: "6h", "30m", "1d", "3600s", or a bare
/// number of hours (a string or an integer).
int64_t anemoi_frequency_seconds(const Group& group) {
  const auto& attrs = group.attributes;
  if (attrs.contains("frequency") && attrs["frequency"].is_number_integer()) {
    return parse_step_seconds(std::to_string(attrs["frequency"].get<int64_t>()) + "h", "frequency");
  }
  std::string text = anemoi_attribute_text(group, "frequency");
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) text += "h";
  return parse_step_seconds(text, "frequency");
}

std::vector<double> anemoi_statistic(const Group& group, const char* name, size_t variables) {
  auto found = group.arrays.find(name);
  if (found == group.arrays.end()) {
    fail(ErrorCode::kInvalidMetadata, "{}: the anemoi statistics array '{}' is missing", group.name,
         name);
  }
  std::vector<double> values = read_as_doubles(*found->second);
  if (values.size() != variables) {
    fail(ErrorCode::kInvalidMetadata, "{}: '{}' holds {} values for {} variables", group.name, name,
         values.size(), variables);
  }
  return values;
}

}  // namespace

int64_t parse_iso_seconds(const std::string& text, const std::string& what) {
  try {  // the CF reference-date parser: the whole text, real calendar days, time zones
    return parse_cf_time_units("seconds since " + text, what).reference_seconds;
  } catch (const Error&) {
    fail(ErrorCode::kInvalidArgument, "{}: expected a date such as 2020-01-01T06:00:00, got '{}'",
         what, text);
  }
}

double measure_anemoi_finish_gbps(const AnemoiDataset& dataset, std::span<const int64_t> batch,
                                  ThreadPool& pool, int repeats) {
  if (batch.empty()) fail(ErrorCode::kInvalidArgument, "anemoi roofline: an empty batch");
  const auto samples = static_cast<int64_t>(batch.size());
  BatchMemory memory;
  memory.batch_size = samples;
  std::vector<ByteBuffer> staging;
  for (const OutputSpec& spec : dataset.staging()) {
    const auto bytes = static_cast<size_t>(spec.sample_nbytes() * samples);
    staging.emplace_back(bytes);
    std::memset(staging.back().data(), 0, bytes);
    memory.staging.push_back(staging.back().data());
  }
  const BatchLayout layout = BatchLayout::of(dataset, samples);
  ByteBuffer out(layout.total_bytes);
  std::memset(out.data(), 0, layout.total_bytes);
  for (size_t offset : layout.offsets) memory.outputs.push_back(out.data() + offset);
  ReadPlan plan;
  for (int64_t slot = 0; slot < samples; ++slot) {
    dataset.plan(batch[static_cast<size_t>(slot)], slot, memory, plan);
  }
  std::vector<ReadScratch> scratch(pool.size());
  plan.execute(&pool, scratch);  // untimed: the staged dates, as the loader leaves them
  double best = 0;
  for (int pass = 0; pass < std::max(1, repeats); ++pass) {
    const auto start = Clock::now();
    pool.parallel_for(batch.size(), [&](size_t slot, size_t) {
      dataset.finish_sample(memory, static_cast<int64_t>(slot));
    });
    const double seconds = static_cast<double>(elapsed_ns(start)) * 1e-9;
    if (pass == 0 || seconds < best) best = seconds;
  }
  const double bytes = static_cast<double>(dataset.stored_bytes_per_sample() * samples);
  return best > 0 ? bytes / best / 1e9 : 0;
}

AnemoiBench open_anemoi_bench(const std::string& path, const AnemoiFlags& flags,
                              const std::vector<std::string>& select, const std::string& dtype,
                              bool variables_first) {
  if (flags.multistep_input < 1 || flags.rollout < 0 || flags.timeincrement < 1) {
    fail(ErrorCode::kInvalidArgument,
         "--multistep-input (>= 1), --rollout (>= 0), --timeincrement (>= 1): got {}, {}, {}",
         flags.multistep_input, flags.rollout, flags.timeincrement);
  }
  if (flags.normalise != "mean-std" && flags.normalise != "none") {
    fail(ErrorCode::kInvalidArgument, "--anemoi-normalise: expected mean-std or none, got '{}'",
         flags.normalise);
  }
  const Group group = open_group(path);
  auto data = group.arrays.find("data");
  if (data == group.arrays.end()) {
    fail(ErrorCode::kInvalidMetadata, "{}: not an anemoi dataset (no 'data' array)", path);
  }
  const auto& shape = data->second->metadata().shape;
  if (shape.size() != 4) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: anemoi 'data' must be (time, variable, ensemble, cell), got {} dimensions", path,
         shape.size());
  }
  const auto& attrs = group.attributes;
  if (!attrs.contains("variables") || !attrs["variables"].is_array()) {
    fail(ErrorCode::kInvalidMetadata, "{}: anemoi attribute 'variables' is missing", path);
  }
  const auto stored = attrs["variables"].get<std::vector<std::string>>();
  if (static_cast<int64_t>(stored.size()) != shape[1]) {
    fail(ErrorCode::kInvalidMetadata, "{}: 'variables' names {} variables, 'data' holds {}", path,
         stored.size(), shape[1]);
  }
  AnemoiBench out;
  out.dates = shape[0];
  out.members = shape[2];
  out.cells = shape[3];
  out.variables = select.empty() ? stored : select;
  std::vector<int64_t> index;
  for (const std::string& name : out.variables) {
    auto at = std::find(stored.begin(), stored.end(), name);
    if (at == stored.end()) {
      fail(ErrorCode::kInvalidArgument, "{}: '{}' is not a variable of the dataset", path, name);
    }
    index.push_back(at - stored.begin());
  }

  // Missing dates, as positions: dates are start_date + k × frequency.
  std::set<int64_t> missing;
  if (attrs.contains("missing_dates") && attrs["missing_dates"].is_array() &&
      !attrs["missing_dates"].empty()) {
    const int64_t start =
        parse_iso_seconds(anemoi_attribute_text(group, "start_date"), "start_date");
    const int64_t step = anemoi_frequency_seconds(group);
    for (const auto& date : attrs["missing_dates"]) {
      if (!date.is_string()) {
        fail(ErrorCode::kInvalidMetadata, "{}: 'missing_dates' holds {}, not a date string", path,
             date.dump());
      }
      const int64_t at = parse_iso_seconds(date.get<std::string>(), "missing_dates") - start;
      if (at % step != 0 || at / step < 0 || at / step >= out.dates) {  // as chute.anemoi
        fail(ErrorCode::kInvalidMetadata, "{}: missing date '{}' is not one of the dates", path,
             date.get<std::string>());
      }
      missing.insert(at / step);
    }
  }
  const int64_t before = (flags.multistep_input - 1) * flags.timeincrement;
  const int64_t after = flags.rollout * flags.timeincrement;
  for (int64_t i = before; i + after < out.dates; ++i) {
    auto hit = missing.lower_bound(i - before);
    if (hit == missing.end() || *hit > i + after) out.sample_dates.push_back(i);
  }
  if (out.sample_dates.empty()) {
    fail(ErrorCode::kInvalidArgument, "{}: no sample fits in {} dates ({} missing)", path,
         out.dates, missing.size());
  }

  AnemoiOptions options;
  options.sources = {data->second};
  options.source_names = {path};
  const auto [lo, hi] = std::minmax_element(index.begin(), index.end());
  AnemoiOptions::Layout layout;
  layout.reads = {{0, *lo, *hi + 1}};
  for (int64_t i : index) layout.rows.push_back(i - *lo);
  options.layouts = {layout};
  options.date_layout.assign(static_cast<size_t>(out.dates), 0);
  for (int64_t t = 0; t < out.dates; ++t) options.date_times.push_back(t);
  for (int64_t t = 0; t <= out.dates; ++t) options.date_time_offsets.push_back(t);
  options.num_variables = static_cast<int64_t>(index.size());
  options.sample_dates = out.sample_dates;
  options.input_offsets.clear();
  for (int64_t s = 0; s < flags.multistep_input; ++s) {
    options.input_offsets.push_back(-(flags.multistep_input - 1 - s) * flags.timeincrement);
  }
  options.target_offsets.clear();
  for (int64_t r = 0; r < flags.rollout; ++r) {
    options.target_offsets.push_back((r + 1) * flags.timeincrement);
  }
  for (int64_t v = 0; v < options.num_variables; ++v) {
    options.input_variables.push_back(v);
    if (flags.rollout > 0) options.target_variables.push_back(v);
  }
  if (flags.normalise == "mean-std") {  // anemoi-training's factors, float64 then float32
    const std::vector<double> mean = anemoi_statistic(group, "mean", stored.size());
    const std::vector<double> stdev = anemoi_statistic(group, "stdev", stored.size());
    for (int64_t i : index) {
      if (!(stdev[i] > 0) || !std::isfinite(stdev[i]) || !std::isfinite(mean[i])) {
        fail(ErrorCode::kInvalidMetadata,
             "{}: variable '{}' has mean {} and stdev {}: cannot "
             "normalise it (--anemoi-normalise none reads it as stored)",
             path, stored[static_cast<size_t>(i)], mean[i], stdev[i]);
      }
      options.mul.push_back(static_cast<float>(1 / stdev[i]));
      options.add.push_back(static_cast<float>(-mean[i] / stdev[i]));
    }
  }
  options.variables_first = variables_first;
  options.output_dtype = parse_v3_data_type(dtype);
  out.dataset = std::make_shared<AnemoiDataset>(std::move(options));
  return out;
}

}  // namespace chute::bench
