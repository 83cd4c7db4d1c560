#pragma once
// chute.json: the small manifest `chute make-dataset` leaves in a dataset folder, so that
// `chute bench DATASET` (and tests) know the workload and where its arrays are without flags.
//
// {"workload": "packed", "zarr_format": 2, "created_by": "chute make-dataset",
//  "chute_version": "0.1.0", "arrays": {"inputs": "inputs", "targets": "targets"},
//  "options": {...the generator's options...}, "stats": {"logical_bytes": .., "stored_bytes": ..}}
// Array paths are relative to the dataset folder.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace chute::synth {

inline constexpr const char* kManifestName = "chute.json";

struct Manifest {
  std::string workload;  // "packed", "variables" or "volume"
  int zarr_format = 2;
  std::string created_by = "chute make-dataset";
  std::map<std::string, std::string> arrays;  // role or variable name -> relative path
  nlohmann::json options = nlohmann::json::object();
  int64_t logical_bytes = 0;
  int64_t stored_bytes = 0;
  // The top-level names chute wrote into the folder (chute.json included): what
  // `make-dataset --force` may delete. Empty in manifests of older versions.
  std::vector<std::string> entries;

  nlohmann::json to_json() const;
  /// Throws kInvalidMetadata naming the missing or mistyped field.
  static Manifest from_json(const nlohmann::json& document);
};

/// Writes `folder`/chute.json.
void write_manifest(const std::string& folder, const Manifest& manifest);
/// Reads `folder`/chute.json; throws kNotFound when the folder has none.
Manifest read_manifest(const std::string& folder);
/// True when `folder` holds a chute.json.
bool has_manifest(const std::string& folder);

/// Deletes what chute wrote into `folder` (the manifest's entries), leaving it empty. Throws
/// kInvalidArgument, deleting nothing, when the folder holds anything else, when the manifest
/// lists no entries (an older chute) or an entry that is not a plain name inside the folder.
void remove_dataset(const std::string& folder);

}  // namespace chute::synth
