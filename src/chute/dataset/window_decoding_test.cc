// Windows over stores as xarray writes them: CF decoding (packed int16, fill values), axes found
// by dimension name in any stored order, float64/float16 variables, separate target variables,
// forcings, statics, grid windows and explicit sample times; every value is compared with a
// reference decoded here from the formula. Also the CF attribute parser and the decode kernel.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "chute/dataset/cf_decoding.h"
#include "chute/dataset/computed_forcings.h"
#include "chute/dataset/window_dataset.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/pipeline/transforms.h"
#include "chute/util/error.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

using namespace chute::loader_testing;
using json = nlohmann::json;

constexpr int64_t kTimeSteps = 7, kLevelCount = 3, kRowCount = 4, kColCount = 6;
constexpr int16_t kFill = -32767;

/// Stored value of array `id` at `index` (any order of axes), an integer in [-1000, 1000).
double raw_value(int id, std::span<const int64_t> index) {
  int64_t h = id + 11;
  for (int64_t i : index) h = h * 131 + i;
  return static_cast<double>((h * 7919) % 2000 - 1000);
}

/// Writes an array of `type` holding f(index) with the `bytes` codec and opens it.
template <typename F>
ArrayPtr make_array(const std::shared_ptr<MemoryStore>& store, const std::string& name,
                    DataType type, std::vector<int64_t> shape, std::vector<int64_t> chunks,
                    std::vector<std::string> dims, json attrs, F f) {
  ArrayMetadata m;
  m.shape = shape;
  m.chunk_shape = chunks;
  m.data_type = type;
  m.fill_value.assign(type.size, std::byte{0});
  m.fill_value_null = true;
  m.codecs = {CodecSpec{"bytes", {{"endian", "little"}}}};
  m.dimension_names = std::move(dims);
  m.attributes = std::move(attrs);
  auto chain = CodecChain::create(m.codecs, m.data_type, m.chunk_shape);
  CodecScratch scratch;
  ByteBuffer encoded;
  const size_t rank = shape.size();
  std::vector<int64_t> grid(rank);
  for (size_t d = 0; d < rank; ++d) grid[d] = (shape[d] + chunks[d] - 1) / chunks[d];
  std::vector<int64_t> coords(rank, 0);
  do {
    std::vector<std::byte> chunk;
    std::vector<int64_t> local(rank, 0), global(rank);
    do {
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        global[d] = coords[d] * chunks[d] + local[d];
        inside = inside && global[d] < shape[d];
      }
      const double v = inside ? f(global) : 0.0;
      std::byte bytes[8];
      if (type == DataType{DTypeKind::kInt, 2}) {
        const auto x = static_cast<int16_t>(v);
        std::memcpy(bytes, &x, 2);
      } else if (type == DataType{DTypeKind::kFloat, 8}) {
        std::memcpy(bytes, &v, 8);
      } else if (type == DataType{DTypeKind::kFloat, 2}) {
        const uint16_t x = float_to_half(static_cast<float>(v));
        std::memcpy(bytes, &x, 2);
      } else {
        const auto x = static_cast<float>(v);
        std::memcpy(bytes, &x, 4);
      }
      chunk.insert(chunk.end(), bytes, bytes + type.size);
    } while (step(local, chunks));
    chain->encode(chunk, encoded, scratch);
    store->set(join_key(name, chunk_key(m.chunk_key_encoding, coords)),
               std::vector<std::byte>(encoded.data(), encoded.data() + encoded.size()));
  } while (step(coords, grid));
  return std::make_shared<Array>(store, name, m, name);
}

// "t": int16 packed, stored (pressure_level, time, longitude, latitude), every 9th value the fill.
double t_raw(std::span<const int64_t> i) {
  return (i[0] + i[1] + i[2] + i[3]) % 9 == 0 ? kFill : raw_value(1, i);
}
double t_decoded(int64_t time, int64_t level, int64_t y, int64_t x) {
  const int64_t index[4] = {level, time, x, y};
  const double raw = t_raw(index);
  return raw == kFill ? NAN : static_cast<float>(raw * 0.25 + 200.0);
}
// "sp": float64 (valid_time, lat, lon), no encoding.
double sp_decoded(int64_t time, int64_t y, int64_t x) {
  const int64_t index[3] = {time, y, x};
  return static_cast<float>(raw_value(2, index) * 1.5);
}
// "orog": float16 static (latitude, longitude).
double orog_decoded(int64_t y, int64_t x) {
  const int64_t index[2] = {y, x};
  return half_to_float(float_to_half(static_cast<float>(raw_value(3, index))));
}

