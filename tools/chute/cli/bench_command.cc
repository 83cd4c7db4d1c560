// `chute bench DATASET`: measures the loader on a dataset (io / compute / full modes, roofline,
// peers, sweeps) and prints the tables; --json and --out keep the record and the plots. The work
// is in chute/bench/bench_session.h; this file only maps flags onto BenchOptions.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "chute/bench/bench_dataset.h"
#include "chute/bench/bench_session.h"
#include "chute/bench/peers.h"
#include "chute/bench/python_tools.h"
#include "chute/bench/report.h"
#include "chute/dist/bench_on_ranks.h"
#include "chute/pipeline/loader.h"
#include "chute/store/caching_store.h"
#include "chute/util/error.h"
#include "commands.h"
#include "table_flags.h"

namespace chute::cli {

namespace {

struct BenchFlags {
  bench::BenchOptions options;
  std::vector<std::string> arrays;
  std::vector<std::string> datasets;  // DATASET: one, or the members of a dataset of many files
  std::string modes = "all";
  std::string compare;
  bool quiet = false;
  CacheOptions cache;
  std::string device;  // --device: the GPU run (python/chute/bench/gpu.py)
};

// `--device cuda:N`: the run on the accelerator is measured by the Python helper with PyTorch
// (the host-to-device roofline, delivered batches, a real GPU step, the DataLoader peer with
// pin_memory): the C++ bench has no GPU kernels of its own.
void run_device_bench(const BenchFlags& flags) {
  const bench::BenchOptions& o = flags.options;
  std::vector<std::string> arguments = {o.dataset, "--device", flags.device};
  const auto add = [&](const char* flag, const std::string& value) {
    arguments.push_back(flag);
    arguments.push_back(value);
  };
  if (o.threads > 0) add("--threads", std::to_string(o.threads));
  add("--batch-size", std::to_string(o.batch_size));
  add("--prefetch", std::to_string(o.prefetch));
  add("--batches", std::to_string(o.batches));
  add("--warmup", std::to_string(o.warmup));
  add("--trials", std::to_string(o.trials));
  add("--crop-size", std::to_string(o.volume.crop_size));
  add("--crops-per-epoch", std::to_string(o.volume.crops_per_epoch));
  if (o.step_ms > 0) add("--step-ms", fmt::format("{}", o.step_ms));
  std::string modes;
  for (const char* mode : {"io", "full"}) {
    if (flags.modes == "all" || flags.modes.find(mode) != std::string::npos) {
      modes += (modes.empty() ? "" : ",") + std::string(mode);
    }
  }
  if (flags.compare.find("torch") != std::string::npos)
    modes += (modes.empty() ? "" : ",") + std::string("peer");
  add("--modes", modes.empty() ? "io" : modes);
  if (!o.json_path.empty()) add("--json", o.json_path);
  const bench::ToolResult result = bench::run_python_tool("bench.gpu", arguments);
  for (const std::string& line : result.stdout_lines) std::cout << line << "\n";
  std::cout << std::flush;
  if (result.exit_code != 0) {
    fail(ErrorCode::kIoError, "chute bench --device {}: the GPU helper exited with {}: {}",
         flags.device, result.exit_code, bench::last_line(result.stderr_text));
  }
}

}  // namespace

void register_bench(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  bench::BenchOptions& o = flags->options;
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Measure the loader on a dataset: io, compute and full modes, the machine's roofline, "
      "peers side by side, sweeps");
  bench->add_option("DATASET", flags->datasets,
                    "a folder made by `chute make-dataset` (with chute.json), a Zarr array or a "
                    "group whose arrays share axis 0; weather windows: a store, a glob or several "
                    "member files joined along time");
  bench->add_option("--array", flags->arrays,
                    "NAME=PATH of an array of your own (repeat; arrays share the sample axis 0)");
  add_table_option<LoaderOptions>(*bench, "batch_size", o.batch_size);
  add_table_option<LoaderOptions>(*bench, "threads", o.threads, "0: one per usable core");
  add_table_option<LoaderOptions>(*bench, "prefetch", o.prefetch);
  add_table_option<LoaderOptions>(*bench, "io_concurrency", o.io_concurrency,
                                  "0: the store's preference, 32 for files");
  add_table_flag<LoaderOptions>(*bench, "read_ahead", o.read_ahead);
  add_table_flag<LoaderOptions>(*bench, "shuffle", o.shuffle);
  add_table_option<LoaderOptions>(*bench, "seed", o.seed)
      ->check(CLI::NonNegativeNumber);  // "-1" would wrap around to 2^64 - 1
  add_table_flag<LoaderOptions>(*bench, "drop_last", o.drop_last);
  add_table_option<LoaderOptions>(*bench, "rank", o.rank);
  add_table_option<LoaderOptions>(*bench, "world_size", o.world_size);
  bench->add_option("--mode", flags->modes, "io, compute, full or all (comma-separated)")
      ->capture_default_str();
  bench->add_option("--step-ms", o.step_ms,
                    "simulated training step in ms (default: 1.1 × the io mode's batch time)");
  bench->add_option("--batches", o.batches, "batches per trial")->capture_default_str();
  bench->add_option("--warmup", o.warmup, "warm-up batches before the trials")
      ->capture_default_str();
  bench->add_option("--trials", o.trials, "trials per mode")->capture_default_str();
  bench->add_option(
      "--sweep", o.sweep,
      "settings to sweep, e.g. threads=1,2,4 prefetch=1,2 batch=8,16 io_concurrency=1,8,32");
  bench->add_option(
      "--compare", flags->compare,
      "peers reading the same batches: zarr,dask,tensorstore,torch (packed), torch,dali,h5py "
      "(volume), xarray,h5py (windows), anemoi,tensorstore (--anemoi), or all");
  bench
      ->add_option("--model", o.model,
                   "time a real small model on one batch and use its step time in the compute "
                   "and full modes: torch (a per-pixel MLP, forward + backward + SGD)")
      ->check(CLI::IsMember({"torch"}));
  bench->add_option("--crop-size", o.volume.crop_size, "volume datasets: crop edge")
      ->capture_default_str();
  bench
      ->add_option("--transforms", o.volume.transforms,
                   "volume datasets: rotations, symmetries or none")
      ->capture_default_str();
  bench
      ->add_option("--volume-form", o.volume.form,
                   "volume datasets: auto (volume.h5 when it opens, else Zarr), zarr, hdf5, npy")
      ->capture_default_str();
  bench
      ->add_option("--crops-per-epoch", o.volume.crops_per_epoch,
                   "volume datasets: crops per epoch")
      ->capture_default_str();
  bench->add_option("--peer-seconds", o.peer_seconds, "time limit per peer (s)")
      ->capture_default_str();
  bench->add_option("--json", o.json_path, "write the results as JSON to this file");
  bench->add_option("--out", o.out_dir, "write PNG plots (and results.json) to this folder");
  bench->add_flag("--roofline,!--no-roofline", o.roofline,
                  "measure the roofline on the same chunks (default on)");
  bench->add_flag("-q,--quiet", flags->quiet, "no progress lines on stderr");
  bench
      ->add_option("--page-cache", o.page_cache,
                   "warm (as found) or cold: evict the dataset's files from the page cache "
                   "before each trial, roofline read pass and peer, so storage is measured")
      ->check(CLI::IsMember({"warm", "cold"}))
      ->capture_default_str();
  add_cache_options(*bench, flags->cache);
  bench::WindowsFlags& w = o.windows;
  const char* windows_group = "Weather windows: make-dataset variables folders or --windows STORE";
  bench->add_flag("--windows", w.enabled, "DATASET is a weather store (as xarray writes it)")
      ->group(windows_group);
  bench->add_option("--variables", w.variables, "input variables")->group(windows_group);
  bench->add_option("--target-variables", w.target_variables, "target variables (default: inputs)")
      ->group(windows_group);
  bench->add_option("--forcings", w.forcings, "variables read at the target steps")
      ->group(windows_group);
  bench
      ->add_option("--computed-forcings", w.computed_forcings,
                   "forcings computed at the target steps from the store's dates and grid: "
                   "cos_local_time, sin_local_time, cos_day_of_year, sin_day_of_year, "
                   "toa_radiation")
      ->group(windows_group);
  bench->add_option("--statics", w.statics, "(lat, lon) fields")->group(windows_group);
  bench->add_option("--levels", w.levels, "level values (default: all)")->group(windows_group);
  bench->add_option("--input-steps", w.input_offsets, "input offsets in store steps")
      ->capture_default_str()
      ->group(windows_group);
  bench->add_option("--target-steps", w.target_offsets, "target offsets in store steps")
      ->capture_default_str()
      ->group(windows_group);
  bench->add_option("--statistics", w.statistics, "a `chute stats` group: normalise with it")
      ->group(windows_group);
  bench->add_flag("--normalise", w.normalise, "normalise with a make-dataset folder's mean/std")
      ->group(windows_group);
  bench
      ->add_flag("--channels-last,!--channels-first", w.channels_last,
                 "output layout (default channels-last)")
      ->group(windows_group);
  bench
      ->add_flag("--direct-placement", w.direct_placement,
                 "channels-last float32: place chunks straight into the output (the former "
                 "path, for comparison)")
      ->group(windows_group);
  bench->add_option("--dtype", w.dtype, "output dtype: float32, float16, bfloat16")
      ->capture_default_str()
      ->group(windows_group);
  bench::AnemoiFlags& a = o.anemoi;
  const char* anemoi_group =
      "anemoi datasets (DATASET --anemoi; --variables selects, --dtype, --channels-first: "
      "variables before cells)";
  bench->add_flag("--anemoi", a.enabled, "DATASET is an anemoi dataset (anemoi-datasets, ufs2arco)")
      ->group(anemoi_group);
  bench->add_option("--multistep-input", a.multistep_input, "input dates up to the reference date")
      ->capture_default_str()
      ->group(anemoi_group);
  bench->add_option("--rollout", a.rollout, "target dates after the reference date")
      ->capture_default_str()
      ->group(anemoi_group);
  bench->add_option("--timeincrement", a.timeincrement, "dates between steps")
      ->capture_default_str()
      ->group(anemoi_group);
  bench
      ->add_option("--anemoi-normalise", a.normalise, "mean-std (the dataset's statistics) or none")
      ->capture_default_str()
      ->group(anemoi_group);
  const char* many_group = "Many files along time (windows over a glob or a list of members)";
  bench
      ->add_option("--file-pattern", w.file_pattern,
                   "members without a time coordinate: the first time from the file name, e.g. "
                   "{year}.h5 (with --file-step)")
      ->group(many_group);
  bench->add_option("--file-step", w.file_step, "the step between a member's times, e.g. 6h")
      ->group(many_group);
  bench
      ->add_option("--channels", w.channels,
                   "names of the channels of a stacked array (FourCastNet's fields[T, C, H, W])")
      ->group(many_group);
  bench->add_option("--channel-array", w.channel_array, "the stacked array --channels names")
      ->capture_default_str()
      ->group(many_group);
  bench->add_flag("--allow-gaps", w.allow_gaps, "members may leave gaps (windows never cross one)")
      ->group(many_group);

