// `chute make-dataset KIND OUT`: synthetic packed / variables / volume datasets (WORKLOADS.md),
// generated, compressed and written in parallel, with a progress bar on stderr.
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "chute/bench/python_tools.h"
#include "chute/synth/manifest.h"
#include "chute/synth/workloads.h"
#include "chute/synth/zarr_writer.h"
#include "chute/util/error.h"
#include "commands.h"
#include "output.h"

namespace chute::cli {
namespace fs = std::filesystem;

namespace {

struct MakeOptions {
  std::string kind;
  std::string out;
  synth::CommonOptions common;
  bool force = false;
  bool quiet = false;
  // Unset: the workload's default. A given value goes to the generator as it is, so a
  // negative one is an error naming the flag, never silently the default.
  std::optional<int64_t> samples, lat, lon, input_channels, target_channels;
  std::optional<int64_t> chunk_channels, times, levels, size, chunk, blosc_block, inner_chunk;
  bool npy = false;
  bool no_hdf5 = false;
  bool xarray = false;  // variables: written by xarray itself (chute.weather_store)
};

/// Sets `field` when the flag was given.
void take(const std::optional<int64_t>& given, int64_t& field) {
  if (given) field = *given;
}

/// Refuses flags that belong to another workload (a usage error, exit code 2).
void reject_foreign(const CLI::App& command, const std::string& kind,
                    std::initializer_list<const char*> allowed) {
  static const char* const kSpecific[] = {
      "--samples",        "--lat",         "--lon",    "--input-channels", "--target-channels",
      "--chunk-channels", "--times",       "--levels", "--size",           "--chunk",
      "--blosc-block",    "--inner-chunk", "--npy",    "--no-hdf5"};
  for (const char* flag : kSpecific) {
    if (command.count(flag) == 0) continue;
    if (std::find_if(allowed.begin(), allowed.end(),
                     [&](const char* a) { return std::string(a) == flag; }) == allowed.end()) {
      throw CLI::ValidationError(flag, fmt::format("not an option of the {} workload", kind));
    }
  }
}

void prepare_output(const MakeOptions& o) {
  std::error_code ec;
  if (!fs::exists(o.out, ec) || (fs::is_directory(o.out, ec) && fs::is_empty(o.out, ec))) return;
  if (!o.force) {
    fail(ErrorCode::kInvalidArgument,
         "{}: expected a new or empty folder, found existing content (use --force to replace a "
         "dataset made by chute)",
         o.out);
  }
  if (!synth::has_manifest(o.out)) {
    fail(ErrorCode::kInvalidArgument,
         "{}: --force replaces only folders made by chute make-dataset (with {}), found none",
         o.out, synth::kManifestName);
  }
  synth::remove_dataset(o.out);
}

void run(const CLI::App& command, MakeOptions& o) {
  ProgressReporter reporter("make-dataset " + o.kind, !o.quiet);
  o.common.progress = [&reporter](int64_t done, int64_t total) { reporter.update(done, total); };
  synth::DatasetSummary summary;
  if (o.kind == "packed") {
    reject_foreign(command, o.kind,
                   {"--samples", "--lat", "--lon", "--input-channels", "--target-channels",
                    "--chunk-channels"});
    synth::PackedOptions p;
    static_cast<synth::CommonOptions&>(p) = o.common;
    take(o.samples, p.samples);
    take(o.lat, p.lat);
    take(o.lon, p.lon);
    take(o.input_channels, p.input_channels);
    take(o.target_channels, p.target_channels);
    take(o.chunk_channels, p.chunk_channels);
    synth::check_options(o.out, p);  // before --force deletes anything
    prepare_output(o);
    summary = synth::make_packed(o.out, p);
  } else if (o.kind == "variables" && o.xarray) {
    // The store as users have it: xarray writes it (CF encodings, datetime coordinates), so
    // the Python package does the writing; the flags map onto chute.weather_store's.
    std::string line = bench::shell_quote(bench::find_python()) +
                       " -c 'import sys; from chute.weather_store import main; sys.exit(main())' " +
                       bench::shell_quote(o.out) + " --format " +
                       std::to_string(o.common.zarr_format) + " --seed " +
                       std::to_string(o.common.seed);
    if (o.times) line += " --times " + std::to_string(*o.times);
    if (o.levels) line += " --levels " + std::to_string(*o.levels);
    if (o.lat) line += " --lat " + std::to_string(*o.lat);
    if (o.lon) line += " --lon " + std::to_string(*o.lon);
    prepare_output(o);
    const int status = std::system(line.c_str());
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fail(ErrorCode::kIoError, "make-dataset --xarray: the Python writer failed ({})", line);
    }
    return;
  } else if (o.kind == "variables") {
    reject_foreign(command, o.kind, {"--times", "--levels", "--lat", "--lon"});
    synth::VariablesOptions v;
    static_cast<synth::CommonOptions&>(v) = o.common;
    take(o.times, v.times);
    take(o.levels, v.levels);
    take(o.lat, v.lat);
    take(o.lon, v.lon);
    synth::check_options(o.out, v);
    prepare_output(o);
    summary = synth::make_variables(o.out, v);
  } else {
    reject_foreign(command, o.kind,
                   {"--size", "--chunk", "--blosc-block", "--inner-chunk", "--input-channels",
                    "--target-channels", "--npy", "--no-hdf5"});
    synth::VolumeOptions v;
    static_cast<synth::CommonOptions&>(v) = o.common;
    take(o.size, v.size);
    take(o.chunk, v.chunk);
    if (o.chunk) v.hdf5_chunk = *o.chunk;  // volume.h5 is chunked only when asked
    take(o.blosc_block, v.blosc_block);
    take(o.inner_chunk, v.inner_chunk);
    v.hdf5 = !o.no_hdf5;
    take(o.input_channels, v.input_channels);
    take(o.target_channels, v.target_channels);
    v.npy = o.npy;
    synth::check_options(o.out, v);
    prepare_output(o);
    summary = synth::make_volume(o.out, v);
  }
  reporter.finish();
  double ratio = summary.stored_bytes ? double(summary.logical_bytes) / summary.stored_bytes : 0;
  double rate = summary.seconds > 0 ? summary.logical_bytes / summary.seconds : 0;
  std::cout << fmt::format(
      "wrote {} dataset to {}: {} arrays, {} chunks, {} logical, {} stored (ratio {:.2f}:1) in "
      "{:.1f} s ({}/s)\n",
      o.kind, o.out, summary.manifest.arrays.size(), summary.chunks,
      human_bytes(summary.logical_bytes), human_bytes(summary.stored_bytes), ratio, summary.seconds,
      human_bytes(rate));
}

}  // namespace

