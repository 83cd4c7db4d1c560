#pragma once
// What `chute bench` measures: a dataset folder made by `chute make-dataset` (its chute.json
// names the workload and the arrays), or the user's own arrays given as name=path pairs (a
// packed dataset: arrays sharing axis 0).

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "chute/bench/anemoi_workload.h"
#include "chute/dataset/crop_dataset.h"
#include "chute/dataset/dataset.h"
#include "chute/util/option_table.h"

namespace chute::bench {

/// How a W3 volume folder is measured: crops of `crop_size`³ with `transforms`, from the
/// `form` the folder holds: "zarr" (input/, target/), "hdf5" (volume.h5: Nbody, Hydro), "npy"
/// (input.npy, target.npy, channels last) or "auto" (hdf5 when volume.h5 opens, else zarr).
struct VolumeSettings {
  int64_t crop_size = 64;
  std::string transforms = "rotations";
  std::string form = "auto";
  int64_t crops_per_epoch = 4096;
  static const std::vector<OptionField<VolumeSettings>>& fields();  // bench_options.cc
};

struct BenchDataset {
  std::string path;      // the folder, or "" for --array pairs
  std::string workload;  // "packed", "variables" or "volume"
  DatasetPtr dataset;
  /// The volume workload's dataset (also in `dataset`), and what its peers read:
  /// {"folder", "form", "size", "transforms", "channels": [4, 5], "arrays": {name: path}}.
  std::shared_ptr<const CropDataset> crops;
  nlohmann::json volume;
  /// (output name, array path) of the arrays behind a packed dataset (what the peers read);
  /// empty for other workloads.
  std::vector<std::pair<std::string, std::string>> packed_arrays;
  /// W2 windows: what their peers build ({"store", "variables", "target_variables", "forcings",
  /// "computed_forcings", "statics", "levels", "input_offsets", "target_offsets", "statistics",
  /// "normalise", "channels_last", "dtype"}); null for other workloads.
  nlohmann::json windows;
  /// --anemoi: what its peers read ({"store", "variables", "multistep_input", "rollout",
  /// "timeincrement", "normalise", "dtype", "variables_first"}); null otherwise.
  nlohmann::json anemoi;
  std::shared_ptr<const AnemoiDataset> anemoi_dataset;
  int64_t stored_bytes = 0;    // on disk, all arrays
  double open_seconds = 0;     // opening metadata and building the dataset
  nlohmann::json description;  // the report's "dataset" section
};

/// How `chute bench` builds windows (W2): on a `make-dataset variables` folder (layout, dtype,
/// normalisation by its mean/ and std/ arrays), or with `enabled` on any weather store as
/// xarray writes it (variables, levels, offsets and statistics given here).
struct WindowsFlags {
  bool enabled = false;  // --windows: the folder is a weather store, whatever chute.json says
  std::vector<std::string> variables;         // --variables (inputs)
  std::vector<std::string> target_variables;  // --target-variables (default: the inputs)
  std::vector<std::string> forcings, statics;
  /// --computed-forcings: cos/sin_local_time, cos/sin_day_of_year, toa_radiation at the target
  /// steps, from the store's time coordinate (decoded in C++, cf_time.h) and its lat/lon grid.
  std::vector<std::string> computed_forcings;
  std::vector<double> levels;                    // --levels (values; default all)
  std::vector<int64_t> input_offsets = {-1, 0};  // --input-steps (store steps)
  std::vector<int64_t> target_offsets = {1};     // --target-steps
  std::string statistics;                        // --statistics (a `chute stats` group)
  bool normalise = false;  // --normalise: a make-dataset folder's mean/{} and std/{} arrays
  bool channels_last = true;
  bool direct_placement = false;  // channels-last placed straight into the output (the old path)
  std::string dtype = "float32";
  /// Many files joined along time (many_files.h): the members (DATASET given several times; a
  /// glob DATASET expands to them), and for members without a time coordinate the rule giving
  /// their times (--file-pattern "{year}.h5", --file-step "6h") and the names of the channels of
  /// a stacked array (--channels, of --channel-array, FourCastNet's `fields`).
  std::vector<std::string> members;
  std::string file_pattern;
  std::string file_step;
  std::vector<std::string> channels;
  std::string channel_array = "fields";
  bool allow_gaps = false;
  static const std::vector<OptionField<WindowsFlags>>& fields();  // bench_options.cc
};

/// Seconds in "6h", "30min", "1d", "90s" or a bare number of seconds; kInvalidArgument naming
/// `what` otherwise.
int64_t parse_step_seconds(const std::string& text, const std::string& what);
/// Whether DATASET and the windows flags name a dataset of many files: DATASET given several
/// times, a glob, or members whose times or channels come from --file-pattern, --file-step or
/// --channels (then they are windows over joined members).
bool names_many_files(const WindowsFlags& flags, const std::string& path);

/// Opens `folder` (with chute.json: packed, variables or volume; without: one Zarr array, or a
/// group whose arrays share axis 0; with windows.enabled: a weather store) or, when `folder` is
/// empty, the `arrays` pairs as a packed dataset. Throws kInvalidArgument when both or neither
/// are given, and the opening errors of the arrays themselves.
BenchDataset open_bench_dataset(const std::string& folder,
                                const std::vector<std::pair<std::string, std::string>>& arrays,
                                const VolumeSettings& volume = {}, const WindowsFlags& windows = {},
                                const AnemoiFlags& anemoi = {});

/// Parses "name=path"; a bare path is named after its last path component.
std::pair<std::string, std::string> parse_array_argument(const std::string& argument);

}  // namespace chute::bench
