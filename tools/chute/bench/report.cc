#include "chute/bench/report.h"

#include <fmt/format.h>

#include <cmath>

#include "chute/bench/table.h"

namespace chute::bench {
namespace {

using nlohmann::json;

double number(const json& object, const char* key, double fallback = NAN) {
  if (!object.is_object()) return fallback;
  auto found = object.find(key);
  return found != object.end() && found->is_number() ? found->get<double>() : fallback;
}

double mean_of(const json& object, const char* key) {
  return object.is_object() && object.contains(key) ? number(object[key], "mean") : NAN;
}
double std_of(const json& object, const char* key) {
  return object.is_object() && object.contains(key) ? number(object[key], "std") : NAN;
}

std::string integer(const json& object, const char* key) {
  const double value = number(object, key);
  return std::isfinite(value) ? fmt::format("{}", static_cast<int64_t>(value)) : "-";
}

std::string text(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

void require(const json& object, const std::string& where, std::initializer_list<const char*> keys,
             std::vector<std::string>& missing) {
  if (!object.is_object()) {
    missing.push_back(where);
    return;
  }
  for (const char* key : keys) {
    if (!object.contains(key)) missing.push_back(where + "." + key);
  }
}

/// W3: the crop roofline (chute/bench/crop_roofline.h), in samples/s.
std::string render_crop_roofline(const json& r) {
  Table table({"probe", "samples/s", "GB/s", "how"});
  const double bytes = number(r, "sample_bytes", 0);
  const auto row = [&](const char* name, const char* key, const std::string& how) {
    const double rate = number(r, key, 0);
    table.add_row({name, format_number(rate), format_number(rate * bytes / 1e9), how});
  };
  const int threads = static_cast<int>(number(r, "threads", 1));
  row("read", "read_samples_per_s",
      fmt::format("the bytes the crops touch ({} per crop), {} threads",
                  format_bytes(number(r, "bytes_read_per_sample", 0)), threads));
  row("decode", "decode_samples_per_s",
      number(r, "decode_samples_per_s", 0) > 0
          ? fmt::format("codec chain on those bytes ({} decoded per crop, whole blocks)",
                        format_bytes(number(r, "bytes_decoded_per_sample", 0)))
          : "none: a mapped, uncompressed source (.npy, contiguous HDF5)");
  row("place", "place_samples_per_s", "strided copies with the transforms, from cache");
  row("limit", "combined_samples_per_s",
      r.value("fused_mapped_copy", false)
          ? "min(read, place): one pass out of the mapping, memory reads under the transforms"
      : r.value("read_overlaps", false)
          ? "min(read, 1 / (1/decode + 1/place)): storage reads run in flight beside the workers"
          : "1 / (1/read + 1/decode + 1/place)");
  row("loop", "loop_samples_per_s", "the three as one loop (ReadPlan::execute, no pipeline)");
  table.add_row({"loader", "-", "-",
                 fmt::format("io mode reaches {} of the limit",
                             format_percent(number(r, "loader_fraction", 0)))});
  return table.render(fmt::format("Crop roofline on the same {} crops",
                                  static_cast<int64_t>(number(r, "samples", 0))));
}

/// The roofline of arrays copied out of a file mapping (mapped_roofline.h): a copy, no decode.
std::string render_mapped_roofline(const json& r) {
  Table table({"probe", "GB/s", "how"});
  const int threads = static_cast<int>(number(r, "threads", 1));
  table.add_row({"read", format_number(number(r, "read_gbps")),
                 fmt::format("the loader's copy of the same boxes out of the file mappings into "
                             "their places in a batch's memory, {} threads: {}",
                             threads, text(r, "read_source"))});
  table.add_row({"decode", "-", "none: mapped, uncompressed (contiguous HDF5, .npy)"});
  const std::string step = text(r, "place_step");
  const bool placed = !step.empty() && step != "-" && step != "copy";
  if (placed) {
    table.add_row({"place", format_number(number(r, "place_gbps")),
                   fmt::format("{}, {} threads (counts in the limit)", step, threads)});
  }
  table.add_row({"limit", format_number(number(r, "combined_gbps")),
                 placed ? "1 / (1/read + 1/place): workers that copy, then place each window"
                        : "read: the copy lands in the batch itself (nothing placed after it)"});
  if (const std::string bound = text(r, "bounding_step"); !bound.empty() && bound != "-") {
    table.add_row({"bound by", "-", bound + ": the slower of read and place"});
  }
  return table.render(fmt::format("Roofline on the same {} boxes ({} copied out of mappings)",
                                  static_cast<int64_t>(number(r, "chunks", 0)),
                                  format_bytes(number(r, "decoded_bytes", 0))));
}

std::string render_roofline(const json& r) {
  if (!r.is_object()) return "roofline: not measured (--no-roofline, or the notes below say why)\n";
  if (r.value("mapped", false)) return render_mapped_roofline(r);
  Table table({"probe", "GB/s", "how"});
  const int threads = static_cast<int>(number(r, "threads", 1));
  const int parallel = static_cast<int>(number(r, "decode_parallelism", 1));
  table.add_row(
      {"read", format_number(number(r, "read_gbps")),
       fmt::format("pread into warm buffers, {} at once (the loader's reads in flight): {} ({} "
                   "GB/s stored bytes)",
                   static_cast<int>(number(r, "reads_in_flight", threads)), text(r, "read_source"),
                   format_number(number(r, "read_stored_gbps")))});
  table.add_row({"decode, 1 thread", format_number(number(r, "decode_single_gbps")),
                 "codec chain into a warm buffer"});
  table.add_row({fmt::format("decode × {}", parallel), format_number(number(r, "decode_gbps")),
                 fmt::format("× min(threads, usable cores) = {}", parallel)});
  const std::string copy_how =
      fmt::format("copy into a batch-sized buffer in memory, {} threads", threads);
  const std::string step = text(r, "place_step");
  if (step.empty() || step == "-" || step == "copy") {
    table.add_row({"place", format_number(number(r, "place_gbps")), copy_how});
  } else {
    table.add_row({"place", format_number(number(r, "place_gbps")),
                   fmt::format("{}, {} threads (counts in the limit)", step, threads)});
    table.add_row({"place: copy only", format_number(number(r, "place_copy_gbps")),
                   copy_how + " (not in the limit)"});
  }
  const bool overlaps = r.value("read_overlaps", false);
  table.add_row({"read + decode", format_number(number(r, "decode_limit_gbps")),
                 overlaps ? "min(read, decode): placement left out"
                          : "1 / (1/read + 1/decode): placement left out"});
  table.add_row({"limit", format_number(number(r, "combined_gbps")),
                 overlaps ? "min(read, 1 / (1/decode + 1/place)): storage reads run beside the "
                            "workers that decode and place each chunk"
                          : "1 / (1/read + 1/decode + 1/place): workers that read, decode, place "
                            "each chunk"});
  const auto loop_row = [&](const char* name, const char* key, const char* how) {
    const double gbps = number(r, key, 0);
    table.add_row({name, gbps > 0 ? format_number(gbps) : "-",
                   fmt::format("{}, {} threads, measured as one loop", how, threads)});
  };
  loop_row("loop: read+decode", "loop_decode_gbps", "pread, then decode into a warm buffer");
  loop_row("loop: + place", "loop_gbps", "the same, then copy into the batch");
  if (const std::string bound = text(r, "bounding_step"); !bound.empty() && bound != "-") {
    table.add_row({"bound by", "-", bound + ": the slowest of read, decode and place"});
  }
  const std::string title = fmt::format(
      "Roofline on the same {} chunks ({} stored, {} decoded, ratio {}); GB/s of decoded bytes",
      static_cast<int64_t>(number(r, "chunks", 0)), format_bytes(number(r, "stored_bytes", 0)),
      format_bytes(number(r, "decoded_bytes", 0)), format_number(number(r, "compression_ratio")));
  return table.render(title);
}

std::string render_modes(const json& modes, int threads) {
  if (!modes.is_object() || modes.empty()) return {};
  Table summary({"mode", "samples/s", "GB/s", "s/batch", "% roofline", "% loop", "first batch",
                 "accel. util.", "peak RSS"});
  Table split({"mode", "read", "decode", "assemble", "finish", "wait", "compute"});
  Table queue({"mode", "capacity", "mean queued", "found empty"});
  Table cache(
      {"mode", "hits", "misses", "from cache", "fetched", "written", "evicted", "discarded"});
  for (const char* name : {"io", "compute", "full"}) {
    if (!modes.contains(name)) continue;
    const json& m = modes[name];
    const double roofline = number(m, "percent_of_roofline");
    const double loop = number(m, "percent_of_loop");
    const double first = number(m, "time_to_first_batch_s", 0);
    summary.add_row(
        {name, format_mean_std(mean_of(m, "samples_per_s"), std_of(m, "samples_per_s")),
         format_mean_std(mean_of(m, "gb_per_s"), std_of(m, "gb_per_s")),
         format_mean_std(mean_of(m, "s_per_batch"), std_of(m, "s_per_batch")),
         std::isfinite(roofline) ? format_percent(roofline) : "-",
         std::isfinite(loop) ? format_percent(loop) : "-",
         std::string(name) == "compute" ? "-" : format_seconds(first),
         std::string(name) == "io" ? "-" : format_percent(number(m, "accelerator_utilisation")),
         format_bytes(number(m["peak_memory"], "vm_hwm_bytes", 0) > 0
                          ? number(m["peak_memory"], "vm_hwm_bytes")
                          : number(m["peak_memory"], "maxrss_bytes", 0))});
    const json& b = m["breakdown_s_per_batch"];
    split.add_row({name, format_seconds(number(b, "read")), format_seconds(number(b, "decode")),
                   format_seconds(number(b, "assemble")), format_seconds(number(b, "finish", 0)),
                   format_seconds(number(b, "wait")), format_seconds(number(b, "compute"))});
    if (std::string(name) != "compute") {
      const json& q = m["queue"];
      queue.add_row({name, integer(q, "capacity"), format_number(number(q, "mean_occupancy", 0)),
                     format_percent(number(q, "empty_fraction", 0))});
    }
    if (m.contains("cache") && m["cache"].is_object()) {
      const json& c = m["cache"];
      cache.add_row({name, integer(c, "hits"), integer(c, "misses"),
                     format_bytes(number(c, "bytes_from_cache", 0)),
                     format_bytes(number(c, "bytes_fetched", 0)),
                     format_bytes(number(c, "bytes_written", 0)), integer(c, "evicted"),
                     integer(c, "discarded")});
    }
  }
  std::string out = summary.render("Modes (mean ± std over trials)");
  out += "\n" + split.render(fmt::format(
                    "Time per batch: read/decode/assemble are worker time summed over {} "
                    "threads; finish is the dataset's placement: wall time of its pass after the "
                    "reads, or worker time summed where it places each sample as its reads "
                    "complete (windows); wait and compute are the consumer's",
                    threads));
  if (queue.rows() > 0) {
    out += "\n" + queue.render("Prefetch queue (batches ready when the consumer asked)");
  }
  if (cache.rows() > 0) {
    out += "\n" + cache.render("Node-local cache (--cache) over the timed trials");
  }
  return out;
}

std::string render_peers(const json& peers, const json& modes) {
  if (!peers.is_array() || peers.empty()) return {};
  Table table({"reader", "samples/s", "GB/s", "s/batch", "first batch", "chute ÷ reader", "note"});
  if (modes.contains("io")) {
    const json& io = modes["io"];
    table.add_row({"chute",
                   format_mean_std(mean_of(io, "samples_per_s"), std_of(io, "samples_per_s")),
                   format_mean_std(mean_of(io, "gb_per_s"), std_of(io, "gb_per_s")),
                   format_mean_std(mean_of(io, "s_per_batch"), std_of(io, "s_per_batch")),
                   format_seconds(number(io, "time_to_first_batch_s")), "1.00", "io mode"});
  }
  for (const json& peer : peers) {
    if (text(peer, "status") != "ok") {
      table.add_row({text(peer, "name"), "-", "-", "-", "-", "-",
                     text(peer, "status") + ": " + text(peer, "note")});
      continue;
    }
    const double ratio = number(peer, "ratio_samples_per_s");
    std::string note = text(peer, "method");
    if (!text(peer, "note").empty()) note += " (" + text(peer, "note") + ")";
    table.add_row({text(peer, "name"),
                   format_mean_std(mean_of(peer, "samples_per_s"), std_of(peer, "samples_per_s")),
                   format_mean_std(mean_of(peer, "gb_per_s"), std_of(peer, "gb_per_s")),
                   format_mean_std(mean_of(peer, "s_per_batch"), std_of(peer, "s_per_batch")),
                   format_seconds(number(peer, "time_to_first_batch_s")),
                   std::isfinite(ratio) ? fmt::format("{:.2f}×", ratio) : "-", note});
  }
  return table.render("Peers: the same batches, same threads");
}

std::string render_sweep(const json& sweep) {
  Table table({"threads", "prefetch", "batch", "reads in flight", "samples/s", "GB/s", "s/batch",
               "speedup", "efficiency", "% roofline"});
  for (const json& p : sweep["points"]) {
    const double roofline = number(p, "percent_of_roofline");
    const int io_concurrency = static_cast<int>(number(p, "io_concurrency", 0));
    table.add_row({integer(p, "threads"), integer(p, "prefetch"), integer(p, "batch_size"),
                   io_concurrency > 0 ? std::to_string(io_concurrency) : "store's",
                   format_mean_std(number(p, "samples_per_s"), number(p, "samples_per_s_std")),
                   format_number(number(p, "gb_per_s")), format_seconds(number(p, "s_per_batch")),
                   fmt::format("{:.2f}×", number(p, "speedup")),
                   format_percent(number(p, "efficiency")),
                   std::isfinite(roofline) ? format_percent(roofline) : "-"});
  }
  std::string out =
      table.render("Sweep (speedup against the fewest threads of each prefetch/batch)");
  const json& fit = sweep["amdahl"];
  if (fit.is_object()) {
    out += fmt::format(
        "Amdahl fit: serial fraction {:.3f} (rms residual {:.3f}, {} points) -> predicted speedup "
        "{:.1f}× at 16 threads, {:.1f}× at 64 threads\n",
        number(fit, "serial_fraction"), number(fit, "rms_residual"),
        static_cast<int>(number(fit, "points", 0)), number(fit, "predicted_speedup_16"),
        number(fit, "predicted_speedup_64"));
  } else {
    out += "Amdahl fit: needs at least two thread counts\n";
  }
  const json& best = sweep["recommended"];
  const int best_io = static_cast<int>(number(best, "io_concurrency", 0));
  out += fmt::format(
      "Recommended: --threads {} --prefetch {} --batch-size {}{} ({} samples/s; the cheapest "
      "setting within 5% of the best)\n",
      static_cast<int>(number(best, "threads", 0)), static_cast<int>(number(best, "prefetch", 0)),
      static_cast<int>(number(best, "batch_size", 0)),
      best_io > 0 ? fmt::format(" --io-concurrency {}", best_io) : "",
      format_number(number(best, "samples_per_s")));
  return out;
}

}  // namespace

json make_report(const MachineInfo& machine, json dataset, json settings,
                 const std::string& command) {
  return {{"schema", kReportSchema},
          {"chute_version", "0.1.0"},
          {"command", command},
          {"machine", to_json(machine)},
          {"dataset", std::move(dataset)},
          {"settings", std::move(settings)},
          {"roofline", nullptr},
          {"modes", json::object()},
          {"peers", json::array()},
          {"sweeps", json::array()},
          {"notes", json::array()}};
}

namespace {

/// The mode's GB/s as a fraction of the roofline's limits (null where one was not measured).
/// The limits are in decoded chunk bytes per second: a dataset whose samples are not their
/// decoded bytes (windows: casts, int16 packed to float) gives "roofline_bytes_per_sample", and
/// the mode's rate is counted in those bytes (samples/s × bytes per sample), so the ratio is
/// samples/s over the roofline's samples/s whatever the output dtype.
void set_percentages(json& mode, const json& roofline, const json& dataset) {
  double gbps = mean_of(mode, "gb_per_s");
  if (dataset.is_object() && dataset.contains("roofline_bytes_per_sample")) {
    gbps =
        mean_of(mode, "samples_per_s") * dataset["roofline_bytes_per_sample"].get<double>() / 1e9;
  }
  const auto fraction = [&](const char* key) {
    const double limit = roofline.is_object() ? number(roofline, key, 0) : 0;
    return limit > 0 && std::isfinite(gbps) ? json(gbps / limit) : json(nullptr);
  };
  mode["percent_of_roofline"] = fraction("combined_gbps");
  mode["percent_of_loop"] = fraction("loop_gbps");
}

}  // namespace

void set_roofline(json& report, const RooflineResult& roofline) {
  report["roofline"] = to_json(roofline);
  for (auto& [name, mode] : report["modes"].items()) {
    set_percentages(mode, report["roofline"], report["dataset"]);
  }
}

void add_mode(json& report, const ModeResult& result) {
  json mode = to_json(result);
  set_percentages(mode, report["roofline"], report["dataset"]);
  report["modes"][mode_name(result.mode)] = std::move(mode);
}

json sweep_to_json(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                   const std::vector<double>& roofline_gbps) {
  json sweep = {{"axes",
                 {{"threads", spec.threads},
                  {"prefetch", spec.prefetch},
                  {"batch_size", spec.batch_size},
                  {"io_concurrency", spec.io_concurrency}}},
                {"points", json::array()},
                {"amdahl", nullptr},
                {"recommended", nullptr}};
  const std::vector<ScalingRow> rows = scaling_table(points);
  for (size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    const ScalingRow* row = nullptr;
    for (const ScalingRow& r : rows) {
      if (r.setting == p.setting) row = &r;
    }
    const double limit = i < roofline_gbps.size() ? roofline_gbps[i] : 0;
    json point = to_json(p.setting);
    point["samples_per_s"] = p.samples_per_s;
    point["samples_per_s_std"] = p.samples_per_s_std;
    point["gb_per_s"] = p.gb_per_s;
    point["s_per_batch"] = p.s_per_batch;
    point["speedup"] = row ? row->speedup : 1.0;
    point["base_threads"] = row ? row->base_threads : p.setting.threads;
    point["efficiency"] = row ? row->efficiency : 1.0;
    point["roofline_gbps"] = limit > 0 ? json(limit) : json(nullptr);
    point["percent_of_roofline"] = limit > 0 ? json(p.gb_per_s / limit) : json(nullptr);
    sweep["points"].push_back(std::move(point));
  }
  if (auto fit = fit_amdahl(rows)) sweep["amdahl"] = to_json(*fit);
  if (!points.empty()) {
    const SweepPoint& best = points[recommend(points)];
    json recommended = to_json(best.setting);
    recommended["samples_per_s"] = best.samples_per_s;
    sweep["recommended"] = std::move(recommended);
  }
  return sweep;
}

std::vector<std::string> missing_report_keys(const json& report) {
  std::vector<std::string> missing;
  require(report, "report",
          {"schema", "chute_version", "command", "machine", "dataset", "settings", "roofline",
           "modes", "peers", "sweeps", "notes"},
          missing);
  if (!missing.empty()) return missing;
  require(report["machine"], "machine",
          {"hostname", "cpu_model", "os", "logical_cores", "usable_cores", "memory_total_bytes",
           "memory_available_bytes"},
          missing);
  require(report["dataset"], "dataset",
          {"path", "workload", "description", "samples", "sample_bytes", "stored_bytes",
           "fits_in_ram", "arrays"},
          missing);
  require(report["settings"], "settings",
          {"threads", "prefetch", "batch_size", "shuffle", "seed", "drop_last", "rank",
           "world_size", "warmup", "trials", "batches", "step_ms", "modes"},
          missing);
  if (report["roofline"].is_object()) {
    require(report["roofline"], "roofline",
            {"threads", "decode_parallelism", "chunks", "stored_bytes", "decoded_bytes",
             "read_gbps", "decode_single_gbps", "decode_gbps", "place_gbps", "combined_gbps",
             "page_cache_fraction", "fits_in_ram", "read_source"},
            missing);
  }
  for (const auto& [name, mode] : report["modes"].items()) {
    require(mode, "modes." + name,
            {"mode", "setting", "samples_per_s", "gb_per_s", "s_per_batch", "batch_interval_s",
             "time_to_first_batch_s", "breakdown_s_per_batch", "accelerator_utilisation", "queue",
             "peak_memory", "percent_of_roofline", "percent_of_loop"},
            missing);
  }
  for (size_t i = 0; i < report["peers"].size(); ++i) {
    require(report["peers"][i], fmt::format("peers[{}]", i), {"name", "status", "note"}, missing);
  }
  for (size_t i = 0; i < report["sweeps"].size(); ++i) {
    require(report["sweeps"][i], fmt::format("sweeps[{}]", i),
            {"axes", "points", "amdahl", "recommended"}, missing);
  }
  return missing;
}

std::string render_report(const json& report) {
  const json& machine = report["machine"];
  const json& dataset = report["dataset"];
  const json& settings = report["settings"];
  std::string out =
      fmt::format("chute bench: {} ({}; {} samples of {})\n", text(dataset, "path"),
                  text(dataset, "description"), static_cast<int64_t>(number(dataset, "samples", 0)),
                  format_bytes(number(dataset, "sample_bytes", 0)));
  out += fmt::format(
      "machine: {} ({} usable cores), {} RAM ({} available); data stored: {}, fits in RAM: {}\n",
      text(machine, "cpu_model"), static_cast<int>(number(machine, "usable_cores", 0)),
      format_bytes(number(machine, "memory_total_bytes", 0)),
      format_bytes(number(machine, "memory_available_bytes", 0)),
      format_bytes(number(dataset, "stored_bytes", 0)),
      dataset.value("fits_in_ram", false) ? "yes" : "no");
  out += fmt::format(
      "loader: batch {}, threads {}, prefetch {}, shuffle {}, rank {}/{}; {} warm-up + {} trials × "
      "{} batches; step {} ms\n\n",
      static_cast<int>(number(settings, "batch_size", 0)),
      static_cast<int>(number(settings, "threads", 0)),
      static_cast<int>(number(settings, "prefetch", 0)),
      settings.value("shuffle", false) ? "on" : "off",
      static_cast<int>(number(settings, "rank", 0)),
      static_cast<int>(number(settings, "world_size", 1)),
      static_cast<int>(number(settings, "warmup", 0)),
      static_cast<int>(number(settings, "trials", 0)),
      static_cast<int>(number(settings, "batches", 0)),
      format_number(number(settings, "step_ms", 0)));
  if (report.contains("crop_roofline")) {
    out += render_crop_roofline(report["crop_roofline"]) + "\n";
  } else {
    out += render_roofline(report["roofline"]) + "\n";
  }
  if (std::string modes =
          render_modes(report["modes"], static_cast<int>(number(settings, "threads", 1)));
      !modes.empty()) {
    out += modes + "\n";
  }
  if (std::string peers = render_peers(report["peers"], report["modes"]); !peers.empty()) {
    out += peers + "\n";
  }
  for (const json& sweep : report["sweeps"]) out += render_sweep(sweep) + "\n";
  for (const json& note : report["notes"]) out += "note: " + note.get<std::string>() + "\n";
  return out;
}

}  // namespace chute::bench