void register_make_dataset(CLI::App& app) {
  auto o = std::make_shared<MakeOptions>();
  auto* cmd = app.add_subcommand(
      "make-dataset",
      "Write a synthetic dataset of a reference workload (packed, variables, volume)");
  cmd->add_option("KIND", o->kind, "packed | variables | volume")
      ->required()
      ->check(CLI::IsMember({"packed", "variables", "volume"}));
  cmd->add_option("OUT", o->out, "Output folder (new or empty)")->required();

  cmd->add_option("--format", o->common.zarr_format, "Zarr format")
      ->check(CLI::IsMember({2, 3}))
      ->capture_default_str();
  cmd->add_option("--codec", o->common.codec,
                  "Compression: blosc-lz4 (lz4, clevel 5, byte shuffle), blosc-zstd, zstd, gzip, "
                  "none")
      ->check(CLI::IsMember(synth::codec_preset_names()))
      ->capture_default_str();
  cmd->add_option("--seed", o->common.seed, "Seed of the values")->capture_default_str();
  cmd->add_option("--threads", o->common.threads, "Worker threads (0: all cores)")
      ->capture_default_str();
  cmd->add_option("--noise", o->common.noise,
                  "Noise amplitude relative to the smooth part (sets the compression ratio)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--force", o->force, "Replace OUT if it holds a dataset made by chute");
  cmd->add_flag("--quiet,-q", o->quiet, "No progress on stderr");

  auto group = [&](const char* name) { return cmd->add_option_group(name); };
  auto* packed = group("packed: samples sharing axis 0");
  packed->add_option("--samples", o->samples, "Samples [96: 1.50 GB in all]");
  packed->add_option("--input-channels", o->input_channels,
                     "Channels of inputs (packed) / input (volume) [40 / 4]");
  packed->add_option("--target-channels", o->target_channels,
                     "Channels of targets (packed) / target (volume) [20 / 5]");
  packed->add_option("--chunk-channels", o->chunk_channels,
                     "Channels per chunk; 0 = whole sample [5: chunks of 1.30 MB]");
  auto* grid = group("packed and variables");
  grid->add_option("--lat", o->lat, "Latitudes [181 packed, 121 variables]");
  grid->add_option("--lon", o->lon, "Longitudes [360 packed, 240 variables]");
  auto* variables = group("variables: a weather store");
  variables->add_option("--times", o->times, "Time steps [128: 804 MB in all]");
  variables->add_option("--levels", o->levels, "Pressure levels [13]");
  auto* volume = group("volume: 3-D volumes for crops");
  volume->add_option("--size", o->size, "Edge N of the N³ volumes [256: 604 MB in all]");
  volume->add_option("--chunk", o->chunk,
                     "Chunk edge, chunks (1, c, c, c) [64]; given, volume.h5 is chunked too "
                     "(with --codec), else contiguous");
  volume->add_option("--blosc-block", o->blosc_block,
                     "blosc block size in bytes of the Zarr arrays [0: blosc's choice]; c-blosc "
                     "1.x multiplies it by the element size when it splits blocks by byte "
                     "(lz4 + shuffle)");
  volume->add_option("--inner-chunk", o->inner_chunk,
                     "With --format 3: each (1, c, c, c) chunk is a shard of inner chunks "
                     "(1, i, i, i), each compressed alone, so crops decode less [0: no shards]");
  volume->add_flag("--no-hdf5", o->no_hdf5, "Do not write volume.h5 (the Zarr form only)");
  volume->add_flag("--npy", o->npy,
                   "Also write channels-last input.npy (N, N, N, 4) and target.npy (N, N, N, 5)");
  variables->add_flag("--xarray", o->xarray,
                      "Write with xarray itself (ERA5 names, int16-packed temperature, fill "
                      "values, datetime coordinates, statics); needs Python with xarray");

  cmd->callback([cmd, o] { run(*cmd, *o); });
}

}  // namespace chute::cli
