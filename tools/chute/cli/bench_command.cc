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
  // The flags, help and checks of bench::BenchOptions::fields() (and the volume and windows
  // tables): declared there once.
  using B = bench::BenchOptions;
  add_table_option<B>(*bench, "batch_size", o.batch_size);
  add_table_option<B>(*bench, "threads", o.threads);
  add_table_option<B>(*bench, "prefetch", o.prefetch);
  add_table_option<B>(*bench, "io_concurrency", o.io_concurrency);
  add_table_flag<B>(*bench, "read_ahead", o.read_ahead);
  add_table_flag<B>(*bench, "shuffle", o.shuffle);
  add_table_option<B>(*bench, "seed", o.seed)
      ->check(CLI::NonNegativeNumber);  // "-1" would wrap around to 2^64 - 1
  add_table_flag<B>(*bench, "drop_last", o.drop_last);
  add_table_option<B>(*bench, "rank", o.rank);
  add_table_option<B>(*bench, "world_size", o.world_size);
  add_table_option<B>(*bench, "mode", flags->modes);
  add_table_option<B>(*bench, "step_ms", o.step_ms);
  add_table_option<B>(*bench, "batches", o.batches);
  add_table_option<B>(*bench, "warmup", o.warmup);
  add_table_option<B>(*bench, "trials", o.trials);
  add_table_option<B>(*bench, "sweep", o.sweep);
  add_table_option<B>(*bench, "compare", flags->compare);
  add_table_option<B>(*bench, "model", o.model);
  using V = bench::VolumeSettings;
  add_table_option<V>(*bench, "crop_size", o.volume.crop_size);
  add_table_option<V>(*bench, "transforms", o.volume.transforms);
  add_table_option<V>(*bench, "volume_form", o.volume.form);
  add_table_option<V>(*bench, "crops_per_epoch", o.volume.crops_per_epoch);
  add_table_option<B>(*bench, "peer_seconds", o.peer_seconds);
  add_table_option<B>(*bench, "json", o.json_path);
  add_table_option<B>(*bench, "out", o.out_dir);
  add_table_flag<B>(*bench, "roofline", o.roofline);
  bench->add_flag("-q,--quiet", flags->quiet, "no progress lines on stderr");
  add_table_option<B>(*bench, "page_cache", o.page_cache);
  add_cache_options(*bench, flags->cache);
  using W = bench::WindowsFlags;
  W& w = o.windows;
  const char* windows_group = "Weather windows: make-dataset variables folders or --windows STORE";
  add_table_flag<W>(*bench, "windows", w.enabled)->group(windows_group);
  add_table_option<W>(*bench, "variables", w.variables)->group(windows_group);
  add_table_option<W>(*bench, "target_variables", w.target_variables)->group(windows_group);
  add_table_option<W>(*bench, "forcings", w.forcings)->group(windows_group);
  add_table_option<W>(*bench, "computed_forcings", w.computed_forcings)->group(windows_group);
  add_table_option<W>(*bench, "statics", w.statics)->group(windows_group);
  add_table_option<W>(*bench, "levels", w.levels)->group(windows_group);
  add_table_option<W>(*bench, "input_steps", w.input_offsets)->group(windows_group);
  add_table_option<W>(*bench, "target_steps", w.target_offsets)->group(windows_group);
  add_table_option<W>(*bench, "statistics", w.statistics)->group(windows_group);
  add_table_flag<W>(*bench, "normalise", w.normalise)->group(windows_group);
  add_table_flag<W>(*bench, "channels_last", w.channels_last, "--channels-first")
      ->group(windows_group);
  add_table_flag<W>(*bench, "direct_placement", w.direct_placement)->group(windows_group);
  add_table_option<W>(*bench, "dtype", w.dtype)->group(windows_group);

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
