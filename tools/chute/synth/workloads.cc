#include "chute/synth/workloads.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>

#include "chute/synth/generate.h"
#include "chute/synth/hdf5_writer.h"
#include "chute/util/error.h"
#include "chute/util/thread_pool.h"

namespace chute::synth {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void require(bool ok, const char* flag, int64_t value, const char* expected) {
  if (!ok) fail(ErrorCode::kInvalidArgument, "{}: expected {}, got {}", flag, expected, value);
}

void check_common(const CommonOptions& o) {
  require(o.zarr_format == 2 || o.zarr_format == 3, "--format", o.zarr_format, "2 or 3");
  codec_preset(o.codec);  // throws for an unknown name
  if (!(o.noise >= 0.0) || !std::isfinite(o.noise)) {
    fail(ErrorCode::kInvalidArgument, "--noise: expected a finite value >= 0, got {}", o.noise);
  }
}

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
}

/// Free bytes on the file system that will hold `out` (its nearest existing ancestor).
uint64_t free_disk_bytes(const std::string& out) {
  fs::path path = fs::absolute(out);
  std::error_code ec;
  while (!fs::exists(path, ec) && path.has_parent_path() && path != path.parent_path()) {
    path = path.parent_path();
  }
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) return UINT64_MAX;
  return uint64_t(st.f_bavail) * uint64_t(st.f_frsize);
}

/// Refuses sizes the machine cannot hold, before any work: every worker thread holds a chunk
/// (generated, then compressed), and the output's file system must hold the dataset (at most
/// 4:1 smaller compressed; this noise never compresses that well).
void check_size(const std::string& out, const CommonOptions& o, const std::string& flags,
                __int128 chunk_bytes, __int128 total_bytes) {
  auto text = [](__int128 bytes) {
    return bytes > __int128(UINT64_MAX) ? std::string("more than 2^64")
                                        : std::to_string(uint64_t(bytes));
  };
  const __int128 threads = o.threads == 0 ? default_thread_count() : o.threads;
  const __int128 memory = physical_memory_bytes();
  if (chunk_bytes * 3 * threads > memory) {
    fail(ErrorCode::kInvalidArgument,
         "{} make chunks of {} bytes; generating and compressing them on {} threads needs "
         "about {} bytes, more than this machine's {} bytes of memory",
         flags, text(chunk_bytes), uint64_t(threads), text(chunk_bytes * 3 * threads),
         uint64_t(memory));
  }
  const __int128 free_bytes = free_disk_bytes(out);
  const __int128 ratio = o.codec == "none" ? 1 : 4;
  if (total_bytes > free_bytes * ratio) {
    fail(ErrorCode::kInvalidArgument,
         "{} make {} bytes of data, more than the {} bytes free on the file system of '{}'{}",
         flags, text(total_bytes), uint64_t(free_bytes), out,
         ratio > 1 ? " could hold even compressed 4:1" : "");
  }
}

json common_json(const CommonOptions& o) {
  return {{"codec", o.codec}, {"seed", o.seed}, {"noise", o.noise}, {"zarr_format", o.zarr_format}};
}

/// Makes `out` an empty folder: it may not exist yet, or be empty.
void prepare_output(const std::string& out) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec) || !fs::is_empty(out, ec)) {
      fail(ErrorCode::kInvalidArgument,
           "{}: expected a new or empty folder, found existing content", out);
    }
  }
}

/// A distinct seed per array of a dataset.
uint64_t array_seed(uint64_t seed, uint64_t array) {
  return mix64(seed * 0x9e3779b97f4a7c15ULL + array);
}

ArraySpec float_array(const CommonOptions& o, std::vector<int64_t> shape,
                      std::vector<int64_t> chunks, std::vector<std::string> dims) {
  ArraySpec spec;
  spec.zarr_format = o.zarr_format;
  spec.shape = std::move(shape);
  spec.chunk_shape = std::move(chunks);
  spec.data_type = kFloat32;
  spec.fill_value = "NaN";  // like ERA5/WeatherBench2 stores: missing chunks read as NaN
  spec.dimension_names = std::move(dims);
  spec.codec = o.codec;
  return spec;
}