Group make_xarray_group() {
  auto store = std::make_shared<MemoryStore>();
  Group group;
  group.name = "memory/era5";
  const json packed = {{"scale_factor", 0.25}, {"add_offset", 200.0}, {"_FillValue", kFill}};
  group.arrays["t"] = make_array(
      store, "t", DataType{DTypeKind::kInt, 2}, {kLevelCount, kTimeSteps, kColCount, kRowCount},
      {1, 1, 4, 3}, {"pressure_level", "time", "longitude", "latitude"}, packed, t_raw);
  group.arrays["sp"] =
      make_array(store, "sp", DataType{DTypeKind::kFloat, 8}, {kTimeSteps, kRowCount, kColCount},
                 {2, kRowCount, kColCount}, {"valid_time", "lat", "lon"}, json::object(),
                 [](std::span<const int64_t> i) { return raw_value(2, i) * 1.5; });
  group.arrays["orog"] =
      make_array(store, "orog", DataType{DTypeKind::kFloat, 2}, {kRowCount, kColCount},
                 {kRowCount, kColCount}, {"latitude", "longitude"}, json::object(),
                 [](std::span<const int64_t> i) { return raw_value(3, i); });
  const std::vector<double> levels = {500, 700, 850};
  group.arrays["pressure_level"] =
      make_array(store, "pressure_level", DataType{DTypeKind::kFloat, 8}, {kLevelCount},
                 {kLevelCount}, {"pressure_level"}, json::object(),
                 [&](std::span<const int64_t> i) { return levels[static_cast<size_t>(i[0])]; });
  return group;
}

struct Ref {
  std::string variable;
  int64_t offset;
  int64_t level;  // position, -1 without
};

double decoded_reference(const Ref& r, int64_t time, int64_t y, int64_t x) {
  if (r.variable == "t") return t_decoded(time + r.offset, r.level, y, x);
  if (r.variable == "sp") return sp_decoded(time + r.offset, y, x);
  return orog_decoded(y, x);
}

/// Assembles every sample in one batch and compares each output value with `refs[k]`.
using Reference = std::function<double(const Ref&, int64_t, int64_t, int64_t)>;

