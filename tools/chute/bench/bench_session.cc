#include "chute/bench/bench_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "chute/array/chunk_source.h"
#include "chute/bench/bench_dataset.h"
#include "chute/bench/crop_roofline.h"
#include "chute/bench/loader_source.h"
#include "chute/bench/machine.h"
#include "chute/bench/mapped_roofline.h"
#include "chute/bench/model_step.h"
#include "chute/bench/peers.h"
#include "chute/bench/python_tools.h"
#include "chute/bench/report.h"
#include "chute/bench/roofline.h"
#include "chute/bench/window_roofline.h"
#include "chute/dataset/packed_dataset.h"
#include "chute/dataset/window_dataset.h"
#include "chute/store/single_file_store.h"
#include "chute/util/error.h"
#include "chute/util/thread_pool.h"

namespace chute::bench {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// The files the dataset's arrays read through a mapping (.npy, contiguous HDF5).
std::vector<const SingleFileStore*> mapped_files(const BenchDataset& data) {
  std::vector<std::pair<std::string, ArrayPtr>> arrays;
  if (data.crops) arrays = data.crops->arrays();
  if (const auto* packed = dynamic_cast<const PackedDataset*>(data.dataset.get())) {
    arrays = packed->arrays();
  }
  std::vector<const SingleFileStore*> files;
  for (const auto& [name, array] : arrays) {
    if (const MappedElements* mapped = array->source().mapped()) files.push_back(mapped->file);
  }
  return files;
}

bool has(const std::vector<Mode>& modes, Mode mode) {
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

std::string rate_line(const ModeResult& r) {
  return fmt::format("{:.1f} ± {:.1f} samples/s, {:.3f} GB/s, {:.4f} s/batch", r.samples_per_s.mean,
                     r.samples_per_s.std, r.gb_per_s.mean, r.s_per_batch.mean);
}

/// Runs the plotting helper; returns the PNG paths it wrote (notes go into the report).
void make_plots(json& report, const std::string& json_path, const std::string& out_dir,
                const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  ToolResult tool = run_python_tool("bench.plots", {json_path, "--out", out_dir});
  json plots = json::array();
  for (const std::string& line : tool.stdout_lines) {
    if (line.size() > 4 && line.ends_with(".png")) plots.push_back(line);
  }
  report["plots"] = plots;
  if (tool.exit_code != 0 || plots.empty()) {
    const std::string reason = last_line(tool.stderr_text);
    std::string note =
        "plots skipped: " + (reason.empty() ? std::string("no plot written") : reason);
    for (const std::string& line : tool.stdout_lines) {
      if (line.rfind("skipped:", 0) == 0) note = "plots " + line;
    }
    report["notes"].push_back(note);
    log(note);
  } else {
    log(fmt::format("plots: {} PNG files in {}", plots.size(), out_dir));
  }
}

/// The roofline's options for `dataset`: staged windows place with their own placement (CF
/// decoding, normalisation, cast, interleave; window_roofline.h) on the first batch the loader
/// read; other datasets keep the plain copy.
RooflineOptions window_placement_probe(const Dataset& dataset,
                                       const std::vector<std::vector<int64_t>>& batches) {
  RooflineOptions probe;
  const auto* windows = dynamic_cast<const WindowDataset*>(&dataset);
  const auto batch = std::find_if(batches.begin(), batches.end(),
                                  [](const std::vector<int64_t>& b) { return !b.empty(); });
  if (const auto* anemoi = dynamic_cast<const AnemoiDataset*>(&dataset);
      anemoi != nullptr && batch != batches.end()) {
    probe.place_step = anemoi->options().variables_first
                           ? "anemoi placement: select, normalise, cast, from staged dates"
                           : "anemoi placement: select, normalise, transpose to variables last, "
                             "cast, from staged dates";
    probe.place = [anemoi, samples = *batch](ThreadPool& pool, int repeats) {
      return measure_anemoi_finish_gbps(*anemoi, samples, pool, repeats);
    };
    return probe;
  }
  if (windows == nullptr || !windows->staged() || batch == batches.end()) return probe;
  probe.place_step = windows->options().channels_last
                         ? "window placement: CF decode, normalise, cast, interleave, from warm "
                           "staged planes"
                         : "window placement: CF decode, normalise, cast, from warm staged planes";
  probe.place = [windows, samples = *batch](ThreadPool& pool, int repeats) {
    return measure_window_placement(*windows, samples, pool, repeats).gbps;
  };
  return probe;
}

/// The roofline of windows copied out of file mappings (mapped_roofline.h): the copy of the same
/// boxes, then the window placement when the windows are staged (`placement.place`).
RooflineResult measure_mapped_roofline(MappedCopies& copies, const RooflineOptions& placement,
                                       int threads, const std::function<void()>& evict) {
  ThreadPool pool(static_cast<size_t>(std::max(1, threads)));
  const MappedCopy copy = measure_mapped_copy(copies, pool, /*repeats=*/3, evict);
  RooflineResult r;
  r.mapped = true;
  r.threads = r.reads_in_flight = r.decode_parallelism = std::max(1, threads);
  r.chunks = r.chunks_total = copy.boxes;
  r.encoded_bytes = r.decoded_bytes = copy.bytes;
  r.read_gbps = r.read_stored_gbps = r.decode_limit_gbps = copy.gbps;
  r.read_source = evict ? "storage through the mappings (cold: evicted before each pass)"
                        : "page cache (memory bandwidth)";
  if (placement.place) {
    r.place_step = placement.place_step;
    r.place_gbps = placement.place(pool, /*repeats=*/3);
  }
  r.combined_gbps = placement.place ? combined_limit({r.read_gbps, r.place_gbps}) : r.read_gbps;
  r.bounding_step = bounding_step(r);
  return r;
}

}  // namespace

std::vector<Mode> parse_modes(const std::string& text) {
  std::vector<Mode> modes;
  std::stringstream stream(text);
  std::string name;
  while (std::getline(stream, name, ',')) {
    if (name == "all") {
      for (Mode m : {Mode::kIo, Mode::kCompute, Mode::kFull}) {
        if (!has(modes, m)) modes.push_back(m);
      }
    } else if (!name.empty()) {
      const Mode m = parse_mode(name);
      if (!has(modes, m)) modes.push_back(m);
    }
  }
  if (modes.empty()) fail(ErrorCode::kInvalidArgument, "--mode: expected io, compute, full or all");
  return modes;
}

json run_bench(const BenchOptions& o, const std::function<void(const std::string&)>& log) {
  check_bench_options(o);
  const SweepSpec sweep = parse_sweep(o.sweep);  // fail on a bad sweep before measuring
  const MachineInfo machine = describe_machine();
  const BenchDataset data = open_bench_dataset(o.dataset, o.arrays, o.volume, o.windows, o.anemoi);
  log(fmt::format("dataset: {} ({} samples), opened in {:.3f} s", data.dataset->describe(),
                  data.dataset->num_samples(), data.open_seconds));

  // 0: one per core this process may run on (its affinity mask, as Slurm and mpirun bind it).
  const int threads = o.threads > 0 ? o.threads : std::max(1, machine.usable_cores);
  LoaderOptions base;
  base.batch_size = o.batch_size;
  base.shuffle = o.shuffle;
  base.seed = o.seed;
  base.drop_last = o.drop_last;
  base.threads = static_cast<size_t>(threads);
  base.prefetch = static_cast<size_t>(o.prefetch);
  base.io_concurrency = static_cast<size_t>(o.io_concurrency);
  base.read_ahead = o.read_ahead;
  base.rank = o.rank;
  base.world_size = o.world_size;
  const LoaderSetting setting{threads, o.prefetch, o.batch_size, o.io_concurrency};
  const SourceFactory factory = loader_factory(data.dataset, base);

  json mode_names = json::array();
  for (Mode m : o.modes) mode_names.push_back(mode_name(m));
  json settings = {{"threads", threads},
                   {"prefetch", o.prefetch},
                   {"io_concurrency", o.io_concurrency},
                   {"read_ahead", o.read_ahead},
                   {"batch_size", o.batch_size},
                   {"shuffle", o.shuffle},
                   {"seed", o.seed},
                   {"drop_last", o.drop_last},
                   {"rank", o.rank},
                   {"world_size", o.world_size},
                   {"warmup", o.warmup},
                   {"trials", o.trials},
                   {"batches", o.batches},
                   {"step_ms", o.step_ms},
                   {"modes", mode_names}};
  json report = make_report(machine, data.description, settings, o.command);

  // --page-cache cold: every file of the dataset leaves the page cache before each trial.
  if (o.page_cache != "warm" && o.page_cache != "cold") {
    fail(ErrorCode::kInvalidArgument, "--page-cache: expected warm or cold, got '{}'",
         o.page_cache);
  }
  const bool cold = o.page_cache == "cold";
  std::vector<std::string> dataset_files;
  // The most of the dataset's pages left in memory right after any eviction of this run: pages
  // chute itself keeps mapped (.npy, contiguous HDF5) cannot be dropped while it runs.
  double resident_after_eviction = 0;
  const std::vector<const SingleFileStore*> mapped = mapped_files(data);
  const std::function<void()> evict = [&] {
    for (const SingleFileStore* file : mapped) file->release_mapped_pages();
    evict_page_cache(dataset_files);
    resident_after_eviction =
        std::max(resident_after_eviction, page_cache_resident_fraction(dataset_files));
  };
  if (cold) {
    std::vector<std::string> roots;
    if (!data.path.empty()) roots.push_back(data.path);
    if (data.windows.contains("members")) {  // many files: the members, not the glob
      roots = data.windows["members"].get<std::vector<std::string>>();
    }
    for (const auto& [name, path] : o.arrays) roots.push_back(path);
    dataset_files = files_under(roots);
    int64_t bytes = 0;
    std::error_code ec;
    for (const std::string& file : dataset_files) {
      bytes += static_cast<int64_t>(fs::file_size(file, ec));
    }
    evict_page_cache(dataset_files);
    const double left = page_cache_resident_fraction(dataset_files);
    report["settings"]["page_cache"] = "cold";
    report["page_cache"] = {{"mode", "cold"},
                            {"files", dataset_files.size()},
                            {"bytes", bytes},
                            {"resident_after_eviction", left}};
    log(fmt::format(
        "page cache: cold, {} files ({:.2f} GB) evicted before each trial; {:.1f}% of their pages "
        "resident right after eviction",
        dataset_files.size(), bytes / 1e9, 100 * left));
    if (left > 0.05) {
      report["notes"].push_back(
          fmt::format("--page-cache cold: {:.1f}% of the dataset's pages stayed resident after "
                      "posix_fadvise(DONTNEED) (dirty or mapped elsewhere): reads are partly warm",
                      100 * left));
    }
  } else {
    report["settings"]["page_cache"] = "warm";
  }

  RunOptions run;
  if (cold) run.before_trial = evict;
  run.warmup = o.warmup;
  run.trials = o.trials;
  run.batches = o.batches;
  run.step_ms = o.step_ms;

  // io first: its batches are the ones the roofline and the peers read, its time sets the step.
  std::vector<ChunkRef> chunks;  // the stored chunks the io batches touch
  const bool need_io = has(o.modes, Mode::kIo) || o.step_ms <= 0 || o.roofline || !o.peers.empty();
  ModeResult io;
  if (need_io) {
    run.record_indices = true;
    io = run_mode(Mode::kIo, factory, setting, run);
    run.record_indices = false;
    log("io: " + rate_line(io) + fmt::format(", first batch {:.3f} s", io.time_to_first_batch_s));
    add_mode(report, io);
    if (!has(o.modes, Mode::kIo)) {
      report["notes"].push_back("the io mode ran too: the step time, roofline and peers need it");
    }
    // Missing chunks read as the fill value at no cost: a dataset whose files are gone would
    // otherwise "measure" a fantastic rate.
    chunks = chunks_of_batches(*data.dataset, io.batch_indices);  // the roofline's too
    size_t missing = 0;
    for (const ChunkRef& ref : chunks) missing += !ref.store().size(ref.key).has_value();
    if (!chunks.empty() && missing * 2 > chunks.size()) {
      const std::string warning = fmt::format(
          "warning: {} of the {} chunks the io batches touch are missing (read as the fill "
          "value, nothing read): these rates do not measure storage; is the dataset complete?",
          missing, chunks.size());
      report["notes"].push_back(warning);
      log(warning);
    }
  }
  run.step_ms = o.step_ms > 0 ? o.step_ms : 1.1 * io.s_per_batch.mean * 1e3;
  if (!o.model.empty()) {
    const bool wants_compute = has(o.modes, Mode::kCompute) || has(o.modes, Mode::kFull);
    if (data.workload != "packed" || io.batch_indices.empty() || !wants_compute) {
      report["notes"].push_back("--model runs on packed datasets with the compute or full mode");
    } else {
      ModelStepSpec spec;
      spec.model = o.model;
      spec.arrays = data.packed_arrays;
      spec.indices = io.batch_indices.front();
      spec.threads = threads;
      log(fmt::format("model: timing a real {} model on one batch...", o.model));
      json model = measure_model_step(spec);
      if (const double step = mean_step_ms(model); step > 0) {
        run.step_ms = step;
        log(fmt::format("model: {:.1f} ms per training step ({})", step,
                        model.value("description", "")));
      } else {
        report["notes"].push_back("model not timed, the step is simulated: " +
                                  model.value("note", std::string("no result")));
      }
      report["model"] = std::move(model);
    }
  }
  report["settings"]["step_ms"] = run.step_ms;
  for (Mode m : {Mode::kCompute, Mode::kFull}) {
    if (!has(o.modes, m)) continue;
    ModeResult result = run_mode(m, factory, setting, run);
    log(fmt::format("{}: {}, accelerator utilisation {:.1f}%", mode_name(m), rate_line(result),
                    result.accelerator_utilisation * 100));
    add_mode(report, result);
  }

  // The roofline on the chunks the io batches touched (volumes: on the crops they read).
  std::optional<MappedCopies> mapped_copies;  // windows copied out of mappings: no chunks
  double decode_single_gbps = 0;
  const int64_t global_batch = int64_t{o.batch_size} * o.world_size;
  const int64_t batches_per_epoch = std::max<int64_t>(
      1, o.drop_last ? data.dataset->num_samples() / global_batch
                     : (data.dataset->num_samples() + global_batch - 1) / global_batch);
  if (o.roofline && data.crops) {
    const CropRooflineResult roofline =
        measure_crop_roofline(*data.crops, io.batch_indices, o.seed, batches_per_epoch, threads,
                              cold ? evict : std::function<void()>());
    json entry = to_json(roofline);
    entry["loader_fraction"] = roofline.combined_samples_per_s > 0
                                   ? io.samples_per_s.mean / roofline.combined_samples_per_s
                                   : 0.0;
    report["crop_roofline"] = entry;
    log(fmt::format(
        "crop roofline: read {:.0f}, decode {}, place with transforms {:.0f} samples/s -> "
        "limit {:.0f} samples/s; one loop {:.0f} samples/s; the loader reaches {:.0f}% of the "
        "limit",
        roofline.read_samples_per_s,
        roofline.decode_samples_per_s > 0 ? fmt::format("{:.0f}", roofline.decode_samples_per_s)
                                          : std::string("none (mapped, uncompressed)"),
        roofline.place_samples_per_s, roofline.combined_samples_per_s, roofline.loop_samples_per_s,
        100 * entry["loader_fraction"].get<double>()));
  } else if (o.roofline && chunks.empty()) {
    mapped_copies = plan_mapped_copies(*data.dataset, io.batch_indices);
    MappedCopies& copies = *mapped_copies;
    if (copies.boxes == 0) {
      const std::string note =
          "roofline: not measured: the batches read no chunks and copy nothing out of a mapping "
          "(chunks never written)";
      report["notes"].push_back(note);
      log(note);
    } else {
      const RooflineResult roofline =
          measure_mapped_roofline(copies, window_placement_probe(*data.dataset, io.batch_indices),
                                  threads, cold ? evict : std::function<void()>());
      set_roofline(report, roofline);
      log(fmt::format(
          "roofline: copy out of the mappings {:.2f} GB/s ({} boxes), {}limit {:.2f} "
          "GB/s, bound by {}",
          roofline.read_gbps, roofline.chunks,
          roofline.place_gbps > 0 ? fmt::format("place {:.2f} GB/s, ", roofline.place_gbps)
                                  : std::string(),
          roofline.combined_gbps, roofline.bounding_step));
    }
  } else if (o.roofline) {
    RooflineOptions probe = window_placement_probe(*data.dataset, io.batch_indices);
    probe.threads = threads;
    probe.usable_cores = machine.usable_cores;
    probe.cold = cold;
    probe.reads_in_flight = reads_in_flight(chunks, threads, o.io_concurrency);
    const RooflineResult roofline = measure_roofline(chunks, probe);
    decode_single_gbps = roofline.decode_single_gbps;
    set_roofline(report, roofline);
    log(
        fmt::format("roofline: read {:.2f} GB/s ({}, {} reads in flight), decode {:.2f} GB/s × {}, "
                    "place {:.2f} GB/s, limit "
                    "{:.2f} GB/s, bound by {}",
                    roofline.read_gbps, roofline.read_source, roofline.reads_in_flight,
                    roofline.decode_single_gbps, roofline.decode_parallelism, roofline.place_gbps,
                    roofline.combined_gbps, roofline.bounding_step));
    if (roofline.place_step != "copy") {
      log(fmt::format("roofline: place = {}; the plain copy of the chunks is {:.2f} GB/s",
                      roofline.place_step, roofline.place_copy_gbps));
    }
  }

  if (cold) {
    report["page_cache"]["resident_after_eviction_max"] = resident_after_eviction;
    if (resident_after_eviction > 0.05) {
      const std::string note = fmt::format(
          "--page-cache cold: up to {:.1f}% of the dataset's pages stayed in memory after an "
          "eviction during the run (pages chute keeps mapped, e.g. .npy or contiguous HDF5, "
          "cannot be dropped while mapped): those reads are partly warm",
          100 * resident_after_eviction);
      report["notes"].push_back(note);
      log(note);
    }
  }

  // The peers read the same batches (warm-up ones included) with the same thread count.
  if (!o.peers.empty()) {
    const auto* windows = dynamic_cast<const WindowDataset*>(data.dataset.get());
    PeerSpec spec;
    spec.peers = o.peers;
    spec.batches = io.batch_indices;
    spec.warmup = std::max(1, o.warmup);
    spec.trials = o.trials;
    spec.threads = threads;
    spec.batch_size = o.batch_size;
    spec.max_seconds_per_peer = o.peer_seconds;
    spec.evict_files = dataset_files;  // cold: each peer starts with the pages evicted
    const bool volume = data.workload == "volume";
    if (volume) {
      spec.crops = crops_of_batches(*data.crops, io.batch_indices, o.seed, batches_per_epoch);
      spec.volume = data.volume;
    } else if (windows != nullptr) {
      spec.windows = data.windows;
      for (auto& batch : spec.batches) {
        for (int64_t& sample : batch) sample = windows->sample_time(sample);
      }
    } else if (data.anemoi_dataset) {
      spec.anemoi = data.anemoi;
      const auto& dates = data.anemoi_dataset->options().sample_dates;
      for (auto& batch : spec.batches) {
        for (int64_t& sample : batch) sample = dates[static_cast<size_t>(sample)];
      }
    } else {
      spec.arrays = data.packed_arrays;
    }
    log(fmt::format("peers: {} reading the same {} batches{}...", fmt::join(o.peers, ", "),
                    spec.batches.size(),
                    volume                ? " of crops"
                    : windows             ? " of windows"
                    : data.anemoi_dataset ? " of anemoi samples"
                                          : ""));
    json peers = run_peers(spec);
    add_ratios(peers, io.samples_per_s.mean);
    for (const json& peer : peers) {
      log(fmt::format(
          "peer {}: {}{}", peer.value("name", "?"), peer.value("status", "?"),
          peer.value("status", "") == "ok"
              ? fmt::format(", {:.1f} samples/s", peer["samples_per_s"].value("mean", 0.0))
              : ": " + peer.value("note", "")));
    }
    report["peers"] = std::move(peers);
  }

  // Sweeps: the io mode per setting; the read roofline re-measured per thread count.
  if (!sweep.empty()) {
    std::vector<SweepPoint> points;
    std::vector<double> limits;
    std::map<std::pair<int, int>, double> limit_by_setting;  // (threads, reads in flight)
    for (const LoaderSetting& s : expand(sweep, setting)) {
      const ModeResult r = run_mode(Mode::kIo, factory, s, run);
      points.push_back(
          {s, r.samples_per_s.mean, r.samples_per_s.std, r.gb_per_s.mean, r.s_per_batch.mean});
      const std::pair<int, int> key{s.threads,
                                    reads_in_flight(chunks, s.threads, s.io_concurrency)};
      if (o.roofline && chunks.empty() && mapped_copies && mapped_copies->boxes > 0 &&
          !limit_by_setting.contains(key)) {
        limit_by_setting[key] =
            measure_mapped_roofline(*mapped_copies,
                                    window_placement_probe(*data.dataset, io.batch_indices),
                                    s.threads, cold ? evict : std::function<void()>())
                .combined_gbps;
      }
      if (o.roofline && !chunks.empty() && !limit_by_setting.contains(key)) {
        RooflineOptions probe = window_placement_probe(*data.dataset, io.batch_indices);
        probe.threads = s.threads;
        probe.usable_cores = machine.usable_cores;
        probe.known_decode_single_gbps = decode_single_gbps;
        probe.cold = cold;
        probe.reads_in_flight = key.second;
        limit_by_setting[key] = measure_roofline(chunks, probe).combined_gbps;
      }
      limits.push_back(limit_by_setting.contains(key) ? limit_by_setting[key] : 0);
      log(fmt::format("sweep threads={} prefetch={} batch={} io_concurrency={}: {}", s.threads,
                      s.prefetch, s.batch_size, s.io_concurrency, rate_line(r)));
    }
    report["sweeps"].push_back(sweep_to_json(sweep, points, limits));
  }
  report["peak_memory"] = to_json(peak_memory());

  const std::string json_path = report_json_path(o);
  write_report_json(report, json_path);
  if (!o.out_dir.empty()) {
    make_plots(report, json_path, o.out_dir, log);
    write_report_json(report, json_path);  // again, with the plots' paths and notes
  }
  return report;
}

std::string report_json_path(const BenchOptions& o) {
  if (!o.json_path.empty()) return o.json_path;
  if (!o.out_dir.empty()) return (fs::path(o.out_dir) / "results.json").string();
  return {};
}

void write_report_json(const json& report, const std::string& path) {
  if (path.empty()) return;
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  std::ofstream out(path);
  if (!out) fail_errno(errno, "write the JSON report", path);
  out << report.dump(2) << "\n";
  if (!out) fail_errno(errno, "write the JSON report", path);
}

}  // namespace chute::bench
