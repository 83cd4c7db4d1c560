#pragma once
// What `chute bench` measures: a dataset folder made by `chute make-dataset` (its chute.json
// names the workload and the arrays), or the user's own arrays given as name=path pairs (a
// packed dataset: arrays sharing axis 0).

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "chute/dataset/dataset.h"

namespace chute::bench {

struct BenchDataset {
  std::string path;      // the folder, or "" for --array pairs
  std::string workload;  // "packed" or "variables"
  DatasetPtr dataset;
  /// (output name, array path) of the arrays behind a packed dataset (what the peers read);
  /// empty for other workloads.
  std::vector<std::pair<std::string, std::string>> packed_arrays;
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
  std::vector<double> levels;                    // --levels (values; default all)
  std::vector<int64_t> input_offsets = {-1, 0};  // --input-steps (store steps)
  std::vector<int64_t> target_offsets = {1};     // --target-steps
  std::string statistics;                        // --statistics (a `chute stats` group)
  bool normalise = false;  // --normalise: a make-dataset folder's mean/{} and std/{} arrays
  bool channels_last = true;
  bool direct_placement = false;  // channels-last placed straight into the output (the old path)
  std::string dtype = "float32";
};

/// Opens `folder` (with chute.json: packed or variables; without: one Zarr array, or a group
/// whose arrays share axis 0; with windows.enabled: a weather store) or, when `folder` is
/// empty, the `arrays` pairs as a packed dataset. Throws kInvalidArgument when both or neither
/// are given, kUnsupported for the volume workload, and the opening errors of the arrays.
BenchDataset open_bench_dataset(const std::string& folder,
                                const std::vector<std::pair<std::string, std::string>>& arrays,
                                const WindowsFlags& windows = {});

/// Parses "name=path"; a bare path is named after its last path component.
std::pair<std::string, std::string> parse_array_argument(const std::string& argument);

}  // namespace chute::bench