void check(const std::shared_ptr<WindowDataset>& dataset, const std::vector<std::vector<Ref>>& refs,
           int64_t lat0, int64_t lon0, const Reference& value_of = decoded_reference) {
  const int64_t n = dataset->num_samples();
  std::vector<int64_t> samples(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) samples[static_cast<size_t>(i)] = i;
  BatchAssembler assembler(dataset, n, 2);
  std::vector<std::byte> buffer(assembler.layout().total_bytes);
  assembler.assemble(samples, buffer.data());
  const bool last = dataset->options().channels_last;
  const int64_t h = dataset->height(), w = dataset->width();
  ASSERT_EQ(dataset->outputs().size(), refs.size());
  int64_t nan_count = 0;
  for (size_t k = 0; k < refs.size(); ++k) {
    const auto nc = static_cast<int64_t>(refs[k].size());
    ASSERT_EQ(dataset->outputs()[k].sample_elements(), nc * h * w);
    const std::byte* base = buffer.data() + assembler.layout().offsets[k];
    for (int64_t s = 0; s < n; ++s) {
      const int64_t time = dataset->sample_time(s);
      for (int64_t c = 0; c < nc; ++c) {
        for (int64_t y = 0; y < h; ++y) {
          for (int64_t x = 0; x < w; ++x) {
            const int64_t within = last ? (y * w + x) * nc + c : (c * h + y) * w + x;
            float actual;
            std::memcpy(&actual, base + (s * nc * h * w + within) * 4, 4);
            const auto expected = static_cast<float>(
                value_of(refs[k][static_cast<size_t>(c)], time, y + lat0, x + lon0));
            if (std::isnan(expected)) {
              ++nan_count;
              ASSERT_TRUE(std::isnan(actual)) << "output " << k << " sample " << s << " c " << c;
            } else {
              ASSERT_EQ(actual, expected)
                  << "output " << k << " sample " << s << " c " << c << " y " << y << " x " << x;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(nan_count, 0);  // the fixture's fill values reached the batch as NaN
}

WindowOptions xarray_options() {
  WindowOptions o;
  o.variables = {"t", "sp"};
  o.target_variables = {"t"};
  o.forcings = {"sp"};
  o.statics = {"orog"};
  o.level_values = {850, 500};
  o.input_offsets = {-1, 0};
  o.target_offsets = {1, 2};
  return o;
}

std::vector<std::vector<Ref>> xarray_refs() {
  std::vector<Ref> in, out;
  for (int64_t off : {-1, 0}) {
    in.push_back({"t", off, 2}), in.push_back({"t", off, 0}), in.push_back({"sp", off, -1});
  }
  for (int64_t off : {1, 2}) in.push_back({"sp", off, -1});
  in.push_back({"orog", 0, -1});
  for (int64_t off : {1, 2}) out.push_back({"t", off, 2}), out.push_back({"t", off, 0});
  return {in, out};
}

TEST(WindowDecoding, XarrayLayoutChannelsLastAndFirst) {
  for (bool channels_last : {true, false}) {
    WindowOptions o = xarray_options();
    o.channels_last = channels_last;
    auto dataset = std::make_shared<WindowDataset>(make_xarray_group(), o);
    EXPECT_TRUE(dataset->staged());
    EXPECT_EQ(dataset->num_samples(), kTimeSteps - 3);
    EXPECT_EQ(dataset->channel_names(0).back(), "orog");
    EXPECT_EQ(dataset->channel_names(0)[0], "t/level=850/t-1");
    EXPECT_EQ(dataset->channel_names(1).size(), 4u);
    // 8 int16 planes of t, 4 float64 planes of sp, 1 float16 plane of orog
    EXPECT_EQ(dataset->decoded_bytes_per_sample(), kRowCount * kColCount * (8 * 2 + 4 * 8 + 2));
    check(dataset, xarray_refs(), 0, 0);
  }
}

TEST(WindowDecoding, GridWindowAndSampleTimes) {
  WindowOptions o = xarray_options();
  o.lat_start = 1, o.lat_stop = 3, o.lon_start = 2, o.lon_stop = 5;
  o.sample_times = {4, 1};
  auto dataset = std::make_shared<WindowDataset>(make_xarray_group(), o);
  EXPECT_EQ(dataset->num_samples(), 2);
  EXPECT_EQ(dataset->sample_time(0), 4);
  EXPECT_EQ(dataset->height(), 2);
  EXPECT_EQ(dataset->width(), 3);
  check(dataset, xarray_refs(), 1, 2);

  o.sample_times = {5};  // 5 + 2 leaves the 7 steps
  EXPECT_THROW(WindowDataset(make_xarray_group(), o), Error);
}

TEST(WindowDecoding, SampleStrideTakesEveryKthStep) {
  WindowOptions o = xarray_options();
  o.input_offsets = {0};
  o.target_offsets = {2};
  o.sample_stride = 2;
  WindowDataset dataset(make_xarray_group(), o);
  EXPECT_EQ(dataset.num_samples(), 3);  // t = 0, 2, 4 (t + 2 <= 6)
  EXPECT_EQ(dataset.sample_time(2), 4);
}

/// make_xarray_group() plus the coordinates xarray writes: time as float64 "hours since" every
/// 6 hours from 2020-01-01 06:00 (with `calendar`), latitude and longitude in degrees.
Group with_coordinates(const std::string& calendar) {
  Group group = make_xarray_group();
  auto store = std::make_shared<MemoryStore>();
  json time_attrs = {{"units", "hours since 2020-01-01 06:00:00"}};
  if (!calendar.empty()) time_attrs["calendar"] = calendar;
  group.arrays["time"] = make_array(
      store, "time", DataType{DTypeKind::kFloat, 8}, {kTimeSteps}, {4}, {"time"}, time_attrs,
      [](std::span<const int64_t> i) { return 6.0 * static_cast<double>(i[0]); });
  group.arrays["latitude"] = make_array(
      store, "latitude", DataType{DTypeKind::kFloat, 8}, {kRowCount}, {kRowCount}, {"latitude"},
      json::object(), [](std::span<const int64_t> i) { return 60.0 - 30.0 * i[0]; });
  group.arrays["longitude"] = make_array(store, "longitude", DataType{DTypeKind::kFloat, 8},
                                         {kColCount}, {kColCount}, {"longitude"}, json::object(),
                                         [](std::span<const int64_t> i) { return 45.0 * i[0]; });
  return group;
}

TEST(WindowDecoding, ComputedForcingsFindTheirDatesAndGridInTheStore) {
  const std::vector<std::string> names = {"cos_local_time", "sin_day_of_year", "toa_radiation"};
  WindowOptions o;
  o.variables = {"sp"};
  o.input_offsets = {0};
  o.target_offsets = {1};
  o.computed_forcings = names;
  auto found = std::make_shared<WindowDataset>(with_coordinates("proleptic_gregorian"), o);
  const int64_t n = found->num_samples();
  ASSERT_EQ(n, kTimeSteps - 1);
  // Every channel value from the formula at the decoded date: 2020-01-01 06:00 UTC + 6 h × t.
  constexpr int64_t k20200101 = 1577836800;
  BatchAssembler assembler(found, n, 2);
  std::vector<std::byte> buffer(assembler.layout().total_bytes);
  std::vector<int64_t> samples(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) samples[static_cast<size_t>(i)] = i;
  assembler.assemble(samples, buffer.data());
  const int64_t nc = 1 + static_cast<int64_t>(names.size());
  for (int64_t s = 0; s < n; ++s) {
    const int64_t seconds = k20200101 + 6 * 3600 + (found->sample_time(s) + 1) * 6 * 3600;
    for (size_t k = 0; k < names.size(); ++k) {
      for (int64_t y = 0; y < kRowCount; ++y) {
        for (int64_t x = 0; x < kColCount; ++x) {
          float actual;
          const int64_t c = 1 + static_cast<int64_t>(k);
          std::memcpy(
              &actual,
              buffer.data() + (s * nc * kRowCount * kColCount + (y * kColCount + x) * nc + c) * 4,
              4);
          const double expected = computed_forcing(parse_computed_forcing(names[k]), seconds,
                                                   60.0 - 30.0 * y, 45.0 * x);
          ASSERT_EQ(actual, static_cast<float>(expected)) << names[k] << " s " << s;
        }
      }
    }
  }
  // The same batch as with the dates and grid given explicitly (what chute.windows() passes).
  WindowOptions given = o;
  for (int64_t t = 0; t < kTimeSteps; ++t)
    given.time_seconds.push_back(k20200101 + 6 * 3600 * (t + 1));
  for (int64_t y = 0; y < kRowCount; ++y) given.lat_values.push_back(60.0 - 30.0 * y);
  for (int64_t x = 0; x < kColCount; ++x) given.lon_values.push_back(45.0 * x);
  auto explicit_dataset = std::make_shared<WindowDataset>(make_xarray_group(), given);
  BatchAssembler other(explicit_dataset, n, 2);
  std::vector<std::byte> expected(other.layout().total_bytes);
  other.assemble(samples, expected.data());
  EXPECT_EQ(buffer, expected);
  EXPECT_EQ(found->options().time_seconds, given.time_seconds);

  // Without coordinates, or in a calendar chute does not decode: errors naming what is missing.
  auto contains = [](const std::string& message, const char* part) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  using testing::message_of;
  contains(message_of([&] { WindowDataset(make_xarray_group(), o); }),
           "no 1-D array of 7 values named valid_time or time");
  contains(
      message_of([&] { WindowDataset(with_coordinates("noleap"), o); }, ErrorCode::kUnsupported),
      "array 'time': calendar 'noleap' is not supported");
  o.time_map = {0, 1, 2, 3};
  contains(message_of([&] { WindowDataset(with_coordinates(""), o); }),
           "time_map need time_seconds");
}

// Per-grid-point statistics: mean and std of "t" per (level, lat, lon), of "sp" per (lat, lon),
// of the static "orog" per channel (as `chute stats --per-gridpoint` writes them).
double t_mean(int64_t l, int64_t y, int64_t x) { return 200 + 3.0 * l + 0.7 * y - 0.3 * x; }
double t_std(int64_t l, int64_t y, int64_t x) { return 1 + l + 0.5 * y + 0.25 * x; }
double sp_mean(int64_t y, int64_t x) { return 10.0 * y + x; }
double sp_std(int64_t y, int64_t x) { return 2 + y + 0.125 * x; }
constexpr double kOrogMean = 30, kOrogStd = 7;

Group with_point_statistics(Group group, double bad_t_std_at_y = -1) {
  auto store = std::make_shared<MemoryStore>();
  const DataType f64{DTypeKind::kFloat, 8};
  const std::vector<std::string> level_dims = {"pressure_level", "latitude", "longitude"};
  const std::vector<std::string> grid_dims = {"latitude", "longitude"};
  group.arrays["t_mean"] =
      make_array(store, "t_mean", f64, {kLevelCount, kRowCount, kColCount},
                 {kLevelCount, kRowCount, kColCount}, level_dims, json::object(),
                 [](std::span<const int64_t> i) { return t_mean(i[0], i[1], i[2]); });
  group.arrays["t_std"] = make_array(
      store, "t_std", f64, {kLevelCount, kRowCount, kColCount}, {kLevelCount, kRowCount, kColCount},
      level_dims, json::object(), [&](std::span<const int64_t> i) {
        return i[1] == bad_t_std_at_y && i[2] == 0 ? 0.0 : t_std(i[0], i[1], i[2]);
      });
  group.arrays["sp_mean"] =
      make_array(store, "sp_mean", f64, {kRowCount, kColCount}, {kRowCount, kColCount}, grid_dims,
                 json::object(), [](std::span<const int64_t> i) { return sp_mean(i[0], i[1]); });
  group.arrays["sp_std"] =
      make_array(store, "sp_std", f64, {kRowCount, kColCount}, {kRowCount, kColCount}, grid_dims,
                 json::object(), [](std::span<const int64_t> i) { return sp_std(i[0], i[1]); });
  group.arrays["orog_mean"] = make_array(store, "orog_mean", f64, {1}, {1}, {"one"}, json::object(),
                                         [](auto) { return kOrogMean; });
  group.arrays["orog_std"] = make_array(store, "orog_std", f64, {1}, {1}, {"one"}, json::object(),
                                        [](auto) { return kOrogStd; });
  return group;
}

/// The per-channel arithmetic of the placement pass: float value, float mean, float 1 / std.
double normalised(double value, double mean, double std) {
  return (static_cast<float>(value) - static_cast<float>(mean)) * static_cast<float>(1.0 / std);
}

TEST(WindowDecoding, StatisticsPerGridPointNormaliseEachPointInBothLayouts) {
  for (bool channels_last : {true, false}) {
    WindowOptions o = xarray_options();
    o.channels_last = channels_last;
    o.mean_suffix = "_mean", o.std_suffix = "_std";
    o.lat_start = 1, o.lat_stop = 4, o.lon_start = 2, o.lon_stop = 5;  // a window of the grid
    auto dataset = std::make_shared<WindowDataset>(with_point_statistics(make_xarray_group()), o);
    check(dataset, xarray_refs(), 1, 2, [](const Ref& r, int64_t time, int64_t y, int64_t x) {
      const double value = decoded_reference(r, time, y, x);
      if (r.variable == "t") return normalised(value, t_mean(r.level, y, x), t_std(r.level, y, x));
      if (r.variable == "sp") return normalised(value, sp_mean(y, x), sp_std(y, x));
      return normalised(value, kOrogMean, kOrogStd);
    });
  }
}

/// The batch of `samples` placed by the assembler (sample by sample, as each sample's planes
/// are read) and the same batch placed by finish() after the whole plan ran (the pass before
/// per-sample placement), on `threads` workers each.
std::pair<std::vector<std::byte>, std::vector<std::byte>> per_sample_and_whole_batch(
    const std::shared_ptr<WindowDataset>& dataset, const std::vector<int64_t>& samples,
    size_t threads) {
  const auto n = static_cast<int64_t>(samples.size());
  BatchAssembler assembler(dataset, n, threads);
  std::vector<std::byte> per_sample(assembler.layout().total_bytes, std::byte{0x5a});
  assembler.assemble(samples, per_sample.data());

  const BatchLayout& layout = assembler.layout();
  std::vector<std::byte> whole(layout.total_bytes, std::byte{0x5a});
  std::vector<std::vector<std::byte>> staging;
  BatchMemory memory;
  memory.batch_size = n;
  for (size_t k = 0; k < dataset->outputs().size(); ++k) {
    memory.outputs.push_back(whole.data() + layout.offsets[k]);
  }
  for (const OutputSpec& spec : dataset->staging()) {
    staging.emplace_back(static_cast<size_t>(n * spec.sample_nbytes()));
    memory.staging.push_back(staging.back().data());
  }
  ReadPlan plan;
  for (int64_t i = 0; i < n; ++i) dataset->plan(samples[static_cast<size_t>(i)], i, memory, plan);
  ThreadPool pool(threads);
  std::vector<ReadScratch> scratch(pool.size());
  plan.execute(&pool, scratch);
  dataset->finish(memory, &pool);
  return {std::move(per_sample), std::move(whole)};
}

TEST(WindowDecoding, PlacedPerSampleIsTheWholeBatchPassBitForBit) {
  const std::vector<int64_t> samples = {3, 0, 2, 0, 1};  // repeated and shared time steps
  int compared = 0;
  for (bool channels_last : {true, false}) {
    for (DataType out : {kFloat32, DataType{DTypeKind::kBFloat, 2}}) {
      for (bool per_point : {false, true}) {
        for (bool masks : {false, true}) {
          WindowOptions o = xarray_options();
          o.channels_last = channels_last;
          o.output_dtype = out;
          o.nan_mask = masks;
          o.mean_suffix = "_mean", o.std_suffix = "_std";
          Group group =
              per_point ? with_point_statistics(make_xarray_group()) : make_xarray_group();
          if (!per_point) {  // per-channel statistics arrays under the same names
            auto store = std::make_shared<MemoryStore>();
            const DataType f64{DTypeKind::kFloat, 8};
            group.arrays["t_mean"] =
                make_array(store, "t_mean", f64, {kLevelCount}, {kLevelCount}, {"pressure_level"},
                           json::object(), [](auto i) { return 250.0 + 10.0 * i[0]; });
            group.arrays["t_std"] =
                make_array(store, "t_std", f64, {kLevelCount}, {kLevelCount}, {"pressure_level"},
                           json::object(), [](auto i) { return 4.0 + i[0]; });
            for (const char* name : {"sp_mean", "sp_std", "orog_mean", "orog_std"}) {
              const double value = std::string(name).ends_with("mean") ? 900.0 : 25.0;
              group.arrays[name] = make_array(store, name, f64, {1}, {1}, {"one"}, json::object(),
                                              [value](auto) { return value; });
            }
          }
          auto dataset = std::make_shared<WindowDataset>(group, o);
          ASSERT_TRUE(dataset->finishes_per_sample());
          for (size_t threads : {1, 3}) {
            auto [per_sample, whole] = per_sample_and_whole_batch(dataset, samples, threads);
            ASSERT_EQ(per_sample, whole)
                << (channels_last ? "channels-last " : "channels-first ") << out.name()
                << (per_point ? " per-point" : " per-channel") << (masks ? " masks" : "")
                << " threads " << threads;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 32);
}

TEST(WindowDecoding, StatisticsPerGridPointRefuseABadPointOnlyWhenItIsRead) {
  WindowOptions o = xarray_options();
  o.mean_suffix = "_mean", o.std_suffix = "_std";
  o.lat_start = 1;  // row 0 is not read: its std of 0 is no error
  EXPECT_NO_THROW(WindowDataset(with_point_statistics(make_xarray_group(), 0), o));
  try {
    WindowDataset(with_point_statistics(make_xarray_group(), 2), o);
    FAIL() << "a std of 0 inside the window was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string what = e.what();
    EXPECT_NE(what.find("'t_std'"), std::string::npos) << what;
    EXPECT_NE(what.find("lat index 2, lon index 0"), std::string::npos) << what;
  }
  // a (lat, lon) mean with a per-channel std, and a grid of the wrong shape
  Group group = with_point_statistics(make_xarray_group());
  group.arrays["sp_std"] = group.arrays["orog_std"];
  EXPECT_THROW(WindowDataset(group, o), Error);
  group = with_point_statistics(make_xarray_group());
  group.arrays["t_mean"] = group.arrays["sp_mean"];  // (lat, lon) for a variable with levels
  try {
    WindowDataset(group, o);
    FAIL() << "a mean without its level axis was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs [3, 4, 6]"), std::string::npos) << e.what();
  }
}

TEST(WindowDecoding, DecodeOffReadsStoredValues) {
  WindowOptions o;
  o.variables = {"t"};
  o.level_indices = {1};
  o.input_offsets = {0};
  o.target_offsets = {};
  o.decode_cf = false;
  o.channels_last = false;
  auto dataset = std::make_shared<WindowDataset>(make_xarray_group(), o);
  BatchAssembler assembler(dataset, 1, 1);
  std::vector<std::byte> buffer(assembler.layout().total_bytes);
  const int64_t samples[1] = {3};
  assembler.assemble(samples, buffer.data());
  for (int64_t y = 0; y < kRowCount; ++y) {
    for (int64_t x = 0; x < kColCount; ++x) {
      float actual;
      std::memcpy(&actual, buffer.data() + (y * kColCount + x) * 4, 4);
      const int64_t index[4] = {1, 3, x, y};
      EXPECT_EQ(actual, static_cast<float>(t_raw(index)));
    }
  }
}

TEST(WindowDecoding, ClearErrorsForUnknownDimensionsAndStatics) {
  auto store = std::make_shared<MemoryStore>();
  Group group = make_xarray_group();
  group.arrays["ens"] = make_array(store, "ens", DataType{DTypeKind::kFloat, 4},
                                   {kTimeSteps, 2, kRowCount, kColCount},
                                   {1, 2, kRowCount, kColCount}, {"time", "member", "lat", "lon"},
                                   json::object(), [](std::span<const int64_t>) { return 1.0; });
  WindowOptions o;
  o.variables = {"ens"};
  try {
    WindowDataset dataset(group, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'member'"), std::string::npos) << e.what();
  }
  o.variables = {"sp"};
  o.statics = {"t"};
  try {
    WindowDataset dataset(group, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("static field 't'"), std::string::npos) << e.what();
  }
}

TEST(CfEncoding, ParsesXarrayAttributes) {
  ArrayMetadata m;
  m.zarr_format = 3;
  m.data_type = DataType{DTypeKind::kFloat, 4};
  m.fill_value.assign(4, std::byte{0});
  // xarray writes a float _FillValue of a v3 array as base64 of its float64: -9999.0 here.
  m.attributes = {
      {"_FillValue", "AAAAAICHw8A="}, {"missing_value", {1e20, -9999.0}}, {"scale_factor", {2.0}}};
  const detail::CfEncoding cf = detail::parse_cf_encoding(m, "x");
  EXPECT_TRUE(cf.scaled);
  EXPECT_EQ(cf.scale, 2.0);
  EXPECT_EQ(cf.offset, 0.0);
  EXPECT_EQ(cf.missing, (std::vector<double>{-9999.0, 1e20}));

  m.zarr_format = 2;  // v2: a non-null fill_value counts as _FillValue, as xarray reads it
  m.attributes = json::object();
  const float fill = -1.5f;
  std::memcpy(m.fill_value.data(), &fill, 4);
  EXPECT_EQ(detail::parse_cf_encoding(m, "x").missing, (std::vector<double>{-1.5}));
  m.fill_value_null = true;
  EXPECT_FALSE(detail::parse_cf_encoding(m, "x").any());

  m.attributes = {{"scale_factor", "big"}};
  try {
    detail::parse_cf_encoding(m, "temperature");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidMetadata);
    EXPECT_NE(std::string(e.what()).find("'temperature'"), std::string::npos);
  }
}

TEST(CfEncoding, DecodeRunMasksScalesNormalisesAndCasts) {
  const int16_t raw[4] = {100, kFill, -4, 0};
  detail::ChannelDecode d;
  d.stored = DataType{DTypeKind::kInt, 2};
  d.cf.scale = 0.5, d.cf.offset = 10, d.cf.scaled = true, d.cf.missing = {kFill};
  d.mean = 2, d.inv_std = 0.5f;
  float out[8];
  std::fill(out, out + 8, -1.0f);
  detail::decode_run(reinterpret_cast<const std::byte*>(raw), 4, d,
                     reinterpret_cast<std::byte*>(out), 2, DataType{DTypeKind::kFloat, 4});
  EXPECT_EQ(out[0], (100 * 0.5f + 10 - 2) * 0.5f);
  EXPECT_EQ(out[1], -1.0f);  // the stride skips it
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[4], (-4 * 0.5f + 10 - 2) * 0.5f);
  EXPECT_EQ(out[6], (10 - 2) * 0.5f);
  uint16_t half[4];
  detail::decode_run(reinterpret_cast<const std::byte*>(raw), 4, d,
                     reinterpret_cast<std::byte*>(half), 1, DataType{DTypeKind::kBFloat, 2});
  EXPECT_EQ(half[0], float_to_bfloat16(out[0]));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(half[1])));
}

// decode_run takes an AVX2 build of its loops where the CPU has it: the outputs must be the same
// bits as the documented scalar arithmetic, written out here, for every stored type the windows
// meet, every output dtype, runs that do not fill a vector or a block, and the values where a
// different rounding or a fused multiply-add would show (-0, NaN, infinities, subnormals, the
// fill value, halfway bfloat16 cases).
TEST(CfEncoding, DecodeRunIsTheScalarArithmeticBitForBit) {
  const int64_t n = 1037;  // not a multiple of 8, 16 or the 256-value blocks
  std::vector<int16_t> i16(n);
  std::vector<float> f32(n);
  std::vector<double> f64(n);
  for (int64_t i = 0; i < n; ++i) {
    i16[i] = static_cast<int16_t>(i * 7919 - 30000);
    const uint32_t bits = static_cast<uint32_t>(i) * 2654435761u;
    f32[i] = std::bit_cast<float>(bits);  // every class of float, NaNs and subnormals included
    f64[i] = static_cast<double>(f32[i]) * 1.0000001;
  }
  i16[3] = kFill, i16[500] = kFill;
  f32[0] = -0.0f, f32[1] = 0x1.0101p0f, f32[2] = std::numeric_limits<float>::infinity();
  f32[4] = -9999.0f;
  const std::vector<DataType> outs = {DataType{DTypeKind::kFloat, 4},
                                      DataType{DTypeKind::kFloat, 2},
                                      DataType{DTypeKind::kBFloat, 2}};
  auto cast_bits = [](float v, DataType out) -> uint32_t {
    if (out.kind == DTypeKind::kBFloat) return float_to_bfloat16(v);
    if (out.size == 2) return float_to_half(v);
    return std::bit_cast<uint32_t>(v);
  };
  struct Case {
    DataType stored;
    const void* values;
    double scale, offset;
    std::vector<double> missing;
    float mean, inv_std;
  };
  const std::vector<Case> cases = {
      {DataType{DTypeKind::kInt, 2},
       i16.data(),
       0.004831495666503907,
       266.05109786987305,
       {kFill},
       270.5f,
       0.0625f},
      {DataType{DTypeKind::kInt, 2}, i16.data(), 1, 0, {}, 0, 1},
      {DataType{DTypeKind::kFloat, 4}, f32.data(), 1, 0, {}, 0, 1},
      {DataType{DTypeKind::kFloat, 4}, f32.data(), 1, 0, {}, 3.25f, 0.1f},
      {DataType{DTypeKind::kFloat, 4}, f32.data(), 1, 0, {-9999.0}, 3.25f, 0.1f},
      {DataType{DTypeKind::kFloat, 4}, f32.data(), 0.1, -3, {-9999.0}, 0, 1},
      {DataType{DTypeKind::kFloat, 8}, f64.data(), 2, 0.5, {}, 1, 3},
  };
  for (const Case& c : cases) {
    detail::ChannelDecode d;
    d.stored = c.stored;
    d.cf.scale = c.scale, d.cf.offset = c.offset, d.cf.missing = c.missing;
    d.cf.scaled = c.scale != 1 || c.offset != 0;
    d.mean = c.mean, d.inv_std = c.inv_std;
    for (DataType out : outs) {
      for (int64_t stride : {1, 3}) {
        std::vector<std::byte> got(static_cast<size_t>(n * stride * out.size));
        detail::decode_run(static_cast<const std::byte*>(c.values), n, d, got.data(), stride, out);
        for (int64_t i = 0; i < n; ++i) {
          double raw = 0;
          if (c.stored.kind == DTypeKind::kInt) raw = static_cast<const int16_t*>(c.values)[i];
          if (c.stored == kFloat32) raw = static_cast<const float*>(c.values)[i];
          if (c.stored == DataType{DTypeKind::kFloat, 8}) {
            raw = static_cast<const double*>(c.values)[i];
          }
          bool missing = false;
          for (double m : c.missing) missing = missing || raw == m;
          const bool plain_float = c.stored == kFloat32 && !d.cf.any();
          const float value = missing       ? std::numeric_limits<float>::quiet_NaN()
                              : plain_float ? static_cast<const float*>(c.values)[i]
                                            : static_cast<float>(raw * c.scale + c.offset);
          const uint32_t want = cast_bits((value - c.mean) * c.inv_std, out);
          uint32_t have = 0;
          std::memcpy(&have, got.data() + i * stride * out.size, out.size);
          const bool both_nan = out == kFloat32 && std::isnan(std::bit_cast<float>(want)) &&
                                std::isnan(std::bit_cast<float>(have));
          if (have != want && !both_nan) {
            ADD_FAILURE() << c.stored.name() << " -> " << out.name() << " stride " << stride
                          << " value " << i << " (" << raw << "): " << have << " != " << want;
            break;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace chute
