// The option tables of `chute bench` (BenchOptions, VolumeSettings, WindowsFlags) and their
// checks. Options the loader or the windows also have take those tables' help (and, for the
// loader, their checks), so each is described once.

#include <fmt/format.h>

#include <limits>

#include "chute/bench/bench_dataset.h"
#include "chute/bench/bench_session.h"
#include "chute/bench/option_flag.h"
#include "chute/dataset/window_dataset.h"
#include "chute/pipeline/loader.h"
#include "chute/util/error.h"
#include "chute/util/thread_pool.h"

namespace chute::bench {
namespace {

constexpr long double kIntMax = std::numeric_limits<int>::max();

template <typename From>
const OptionField<From>& shared_field(std::string_view name) {
  const OptionField<From>* field = find_field<From>(name);
  if (field == nullptr) fail(ErrorCode::kInternal, "no option '{}' to share", name);
  return *field;
}

/// A loader option as the bench takes it: the loader's help and check; `none`: what the
/// bench's default (0) means, if anything.
template <typename M>
OptionField<BenchOptions> loader_option(std::string_view name, M member,
                                        std::string_view none = {}) {
  const OptionField<LoaderOptions>& field = shared_field<LoaderOptions>(name);
  OptionCheck check = field.check;
  check.none = none;
  check.default_none = false;
  return {name, member, field.help, std::move(check)};
}

/// A windows option under a bench name: the windows' help, the bench's own check.
template <typename M>
OptionField<WindowsFlags> window_option(std::string_view name, std::string_view windows_name,
                                        M member, OptionCheck check = {}) {
  return {name, member, shared_field<WindowOptions>(windows_name).help, std::move(check)};
}

std::string join_modes(const BenchOptions& o) {
  std::string text;
  for (Mode m : o.modes) text += (text.empty() ? "" : ",") + std::string(mode_name(m));
  return text;
}

template <typename S>
void check_flags(const S& options) {
  for (const OptionField<S>& field : S::fields()) {
    check_field(fmt::format("bench {}", option_flag(field.name)), field, options);
  }
}

}  // namespace

const std::vector<OptionField<BenchOptions>>& BenchOptions::fields() {
  using O = BenchOptions;
  static const std::vector<OptionField<O>> table = [] {
    std::vector<OptionField<O>> t = {
        loader_option("batch_size", &O::batch_size),
        loader_option("threads", &O::threads, "one per usable core"),
        loader_option("prefetch", &O::prefetch),
        loader_option("io_concurrency", &O::io_concurrency,
                      "the store's preference, 32 for local files"),
        loader_option("read_ahead", &O::read_ahead),
        loader_option("shuffle", &O::shuffle),
        loader_option("seed", &O::seed),
        loader_option("drop_last", &O::drop_last),
        loader_option("rank", &O::rank),
        loader_option("world_size", &O::world_size),
        {"mode",
         OptionText<O>{join_modes,
                       [](O& o, const std::string& text) { o.modes = parse_modes(text); }},
         "io, compute, full or all (comma-separated)"},
        {"step_ms",
         &O::step_ms,
         "simulated training step in ms",
         {.low = 0, .high = 1e9L, .none = "1.1 x the io mode's batch time"}},
        {"model",
         &O::model,
         "time a real small model on one batch and use its step time in the compute and full "
         "modes: torch (a per-pixel MLP, forward + backward + SGD)",
         {.choices = {"torch"}, .none = "the simulated step"}},
        {"batches", &O::batches, "batches per trial", {.low = 1, .high = kIntMax}},
        {"warmup", &O::warmup, "warm-up batches before the trials", {.low = 0, .high = kIntMax}},
        {"trials", &O::trials, "trials per mode", {.low = 1, .high = kIntMax}},
        {"sweep", &O::sweep,
         "settings to sweep, e.g. threads=1,2,4 prefetch=1,2 batch=8,16 io_concurrency=1,8,32"},
        {"compare", &O::peers,
         "peers reading the same batches: zarr,dask,tensorstore,torch (packed), torch,dali,h5py "
         "(volume), xarray,h5py (windows), anemoi,tensorstore (--anemoi), or all"},
        {"peer_seconds", &O::peer_seconds, "time limit per peer (s)", {.low = 1e-3L, .high = 1e9L}},
        {"roofline", &O::roofline, "measure the roofline on the same chunks"},
        {"json", &O::json_path, "write the results as JSON to this file", {.path = true}},
        {"out", &O::out_dir, "write PNG plots (and results.json) to this folder", {.path = true}},
        {"page_cache",
         &O::page_cache,
         "warm (as found) or cold: evict the dataset's files from the page cache before each "
         "trial, roofline read pass and peer, so storage is measured",
         {.choices = {"warm", "cold"}}},
    };
    // The thread count the reader pool can start on this machine.
    for (auto& field : t) {
      if (field.name == "threads")
        field.check.high = static_cast<long double>(max_reader_threads());
    }
    return t;
  }();
  return table;
}

const std::vector<OptionField<VolumeSettings>>& VolumeSettings::fields() {
  using O = VolumeSettings;
  static const std::vector<OptionField<O>> table = {
      {"crop_size",
       &O::crop_size,
       "volume datasets: crop edge",
       {.low = 1, .high = static_cast<long double>(int64_t{1} << 31)}},
      {"transforms",
       &O::transforms,
       "volume datasets: rotations, symmetries or none",
       {.choices = {"rotations", "symmetries", "none"}}},
      {"volume_form",
       &O::form,
       "volume datasets: auto (volume.h5 when it opens, else Zarr), zarr, hdf5, npy",
       {.choices = {"auto", "zarr", "hdf5", "npy"}}},
      {"crops_per_epoch",
       &O::crops_per_epoch,
       "volume datasets: crops per epoch",
       {.low = 1, .high = static_cast<long double>(std::numeric_limits<int64_t>::max())}},
  };
  return table;
}

const std::vector<OptionField<WindowsFlags>>& WindowsFlags::fields() {
  using O = WindowsFlags;
  static const std::vector<OptionField<O>> table = {
      {"windows", &O::enabled, "DATASET is a weather store (as xarray writes it)"},
      window_option("variables", "variables", &O::variables),
      window_option("target_variables", "target_variables", &O::target_variables,
                    {.none = "the input variables"}),
      window_option("forcings", "forcings", &O::forcings),
      window_option("computed_forcings", "computed_forcings", &O::computed_forcings),
      window_option("statics", "statics", &O::statics),
      window_option("levels", "levels", &O::levels, {.none = "every level"}),
      window_option("input_steps", "input_offsets", &O::input_offsets),
      window_option("target_steps", "target_offsets", &O::target_offsets),
      window_option("statistics", "statistics", &O::statistics,
                    {.none = "no statistics group", .path = true}),
      {"normalise", &O::normalise, "normalise with a make-dataset folder's mean/std"},
      window_option("channels_last", "channels_last", &O::channels_last),
      {"direct_placement", &O::direct_placement,
       "channels-last float32: place chunks straight into the output (the former path, for "
       "comparison)"},
      window_option("dtype", "dtype", &O::dtype, {.choices = {"float32", "float16", "bfloat16"}}),
  };
  return table;
}

void check_bench_options(const BenchOptions& o) {
  check_flags(o);
  check_flags(o.volume);
  check_flags(o.windows);
  if (o.rank >= o.world_size) {
    fail(ErrorCode::kInvalidArgument,
         "bench --rank: rank = {} is outside [0, {}] (--world-size {})", o.rank, o.world_size - 1,
         o.world_size);
  }
}

}  // namespace chute::bench
