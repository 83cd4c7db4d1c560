#pragma once
// The peers: the same batches read by other libraries, in a Python helper
// (python/chute/bench/peers.py), shown side by side with chute. The C++ side writes a spec
// (arrays, the batches' sample indices, thread count), runs the helper and parses one JSON
// result per peer from its stdout.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace chute::bench {

/// The peers `--compare` knows, in display order.
const std::vector<std::string>& known_peers();

/// Parses "zarr,dask,tensorstore,torch" (or "all"); unknown names are kept: the helper reports
/// them as skipped. Throws kInvalidArgument on an empty list.
std::vector<std::string> parse_peer_list(const std::string& text);

struct PeerSpec {
  std::vector<std::string> peers;
  std::vector<std::pair<std::string, std::string>> arrays;  // output name -> array path
  std::vector<std::vector<int64_t>> batches;  // sample indices; the first `warmup` are warm-up
  int warmup = 1;
  int trials = 1;  // the timed batches are split into this many equal trials
  int threads = 1;
  int batch_size = 16;
  double max_seconds_per_peer = 120;  // a peer stops early (with fewer batches) past this
  /// --page-cache cold: files whose pages the helper evicts before each peer starts.
  std::vector<std::string> evict_files;
  /// W3 volumes: what the peers read (BenchDataset::volume) and, per batch, its crops as
  /// [corner..., transform id] rows; empty `volume` for the packed workload.
  nlohmann::json volume;
  std::vector<std::vector<std::vector<int64_t>>> crops;
  /// W2 windows: BenchDataset::windows, with `batches` holding each sample's time index;
  /// null for other workloads.
  nlohmann::json windows;
  /// --anemoi: BenchDataset::anemoi, with `batches` holding each sample's reference date.
  nlohmann::json anemoi;
};

nlohmann::json to_json(const PeerSpec& spec);

/// Runs the helper on `spec` (written to a temporary file) and returns one JSON object per
/// requested peer: {"name", "status": "ok"|"skipped"|"failed", "note", and when ok
/// "samples_per_s"/"gb_per_s"/"s_per_batch" as {"mean","std"}, "time_to_first_batch_s",
/// "batches"}. When the helper cannot run at all, every peer is "skipped" with the reason.
nlohmann::json run_peers(const PeerSpec& spec);

/// Adds "ratio_samples_per_s" = chute ÷ peer to every peer that is ok.
void add_ratios(nlohmann::json& peers, double chute_samples_per_s);

}  // namespace chute::bench
