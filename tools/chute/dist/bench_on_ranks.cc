#include "chute/dist/bench_on_ranks.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "chute/bench/bench_dataset.h"
#include "chute/bench/python_tools.h"
#include "chute/bench/report.h"
#include "chute/dist/all_ranks.h"
#include "chute/dist/rank_report.h"
#include "chute/util/error.h"

namespace chute::dist {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kRankSweepSchema = "chute-bench-ranks/1";
const std::vector<std::string> kRankColumns = {"samples_per_s", "gb_per_s",      "s_per_batch",
                                               "startup_s",     "open_s",        "first_batch_s",
                                               "launch_s",      "peak_rss_bytes"};

double number_or_nan(const json& value) {
  return value.is_number() ? value.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

/// The figures of one rank's report that the rank table shows (the io mode when measured).
std::vector<RankMetric> metrics_of(const json& report, double launch_s) {
  const json& modes = report.at("modes");
  const json* mode = nullptr;
  for (const char* name : {"io", "full", "compute"}) {
    if (modes.contains(name)) {
      mode = &modes[name];
      break;
    }
  }
  if (mode == nullptr) fail(ErrorCode::kInternal, "rank report: the benchmark measured no mode");
  const double open_s = number_or_nan(report.at("dataset").value("open_seconds", json()));
  const double first_s = number_or_nan(mode->value("time_to_first_batch_s", json()));
  double peak = std::numeric_limits<double>::quiet_NaN();
  if (report.contains("peak_memory")) {
    peak = number_or_nan(report["peak_memory"].value("vm_hwm_bytes", json()));
  }
  return {{std::string(kSamplesPerS), number_or_nan(mode->at("samples_per_s").at("mean")),
           Combine::kSum},
          {"gb_per_s", number_or_nan(mode->at("gb_per_s").at("mean")), Combine::kSum},
          {std::string(kSecondsPerBatch), number_or_nan(mode->at("s_per_batch").at("mean")),
           Combine::kMax},
          {std::string(kStartupSeconds), open_s + first_s, Combine::kMax},
          {"open_s", open_s, Combine::kMax},
          {"first_batch_s", first_s, Combine::kMax},
          {"launch_s", launch_s, Combine::kMax},
          {"peak_rss_bytes", peak, Combine::kSum}};
}

/// Opens the dataset on every rank and agrees on the outcome before anything long starts.
void check_dataset_opens(Comm& comm, const bench::BenchOptions& o) {
  run_on_all_ranks(comm, "opening the dataset", [&] {
    (void)bench::open_bench_dataset(o.dataset, o.arrays, o.volume, o.windows, o.anemoi);
  });
}

json run_ranks_side_by_side(Comm& comm, bench::BenchOptions options, const BenchLog& log,
                            double launch_s) {
  const bool root = comm.rank() == 0;
  options.rank = comm.rank();
  options.world_size = comm.size();
  if (!root) {  // only rank 0 compares with peers and writes files
    options.peers.clear();
    options.json_path.clear();
    options.out_dir.clear();
  }
  check_dataset_opens(comm, options);
  comm.barrier();  // start together: the ranks share the storage
  json report;
  run_on_all_ranks(comm, "the benchmark", [&] {
    report = bench::run_bench(options, root ? log : BenchLog([](const std::string&) {}));
  });
  RankReport ranks = gather_rank_report(comm, metrics_of(report, launch_s));
  if (root) {
    report["ranks"] = {{"world_size", comm.size()},
                       {"backend", std::string(comm.backend())},
                       {"batch_size_per_rank", options.batch_size},
                       {"global_batch_size", int64_t{options.batch_size} * comm.size()},
                       {"report", ranks.to_json()}};
    bench::write_report_json(report, bench::report_json_path(options));
  }
  return report;
}

json run_ranks_sweep(Comm& comm, bench::BenchOptions options, std::vector<int> counts,
                     const BenchLog& log, double launch_s) {
  const bool root = comm.rank() == 0;
  if (!options.sweep.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "--sweep ranks=... cannot be combined with other sweep axes ({}); run them separately",
         options.sweep.front());
  }
  check_dataset_opens(comm, options);
  const int global_batch = options.batch_size;
  std::vector<RankScalingRow> rows =
      run_rank_sweep(comm, counts, [&](Comm& sub) -> std::vector<RankMetric> {
        bench::BenchOptions o = options;
        o.rank = sub.rank();
        o.world_size = sub.size();
        o.batch_size = static_cast<int>(per_rank_batch(global_batch, sub.size()));
        o.modes = {bench::Mode::kIo};
        o.peers.clear();
        o.roofline = false;
        o.json_path.clear();
        o.out_dir.clear();
        if (root) {
          log(fmt::format("ranks={}: {} samples per rank (global batch {})", sub.size(),
                          o.batch_size, int64_t{o.batch_size} * sub.size()));
        }
        sub.barrier();
        json report = bench::run_bench(o, [](const std::string&) {});
        return metrics_of(report, launch_s);
      });
  json document = {{"schema", kRankSweepSchema},    {"command", options.command},
                   {"dataset", options.dataset},    {"global_batch_size", global_batch},
                   {"launched_ranks", comm.size()}, {"backend", std::string(comm.backend())},
                   {"rank_sweep", to_json(rows)},   {"notes", json::array()}};
  if (root) {
    for (const RankScalingRow& row : rows) {
      if (global_batch % row.ranks != 0) {
        document["notes"].push_back(fmt::format(
            "ranks={}: the global batch {} is not divisible by {}; each rank read {} samples "
            "(global batch {})",
            row.ranks, global_batch, row.ranks, per_rank_batch(global_batch, row.ranks),
            per_rank_batch(global_batch, row.ranks) * row.ranks));
      }
    }
    const std::string path = bench::report_json_path(options);
    bench::write_report_json(document, path);
    if (!options.out_dir.empty()) {
      std::error_code ec;
      fs::create_directories(options.out_dir, ec);
      bench::ToolResult tool =
          bench::run_python_tool("distributed", {"plot-ranks", path, "--out", options.out_dir});
      if (tool.exit_code != 0) {
        document["notes"].push_back("rank scaling plot not made: " + tool.stderr_text);
      } else {
        for (const std::string& line : tool.stdout_lines) {
          if (!line.empty()) document["plots"].push_back(line);
        }
      }
      bench::write_report_json(document, path);
    }
  }
  return document;
}

}  // namespace

