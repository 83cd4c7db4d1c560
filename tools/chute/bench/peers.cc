#include "chute/bench/peers.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "chute/bench/python_tools.h"
#include "chute/util/error.h"

namespace chute::bench {
namespace {

nlohmann::json skipped(const std::string& name, const std::string& note) {
  return {{"name", name}, {"status", "skipped"}, {"note", note}};
}

}  // namespace

const std::vector<std::string>& known_peers() {
  // zarr, dask and tensorstore read packed datasets; dali and h5py volumes; torch both;
  // xarray and h5py windows; anemoi (anemoi-datasets) and tensorstore anemoi datasets.
  static const std::vector<std::string> peers = {"zarr", "dask", "tensorstore", "torch",
                                                 "dali", "h5py", "xarray",      "anemoi"};
  return peers;
}

std::vector<std::string> parse_peer_list(const std::string& text) {
  std::vector<std::string> peers;
  std::stringstream stream(text);
  std::string name;
  while (std::getline(stream, name, ',')) {
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (name.empty()) continue;
    if (name == "all") {
      for (const std::string& known : known_peers()) peers.push_back(known);
    } else {
      peers.push_back(name);
    }
  }
  if (peers.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "--compare: expected peers such as zarr,dask,tensorstore,torch");
  }
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& peer : peers) {
    if (seen.insert(peer).second) unique.push_back(peer);
  }
  return unique;
}

nlohmann::json to_json(const PeerSpec& spec) {
  nlohmann::json arrays = nlohmann::json::array();
  for (const auto& [name, path] : spec.arrays) arrays.push_back({{"name", name}, {"path", path}});
  nlohmann::json out = {
      {"peers", spec.peers},           {"arrays", std::move(arrays)},
      {"batches", spec.batches},       {"warmup", spec.warmup},
      {"trials", spec.trials},         {"threads", spec.threads},
      {"batch_size", spec.batch_size}, {"max_seconds_per_peer", spec.max_seconds_per_peer}};
  if (!spec.evict_files.empty()) out["evict_files"] = spec.evict_files;
  if (!spec.volume.is_null()) {
    out["workload"] = "volume";
    out["volume"] = spec.volume;
    out["crops"] = spec.crops;
  }
  if (!spec.windows.is_null()) {
    out["workload"] = "windows";
    out["windows"] = spec.windows;
  }
  if (!spec.anemoi.is_null()) {
    out["workload"] = "anemoi";
    out["anemoi"] = spec.anemoi;
  }
  return out;
}

nlohmann::json run_peers(const PeerSpec& spec) {
  char path[] = "/tmp/chute-peers-XXXXXX.json";
  const int fd = mkstemps(path, 5);
  if (fd < 0) fail_errno(errno, "create the peers' spec file", path);
  ::close(fd);
  {
    std::ofstream out(path);
    out << to_json(spec).dump();
  }
  ToolResult tool;
  std::string failure;
  try {
    tool = run_python_tool("bench.peers", {"--spec", path});
  } catch (const Error& e) {
    failure = e.what();
  }
  ::unlink(path);

  std::map<std::string, nlohmann::json> results;
  for (const std::string& line : tool.stdout_lines) {
    auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("name") && parsed["name"].is_string()) {
      std::string name = parsed["name"].get<std::string>();
      results[name] = std::move(parsed);
    }
  }
  if (failure.empty() && tool.exit_code != 0) {
    failure = "the Python helper (" + find_python() + ") exited with " +
              std::to_string(tool.exit_code) + ": " + last_line(tool.stderr_text);
  }
  nlohmann::json peers = nlohmann::json::array();
  for (const std::string& name : spec.peers) {
    if (auto found = results.find(name); found != results.end()) {
      peers.push_back(found->second);
    } else {
      peers.push_back(
          skipped(name, failure.empty() ? "the Python helper gave no result" : failure));
    }
  }
  return peers;
}

void add_ratios(nlohmann::json& peers, double chute_samples_per_s) {
  for (auto& peer : peers) {
    if (peer.value("status", "") != "ok") continue;
    const double rate = peer["samples_per_s"].value("mean", 0.0);
    if (rate > 0) peer["ratio_samples_per_s"] = chute_samples_per_s / rate;
  }
}

}  // namespace chute::bench