FieldArrayJob field_job(const std::string& path, ArraySpec spec, std::vector<double> wavelength,
                        int channel_axis, std::vector<ChannelLevels> channels, uint64_t seed) {
  FieldSpec field;
  field.shape = spec.shape;
  field.wavelength = std::move(wavelength);
  field.channel_axis = channel_axis;
  field.channels = std::move(channels);
  field.seed = seed;
  FieldArrayJob job;
  job.writer = std::make_unique<ArrayWriter>(path, std::move(spec));
  job.field = std::make_unique<Field>(std::move(field));
  return job;
}

/// A coordinate array (one chunk, no fill value, so that xarray masks no coordinate value such
/// as time 0 or lon 0) of dimension `dim`.
ArrayWriter coordinate(const CommonOptions& o, const std::string& path, int64_t length,
                       DataType type, const std::string& dim, json attrs) {
  ArraySpec spec;
  spec.zarr_format = o.zarr_format;
  spec.shape = {length};
  spec.chunk_shape = {length};
  spec.data_type = type;
  spec.fill_value = nullptr;
  spec.dimension_names = {dim};
  spec.attributes = std::move(attrs);
  spec.codec = o.codec;
  return ArrayWriter(path, std::move(spec));
}

/// Latitudes of a regular grid from 90 to -90 and longitudes from 0 (east), as ERA5 lays them.
std::vector<float> grid_latitudes(int64_t n) {
  std::vector<float> lat(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lat[i] = n == 1 ? 0.f : float(90.0 - 180.0 * i / (n - 1));
  return lat;
}

std::vector<float> grid_longitudes(int64_t n) {
  std::vector<float> lon(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lon[i] = float(360.0 * i / n);
  return lon;
}

std::vector<int64_t> counting(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

class Timer {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

DatasetSummary finish(const std::string& out, Manifest manifest, const GenerateResult& result,
                      const Timer& timer) {
  consolidate_metadata(out, manifest.zarr_format);
  manifest.logical_bytes = result.logical_bytes;
  manifest.stored_bytes = result.stored_bytes;
  // The folder was new or empty: everything in it now is chute's (see remove_dataset).
  manifest.entries = {kManifestName};
  for (const auto& item : fs::directory_iterator(out)) {
    manifest.entries.push_back(item.path().filename().string());
  }
  std::sort(manifest.entries.begin(), manifest.entries.end());
  write_manifest(out, manifest);
  DatasetSummary summary;
  summary.manifest = std::move(manifest);
  summary.logical_bytes = result.logical_bytes;
  summary.stored_bytes = result.stored_bytes;
  summary.chunks = result.chunks;
  summary.seconds = timer.seconds();
  return summary;
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

}  // namespace

std::vector<int64_t> pressure_levels(int64_t count) {
  static const std::vector<int64_t> kStandard = {50,  100, 150, 200, 250, 300, 400,
                                                 500, 600, 700, 850, 925, 1000};
  if (count == static_cast<int64_t>(kStandard.size())) return kStandard;
  std::vector<int64_t> levels;
  for (int64_t i = 0; i < count; ++i) {
    levels.push_back(count == 1 ? 500 : 50 + (950 * i) / (count - 1));
  }
  return levels;
}

void check_options(const std::string& out, const PackedOptions& o) {
  check_common(o);
  require(o.samples >= 1, "--samples", o.samples, ">= 1");
  require(o.lat >= 1, "--lat", o.lat, ">= 1");
  require(o.lon >= 1, "--lon", o.lon, ">= 1");
  require(o.input_channels >= 1, "--input-channels", o.input_channels, ">= 1");
  require(o.target_channels >= 1, "--target-channels", o.target_channels, ">= 1");
  require(o.chunk_channels >= 0, "--chunk-channels", o.chunk_channels, ">= 0");
  const __int128 widest = std::max(o.input_channels, o.target_channels);
  const __int128 chunk_channels =
      o.chunk_channels == 0 ? widest : std::min<__int128>(o.chunk_channels, widest);
  const __int128 pixels = __int128(o.lat) * o.lon;
  check_size(out, o, "--samples/--lat/--lon/--input-channels/--target-channels",
             pixels * chunk_channels * 4,
             pixels * o.samples * (__int128(o.input_channels) + o.target_channels) * 4);
}

DatasetSummary make_packed(const std::string& out, const PackedOptions& o) {
  check_options(out, o);
  prepare_output(out);
  Timer timer;
  write_group(out, o.zarr_format, {{"chute_workload", "packed"}});

  std::vector<FieldArrayJob> jobs;
  const std::pair<const char*, int64_t> arrays[] = {{"inputs", o.input_channels},
                                                    {"targets", o.target_channels}};
  for (uint64_t a = 0; a < 2; ++a) {
    const auto& [name, channels] = arrays[a];
    // A channel dimension per array: xarray refuses one dimension name with two lengths.
    const std::vector<std::string> dims = {"sample", "lat", "lon", std::string(name) + "_channel"};
    int64_t chunk_channels =
        o.chunk_channels == 0 ? channels : std::min(o.chunk_channels, channels);
    auto spec = float_array(o, {o.samples, o.lat, o.lon, channels},
                            {1, o.lat, o.lon, chunk_channels}, dims);
    uint64_t seed = array_seed(o.seed, a);
    jobs.push_back(field_job(out + "/" + name, std::move(spec),
                             {24.0, double(o.lat), double(o.lon), 6.0}, 3,
                             random_channel_levels(channels, seed, 200.0, 20.0, o.noise), seed));
  }

  // Coordinates, so that xarray.open_zarr shows them: the sample number, the grid's latitudes
  // and longitudes (as make-dataset variables writes them) and each array's channel number.
  // They are not in the manifest's arrays: the samples are inputs and targets.
  coordinate(o, out + "/sample", o.samples, kInt64, "sample", {{"long_name", "sample number"}})
      .write_all(bytes_of(counting(o.samples)));
  coordinate(o, out + "/lat", o.lat, kFloat32, "lat", {{"units", "degrees_north"}})
      .write_all(bytes_of(grid_latitudes(o.lat)));
  coordinate(o, out + "/lon", o.lon, kFloat32, "lon", {{"units", "degrees_east"}})
      .write_all(bytes_of(grid_longitudes(o.lon)));
  for (const auto& [name, channels] : arrays) {
    const std::string dim = std::string(name) + "_channel";
    coordinate(o, out + "/" + dim, channels, kInt64, dim,
               {{"long_name", std::string("channel of ") + name}})
        .write_all(bytes_of(counting(channels)));
  }

  ThreadPool pool(o.threads);
  ProgressTracker progress(generated_bytes(jobs), o.progress);
  GenerateResult result = generate_arrays(jobs, pool, &progress);

  Manifest manifest;
  manifest.workload = "packed";
  manifest.zarr_format = o.zarr_format;
  manifest.arrays = {{"inputs", "inputs"}, {"targets", "targets"}};
  manifest.options = common_json(o);
  manifest.options.update({{"samples", o.samples},
                           {"lat", o.lat},
                           {"lon", o.lon},
                           {"input_channels", o.input_channels},
                           {"target_channels", o.target_channels},
                           {"chunk_channels", o.chunk_channels}});
  return finish(out, std::move(manifest), result, timer);
}

namespace {

/// Running mean and sum of squared deviations (Chan et al.'s parallel combination).
struct Moments {
  double count = 0, mean = 0, m2 = 0;
  static Moments of(const float* values, int64_t n) {
    Moments m;
    m.count = static_cast<double>(n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += values[i];
    m.mean = sum / m.count;
    for (int64_t i = 0; i < n; ++i) m.m2 += (values[i] - m.mean) * (values[i] - m.mean);
    return m;
  }
  void merge(const Moments& o) {
    double total = count + o.count;
    double delta = o.mean - mean;
    mean += delta * o.count / total;
    m2 += o.m2 + delta * delta * count * o.count / total;
    count = total;
  }
  double std_dev() const { return count > 0 ? std::sqrt(m2 / count) : 0.0; }
};

struct Variable {
  const char* name;
  const char* units;
  bool has_levels;
  double (*offset)(double hpa);
  double (*amplitude)(double hpa);
};

const Variable kVariables[] = {
    {"temperature", "K", true, [](double p) { return 200.0 + 88.0 * std::pow(p / 1000.0, 0.3); },
     [](double) { return 12.0; }},
    {"u_component_of_wind", "m s-1", true, [](double p) { return 5.0 + 15.0 * (1.0 - p / 1000.0); },
     [](double) { return 15.0; }},
    {"v_component_of_wind", "m s-1", true, [](double) { return 0.0; }, [](double) { return 8.0; }},
    {"geopotential", "m2 s-2", true,
     [](double p) { return 9.80665 * 7400.0 * std::log(1013.25 / p); },
     [](double p) { return 300.0 + 0.02 * 9.80665 * 7400.0 * std::log(1013.25 / p); }},
    {"2m_temperature", "K", false, [](double) { return 288.0; }, [](double) { return 25.0; }},
    {"mean_sea_level_pressure", "Pa", false, [](double) { return 101325.0; },
     [](double) { return 1500.0; }},
};

}  // namespace

void check_options(const std::string& out, const VariablesOptions& o) {
  check_common(o);
  require(o.times >= 1, "--times", o.times, ">= 1");
  require(o.levels >= 1, "--levels", o.levels, ">= 1");
  require(o.lat >= 1, "--lat", o.lat, ">= 1");
  require(o.lon >= 1, "--lon", o.lon, ">= 1");
  const __int128 field = __int128(o.levels) * o.lat * o.lon * 4;
  check_size(out, o, "--times/--levels/--lat/--lon", field, field * 6 * o.times);
}

DatasetSummary make_variables(const std::string& out, const VariablesOptions& o) {
  check_options(out, o);
  prepare_output(out);
  Timer timer;
  const int fmt = o.zarr_format;
  write_group(out, fmt,
              {{"chute_workload", "variables"},
               {"description", "chute synthetic WeatherBench2-style dataset"}});

  // Coordinates, each one chunk.
  auto coord = [&](const std::string& path, std::vector<int64_t> shape, DataType type,
                   const char* dim, json attrs) {
    return coordinate(o, path, shape.at(0), type, dim, std::move(attrs));
  };
  const auto levels = pressure_levels(o.levels);
  std::vector<int64_t> hours(static_cast<size_t>(o.times));
  for (int64_t t = 0; t < o.times; ++t) hours[t] = 6 * t;
  const std::vector<float> lat = grid_latitudes(o.lat), lon = grid_longitudes(o.lon);
  const json level_attrs = {{"units", "hPa"}, {"long_name", "pressure level"}};
  coord(out + "/time", {o.times}, kInt64, "time",
        {{"units", "hours since 2020-01-01 00:00:00"}, {"calendar", "proleptic_gregorian"}})
      .write_all(bytes_of(hours));
  coord(out + "/level", {o.levels}, kInt64, "level", level_attrs).write_all(bytes_of(levels));
  coord(out + "/lat", {o.lat}, kFloat32, "lat", {{"units", "degrees_north"}})
      .write_all(bytes_of(lat));
  coord(out + "/lon", {o.lon}, kFloat32, "lon", {{"units", "degrees_east"}})
      .write_all(bytes_of(lon));

  // Variables, one time step a chunk; statistics gathered per (time step, level) and merged in
  // order afterwards so they do not depend on thread scheduling.
  std::vector<FieldArrayJob> jobs;
  std::vector<std::vector<Moments>> partial;  // [variable][time * levels + level]
  partial.reserve(std::size(kVariables));     // observers keep references into it
  const int64_t plane = o.lat * o.lon;
  uint64_t index = 0;
  for (const Variable& v : kVariables) {
    const int64_t channels = v.has_levels ? o.levels : 1;
    std::vector<ChannelLevels> levels_of(static_cast<size_t>(channels));
    for (int64_t l = 0; l < channels; ++l) {
      double hpa = v.has_levels ? double(levels[l]) : 1000.0;
      levels_of[l] = {v.offset(hpa), v.amplitude(hpa), o.noise * v.amplitude(hpa)};
    }
    auto spec =
        v.has_levels
            ? float_array(o, {o.times, o.levels, o.lat, o.lon}, {1, o.levels, o.lat, o.lon},
                          {"time", "level", "lat", "lon"})
            : float_array(o, {o.times, o.lat, o.lon}, {1, o.lat, o.lon}, {"time", "lat", "lon"});
    spec.attributes = {{"units", v.units}};
    auto wavelength = v.has_levels ? std::vector<double>{40.0, 6.0, double(o.lat), double(o.lon)}
                                   : std::vector<double>{40.0, double(o.lat), double(o.lon)};
    uint64_t seed = array_seed(o.seed, index);
    auto job = field_job(out + "/" + v.name, std::move(spec), std::move(wavelength),
                         v.has_levels ? 1 : -1, std::move(levels_of), seed);
    auto& moments = partial.emplace_back(static_cast<size_t>(o.times * channels));
    job.observe = [&moments, channels, plane](int64_t t, std::span<const float> values) {
      for (int64_t l = 0; l < channels; ++l) {
        moments[static_cast<size_t>(t * channels + l)] =
            Moments::of(values.data() + l * plane, plane);
      }
    };
    jobs.push_back(std::move(job));
    ++index;
  }

  ThreadPool pool(o.threads);
  ProgressTracker progress(generated_bytes(jobs), o.progress);
  GenerateResult result = generate_arrays(jobs, pool, &progress);

  // mean/<var> and std/<var>, with the level coordinate beside them.
  for (const char* group : {"mean", "std"}) {
    write_group(out + "/" + group, fmt,
                {{"description", std::string(group) + " of each variable over time, lat and lon"}});
    coord(out + "/" + group + "/level", {o.levels}, kInt64, "level", level_attrs)
        .write_all(bytes_of(levels));
  }
  for (size_t vi = 0; vi < std::size(kVariables); ++vi) {
    const Variable& v = kVariables[vi];
    const int64_t channels = v.has_levels ? o.levels : 1;
    std::vector<float> mean(static_cast<size_t>(channels)), std_dev(static_cast<size_t>(channels));
    for (int64_t l = 0; l < channels; ++l) {
      Moments total;
      for (int64_t t = 0; t < o.times; ++t) total.merge(partial[vi][t * channels + l]);
      mean[l] = static_cast<float>(total.mean);
      std_dev[l] = static_cast<float>(total.std_dev());
    }
    for (const char* group : {"mean", "std"}) {
      ArraySpec spec = v.has_levels ? float_array(o, {o.levels}, {o.levels}, {"level"})
                                    : float_array(o, {}, {}, {});
      spec.attributes = {{"units", v.units}};
      ArrayWriter writer(out + "/" + group + "/" + v.name, std::move(spec));
      writer.write_all(bytes_of(std::string(group) == "mean" ? mean : std_dev));
    }
  }

  Manifest manifest;
  manifest.workload = "variables";
  manifest.zarr_format = fmt;
  json names_3d = json::array(), names_2d = json::array();
  for (const Variable& v : kVariables) {
    manifest.arrays[v.name] = v.name;
    (v.has_levels ? names_3d : names_2d).push_back(v.name);
  }
  for (const char* c : {"time", "level", "lat", "lon"}) manifest.arrays[c] = c;
  manifest.options = common_json(o);
  manifest.options.update({{"times", o.times},
                           {"levels", o.levels},
                           {"lat", o.lat},
                           {"lon", o.lon},
                           {"variables_3d", names_3d},
                           {"variables_2d", names_2d},
                           {"mean_group", "mean"},
                           {"std_group", "std"}});
  return finish(out, std::move(manifest), result, timer);
}

void check_options(const std::string& out, const VolumeOptions& o) {
  check_common(o);
  require(o.size >= 1, "--size", o.size, ">= 1");
  require(o.input_channels >= 1, "--input-channels", o.input_channels, ">= 1");
  require(o.target_channels >= 1, "--target-channels", o.target_channels, ">= 1");
  require(o.chunk >= 1, "--chunk", o.chunk, ">= 1");
  require(o.blosc_block >= 0, "--blosc-block", o.blosc_block, ">= 0");
  require(o.inner_chunk >= 0, "--inner-chunk", o.inner_chunk, ">= 0");
  if (o.inner_chunk > 0) {
    require(o.zarr_format == 3, "--format", o.zarr_format, "3 with --inner-chunk (sharding)");
    require(std::min(o.chunk, o.size) % o.inner_chunk == 0, "--inner-chunk", o.inner_chunk,
            "a divisor of the chunk (shard) edge");
  }
  const __int128 edge = std::min(o.chunk, o.size);
  const __int128 voxels = __int128(o.size) * o.size * o.size;
  check_size(out, o, "--size/--chunk/--input-channels/--target-channels", edge * edge * edge * 4,
             voxels * (__int128(o.input_channels) + o.target_channels) * 4 * (o.npy ? 2 : 1));
}

DatasetSummary make_volume(const std::string& out, const VolumeOptions& o) {
  check_options(out, o);
  prepare_output(out);
  Timer timer;
  write_group(out, o.zarr_format, {{"chute_workload", "volume"}});

  const int64_t n = o.size, c = std::min(o.chunk, o.size);
  const std::pair<const char*, int64_t> arrays[] = {{"input", o.input_channels},
                                                    {"target", o.target_channels}};
  std::vector<FieldArrayJob> jobs;
  for (uint64_t a = 0; a < 2; ++a) {
    const auto& [name, channels] = arrays[a];
    auto spec = float_array(o, {channels, n, n, n}, {1, c, c, c}, {"channel", "x", "y", "z"});
    spec.blosc_blocksize = o.blosc_block;
    if (o.inner_chunk > 0)
      spec.inner_chunk_shape = {1, o.inner_chunk, o.inner_chunk, o.inner_chunk};
    uint64_t seed = array_seed(o.seed, 100 + a);
    double wave = std::max(8.0, n / 3.0);
    // Positive fields around 3..5 (like log-densities), so the exponent bytes compress.
    auto levels = random_channel_levels(channels, seed, 1.0, 1.0, o.noise);
    for (auto& level : levels) level.offset += 4.0;
    jobs.push_back(field_job(out + "/" + name, std::move(spec), {3.0, wave, wave, wave}, 0,
                             std::move(levels), seed));
  }
  int64_t total = generated_bytes(jobs);
  const int64_t volume_bytes = (o.input_channels + o.target_channels) * n * n * n * 4;
  if (o.npy) total += volume_bytes;
  if (o.hdf5) total += volume_bytes;
  ThreadPool pool(o.threads);
  ProgressTracker progress(total, o.progress);
  GenerateResult result = generate_arrays(jobs, pool, &progress);
  json npy = json::object();
  if (o.npy) {
    for (size_t a = 0; a < 2; ++a) {
      std::string file = std::string(arrays[a].first) + ".npy";
      write_npy(out + "/" + file, *jobs[a].field, pool, &progress, /*channels_last=*/true);
      npy[arrays[a].first] = file;
    }
  }
  json hdf5 = nullptr;
  if (o.hdf5) {
    write_hdf5(out + "/volume.h5", {{"Nbody", jobs[0].field.get()}, {"Hydro", jobs[1].field.get()}},
               std::min(o.hdf5_chunk, n), o.codec, pool, &progress);
    hdf5 = {{"file", "volume.h5"},
            {"input", "Nbody"},
            {"target", "Hydro"},
            {"chunk", o.hdf5_chunk > 0 ? json(std::min(o.hdf5_chunk, n)) : json(nullptr)},
            {"codec", o.hdf5_chunk > 0 ? json(o.codec) : json("none")}};
  }

  Manifest manifest;
  manifest.workload = "volume";
  manifest.zarr_format = o.zarr_format;
  manifest.arrays = {{"input", "input"}, {"target", "target"}};
  manifest.options = common_json(o);
  manifest.options.update({{"size", n},
                           {"input_channels", o.input_channels},
                           {"target_channels", o.target_channels},
                           {"chunk", c},
                           {"blosc_block", o.blosc_block},
                           {"inner_chunk", o.inner_chunk > 0 ? json(o.inner_chunk) : json(nullptr)},
                           {"npy", npy},
                           {"hdf5", hdf5}});
  return finish(out, std::move(manifest), result, timer);
}

}  // namespace chute::synth