double seconds_since_process_start() {
  std::ifstream stat("/proc/self/stat");
  std::ifstream uptime_file("/proc/uptime");
  std::string line;
  double uptime = 0;
  if (!std::getline(stat, line) || !(uptime_file >> uptime)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  // Field 22 (starttime, in clock ticks since boot) counts from after the ")" closing the name.
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (field.empty() || ticks <= 0) return std::numeric_limits<double>::quiet_NaN();
  return uptime - std::stod(field) / static_cast<double>(ticks);
}

json run_bench_on_ranks(Comm& comm, bench::BenchOptions options, const BenchLog& log) {
  const double launch_s = seconds_since_process_start();
  std::vector<int> counts = take_ranks_axis(options.sweep);
  if (!counts.empty()) return run_ranks_sweep(comm, std::move(options), counts, log, launch_s);
  if (comm.size() == 1) return bench::run_bench(options, log);
  return run_ranks_side_by_side(comm, std::move(options), log, launch_s);
}

std::string render_bench_on_ranks(const json& report) {
  if (report.value("schema", "") == kRankSweepSchema) {
    std::vector<RankScalingRow> rows;
    std::string out;
    for (const json& row : report.at("rank_sweep")) {
      RankScalingRow r;
      r.ranks = row.at("ranks").get<int>();
      r.global_batch_s = number_or_nan(row.at("global_batch_s"));
      r.samples_per_s = number_or_nan(row.at("samples_per_s"));
      r.startup_s = number_or_nan(row.at("startup_s"));
      r.speedup = number_or_nan(row.at("speedup"));
      r.efficiency = number_or_nan(row.at("efficiency"));
      r.report = rank_report_from_json(row.at("report"));
      out += r.report.render(
                 fmt::format("ranks={} (global batch {})", r.ranks,
                             per_rank_batch(report.at("global_batch_size"), r.ranks) * r.ranks),
                 kRankColumns) +
             "\n";
      rows.push_back(std::move(r));
    }
    out += render_rank_scaling(rows);
    for (const json& note : report.value("notes", json::array())) {
      out += "note: " + note.get<std::string>() + "\n";
    }
    return out;
  }
  std::string out = bench::render_report(report);
  if (report.contains("ranks")) {
    const json& ranks = report["ranks"];
    RankReport per_rank = rank_report_from_json(ranks.at("report"));
    out += "\n" + per_rank.render(fmt::format("Ranks: {} ({}), {} samples per rank, global batch "
                                              "{}; all = sum of rates, slowest of times",
                                              ranks.at("world_size").get<int>(),
                                              ranks.at("backend").get<std::string>(),
                                              ranks.at("batch_size_per_rank").get<int>(),
                                              ranks.at("global_batch_size").get<int64_t>()),
                                  kRankColumns);
  }
  return out;
}

}  // namespace chute::dist