  bench->add_option("--device", flags->device,
                    "cuda:N: measure delivery to that GPU with PyTorch (host-to-device roofline, "
                    "delivered batches, a GPU step, --compare torch: DataLoader pin_memory)");
  bench->callback([flags, bench] {
    bench::BenchOptions& options = flags->options;
    if (!flags->datasets.empty()) options.dataset = flags->datasets.front();
    if (flags->datasets.size() > 1) options.windows.members = flags->datasets;
    if (!flags->device.empty()) {
      run_device_bench(*flags);
      return;
    }
    set_default_cache_options(flags->cache);
    for (const std::string& argument : flags->arrays) {
      options.arrays.push_back(bench::parse_array_argument(argument));
    }
    options.modes = bench::parse_modes(flags->modes);
    if (!flags->compare.empty()) options.peers = bench::parse_peer_list(flags->compare);
    options.command = "chute bench";
    for (const CLI::Option* option : bench->get_options()) {
      if (option->count() == 0 || option->get_name() == "--help") continue;
      options.command +=
          " " +
          (option->get_lnames().empty() ? std::string() : "--" + option->get_lnames()[0] + " ");
      for (const std::string& value : option->results()) options.command += value + " ";
      while (options.command.back() == ' ') options.command.pop_back();
    }
    const bool quiet = flags->quiet;
    // MPI: under mpirun/srun every rank runs the bench and rank 0 prints the per-rank, aggregate
    // and --sweep ranks=... tables (chute/dist/bench_on_ranks.h); one rank: run_bench unchanged.
    std::unique_ptr<dist::Comm> comm = dist::make_comm();
    const nlohmann::json report =
        dist::run_bench_on_ranks(*comm, options, [quiet](const std::string& line) {
          if (!quiet) std::cerr << "chute bench: " << line << std::endl;
        });
    if (comm->rank() == 0) std::cout << dist::render_bench_on_ranks(report) << std::flush;
  });
}

}  // namespace chute::cli
