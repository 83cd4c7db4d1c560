#pragma once
// `chute bench`: the whole measurement behind the command, so the CLI file only parses flags.
// Order: open the dataset; io mode (its batches are the ones every later probe reads); compute
// and full modes (step = 1.1 × the io batch time unless given); the roofline on the chunks the
// io batches touched; the peers on the same batches; sweeps; then the report, JSON and plots.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "chute/bench/bench_dataset.h"
#include "chute/bench/bench_run.h"
#include "chute/bench/sweep.h"
#include "chute/util/option_table.h"

namespace chute::bench {

struct BenchOptions {
  std::string dataset;                                      // folder, or "" with arrays
  std::vector<std::pair<std::string, std::string>> arrays;  // --array NAME=PATH
  int batch_size = 16;
  int threads = 0;  // 0: one per usable core
  int prefetch = 2;
  int io_concurrency = 0;  // chunk reads in flight; 0: the store's preference
  bool read_ahead = true;  // the next batch's reads submitted before this one decodes
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
  int rank = 0;
  int world_size = 1;
  std::vector<Mode> modes = {Mode::kIo, Mode::kCompute, Mode::kFull};
  double step_ms = 0;  // 0: 1.1 × the io mode's mean s/batch
  std::string model;   // "torch": step time from a real small model (chute.bench.model)
  int batches = 20;
  int warmup = 2;
  int trials = 3;
  std::vector<std::string> sweep;  // raw --sweep arguments
  std::vector<std::string> peers;  // --compare
  double peer_seconds = 120;       // time limit per peer
  bool roofline = true;
  std::string json_path;  // --json
  std::string out_dir;    // --out: plots (and results.json when --json is not given)
  std::string command;    // the command line, for the record
  VolumeSettings volume;  // W3 folders: crop size, transforms, which stored form
  WindowsFlags windows;   // W2 windows: layout, dtype, variables, offsets (bench_dataset.h)
  AnemoiFlags anemoi;     // --anemoi: samples as anemoi-training cuts them (anemoi_workload.h)
  /// "warm" (as found) or "cold": the dataset's files are evicted from the page cache
  /// (posix_fadvise DONTNEED) before each trial, each roofline read pass and each peer.
  std::string page_cache = "warm";

  /// Each flag once (bench_options.cc): its name (the flag is --name with '-' for '_'), help and
  /// check; the loader's own options take the loader table's help and checks. The CLI's flags,
  /// their --help and check_bench_options() come from here, VolumeSettings::fields() and
  /// WindowsFlags::fields(). `dataset` and `arrays` (DATASET, --array) are the CLI's own.
  static const std::vector<OptionField<BenchOptions>>& fields();
};

/// Parses "io", "compute", "full" or "all" (comma-separated lists allowed).
std::vector<Mode> parse_modes(const std::string& text);

/// Where the JSON report goes: --json, else DIR/results.json with --out DIR, else "" (none).
std::string report_json_path(const BenchOptions& options);

/// Writes `report` to `path` (creating its folder); nothing when path is empty. Throws
/// kIoError naming the path when it cannot be written.
void write_report_json(const nlohmann::json& report, const std::string& path);

/// Throws kInvalidArgument naming the first option outside its range (and the range).
void check_bench_options(const BenchOptions& options);

/// Runs everything; progress lines go to `log` (stderr in the CLI). Returns the report.
nlohmann::json run_bench(const BenchOptions& options,
                         const std::function<void(const std::string&)>& log);

}  // namespace chute::bench
