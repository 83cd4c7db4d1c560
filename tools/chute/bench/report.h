#pragma once
// The benchmark's report: one JSON document (the record; plots and tables are drawn from it)
// and its rendering as terminal tables.
//
// Schema "chute-bench/1" (every key always present; absent figures are null or empty):
// {
//   "schema": "chute-bench/1", "chute_version": "0.1.0", "command": "chute bench ...",
//   "machine":  {"hostname", "cpu_model", "os", "logical_cores", "usable_cores",
//                "memory_total_bytes", "memory_available_bytes"},
//   "dataset":  {"path", "workload", "description", "samples", "sample_bytes", "stored_bytes",
//                "fits_in_ram", "arrays": [{"name", "path", "shape", "chunks", "dtype",
//                "codecs", "chunk_bytes"}]},
//   "settings": {"threads", "prefetch", "batch_size", "shuffle", "seed", "drop_last", "rank",
//                "world_size", "warmup", "trials", "batches", "step_ms", "modes"},
//   "roofline": null | RooflineResult (bench/roofline.h to_json),
//   "modes":    {"io"|"compute"|"full": ModeResult (bench/bench_run.h to_json) plus
//                "percent_of_roofline" (GB/s ÷ roofline combined_gbps, null without roofline)
//                and "percent_of_loop" (GB/s ÷ roofline loop_gbps, null when not measured)},
//   "peers":    [{"name", "status", "note", "method", "samples_per_s": {"mean","std"},
//                 "gb_per_s", "s_per_batch", "time_to_first_batch_s", "ratio_samples_per_s"}],
//   "sweeps":   [{"axes": {"threads": [..], "prefetch": [..], "batch_size": [..]},
//                 "points": [{"threads", "prefetch", "batch_size", "samples_per_s",
//                             "samples_per_s_std", "gb_per_s", "s_per_batch", "speedup",
//                             "base_threads", "efficiency", "roofline_gbps",
//                             "percent_of_roofline"}],
//                 "amdahl": null | {"serial_fraction", "rms_residual", "base_threads",
//                                   "points", "predicted_speedup_16", "predicted_speedup_64"},
//                 "recommended": {"threads", "prefetch", "batch_size", "samples_per_s"}}],
//   "notes": ["..."]
// }

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chute/bench/bench_run.h"
#include "chute/bench/machine.h"
#include "chute/bench/roofline.h"
#include "chute/bench/sweep.h"

namespace chute::bench {

inline constexpr const char* kReportSchema = "chute-bench/1";

/// A document with every top-level key: roofline null, modes {}, peers [], sweeps [], notes [].
nlohmann::json make_report(const MachineInfo& machine, nlohmann::json dataset,
                           nlohmann::json settings, const std::string& command);

/// Sets report["roofline"] and every mode's "percent_of_roofline".
void set_roofline(nlohmann::json& report, const RooflineResult& roofline);

/// Adds a mode's result (and its percent of the roofline when one is set).
void add_mode(nlohmann::json& report, const ModeResult& result);

/// One sweep: points with speedup/efficiency, the Amdahl fit and the recommendation.
/// `roofline_gbps[i]` is the combined limit for points[i] (0 when not measured).
nlohmann::json sweep_to_json(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                             const std::vector<double>& roofline_gbps);

/// The top-level keys and, for each section present, the keys listed in the schema above that
/// are missing: empty when the document is complete.
std::vector<std::string> missing_report_keys(const nlohmann::json& report);

/// The terminal rendering: summary line, roofline, modes, time split, queue, peers, sweeps.
std::string render_report(const nlohmann::json& report);

}  // namespace chute::bench
