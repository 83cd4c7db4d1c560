#include "chute/bench/bench_run.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "chute/util/error.h"

namespace chute::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Per-trial figures gathered by the loops below.
struct TrialTotals {
  std::vector<double> samples_per_s, gb_per_s, s_per_batch, intervals;
  double wall = 0, wait = 0, compute = 0;
  int64_t samples = 0, bytes = 0, batches = 0;
};

void finish(ModeResult& result, const TrialTotals& totals) {
  result.samples_per_s = summarize(totals.samples_per_s);
  result.gb_per_s = summarize(totals.gb_per_s);
  result.s_per_batch = summarize(totals.s_per_batch);
  result.batch_interval_s = summarize(totals.intervals);
  result.wall_s = totals.wall;
  result.samples = totals.samples;
  result.batch_bytes = totals.batches > 0 ? totals.bytes / totals.batches : 0;
  const double batches = std::max<int64_t>(1, totals.batches);
  result.breakdown.wait = totals.wait / batches;
  result.breakdown.compute = totals.compute / batches;
  result.accelerator_utilisation = totals.wall > 0 ? totals.compute / totals.wall : 0;
  if (!result.queue.empty()) {
    double sum = 0;
    size_t empty = 0;
    for (const QueuePoint& p : result.queue) sum += p.occupancy, empty += p.occupancy == 0;
    result.mean_queue_occupancy = sum / static_cast<double>(result.queue.size());
    result.queue_empty_fraction = static_cast<double>(empty) / result.queue.size();
  }
}

/// User + system CPU seconds of the process so far (every thread).
double process_cpu_s() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void record_trial(TrialTotals& totals, double wall, int64_t samples, int64_t bytes, int batches) {
  totals.wall += wall;
  totals.samples += samples;
  totals.bytes += bytes;
  totals.batches += batches;
  totals.samples_per_s.push_back(wall > 0 ? samples / wall : 0);
  totals.gb_per_s.push_back(wall > 0 ? bytes / wall / 1e9 : 0);
  totals.s_per_batch.push_back(wall / batches);
}

ModeResult run_with_loader(Mode mode, const SourceFactory& factory, const LoaderSetting& setting,
                           const RunOptions& options) {
  ModeResult result;
  result.mode = mode;
  result.setting = setting;
  result.trials = options.trials;
  result.batches_per_trial = options.batches;
  const double step_s = mode == Mode::kFull ? options.step_ms / 1e3 : 0;

  if (options.before_trial) options.before_trial();
  const auto created = Clock::now();
  std::unique_ptr<BatchSource> source = factory(setting);
  result.queue_capacity = source->queue_capacity();
  auto keep = [&](const BatchView& batch) {
    if (options.record_indices)
      result.batch_indices.emplace_back(batch.indices.begin(), batch.indices.end());
  };
  keep(source->next());
  result.time_to_first_batch_s = seconds_between(created, Clock::now());
  for (int i = 1; i < options.warmup; ++i) keep(source->next());

  const WorkerTimes before = source->worker_times();
  const double cpu_before = process_cpu_s();
  TrialTotals totals;
  const auto first_trial = Clock::now();
  for (int trial = 0; trial < options.trials; ++trial) {
    // Batches read ahead before the call would be served warm: the source stops, drops them,
    // and starts again after it.
    if (options.before_trial) source->restart_around(options.before_trial);
    int64_t samples = 0, bytes = 0;
    const auto start = Clock::now();
    auto previous = start;
    for (int b = 0; b < options.batches; ++b) {
      const auto asked = Clock::now();
      const BatchView batch = source->next();
      const auto got = Clock::now();
      if (batch.queued >= 0 && result.queue.size() < options.max_queue_samples) {
        result.queue.push_back({seconds_between(first_trial, asked), batch.queued});
      }
      totals.wait += seconds_between(asked, got);
      samples += batch.samples;
      bytes += batch.bytes;
      keep(batch);
      if (step_s > 0) {
        simulate_step(step_s, batch.buffers.empty() ? nullptr : batch.buffers[0].data());
        totals.compute += seconds_between(got, Clock::now());
      }
      const auto done = Clock::now();
      totals.intervals.push_back(seconds_between(previous, done));
      previous = done;
    }
    record_trial(totals, seconds_between(start, Clock::now()), samples, bytes, options.batches);
  }
  const WorkerTimes after = source->worker_times();
  result.cpu_s = process_cpu_s() - cpu_before;
  source.reset();  // stop the loader before reading the memory figures

  finish(result, totals);
  const double batches = std::max<int64_t>(1, totals.batches);
  result.breakdown.read = (after.read_ns - before.read_ns) / 1e9 / batches;
  result.breakdown.decode = (after.decode_ns - before.decode_ns) / 1e9 / batches;
  result.breakdown.assemble = (after.assemble_ns - before.assemble_ns) / 1e9 / batches;
  result.breakdown.finish = (after.finish_ns - before.finish_ns) / 1e9 / batches;
  if (after.cache) {
    const CacheStats zero;
    const CacheStats& a = *after.cache;
    const CacheStats& b = before.cache ? *before.cache : zero;
    result.cache = CacheStats{a.hits - b.hits,
                              a.misses - b.misses,
                              a.bytes_from_cache - b.bytes_from_cache,
                              a.bytes_fetched - b.bytes_fetched,
                              a.bytes_written - b.bytes_written,
                              a.evicted - b.evicted,
                              a.discarded - b.discarded};
  }
  return result;
}

ModeResult run_compute(const SourceFactory& factory, const LoaderSetting& setting,
                       const RunOptions& options) {
  ModeResult result;
  result.mode = Mode::kCompute;
  result.setting = setting;
  result.trials = options.trials;
  result.batches_per_trial = options.batches;
  // The cached batch: one batch copied out of a short-lived loader.
  std::vector<std::byte> cached;
  int64_t samples = 0, bytes = 0;
  {
    std::unique_ptr<BatchSource> source = factory(setting);
    const BatchView batch = source->next();
    samples = batch.samples;
    bytes = batch.bytes;
    for (std::span<const std::byte> buffer : batch.buffers) {
      cached.insert(cached.end(), buffer.begin(), buffer.end());
    }
    result.queue_capacity = source->queue_capacity();
  }
  const std::byte* data = cached.empty() ? nullptr : cached.data();
  const double step_s = options.step_ms / 1e3;
  for (int i = 0; i < options.warmup; ++i) simulate_step(step_s, data);
  TrialTotals totals;
  for (int trial = 0; trial < options.trials; ++trial) {
    const auto start = Clock::now();
    auto previous = start;
    for (int b = 0; b < options.batches; ++b) {
      simulate_step(step_s, data);
      const auto done = Clock::now();
      totals.compute += seconds_between(previous, done);
      totals.intervals.push_back(seconds_between(previous, done));
      previous = done;
    }
    record_trial(totals, seconds_between(start, Clock::now()), samples * options.batches,
                 bytes * options.batches, options.batches);
  }
  finish(result, totals);
  return result;
}

}  // namespace

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kIo:
      return "io";
    case Mode::kCompute:
      return "compute";
    case Mode::kFull:
      return "full";
  }
  return "?";
}

Mode parse_mode(const std::string& name) {
  if (name == "io") return Mode::kIo;
  if (name == "compute") return Mode::kCompute;
  if (name == "full") return Mode::kFull;
  fail(ErrorCode::kInvalidArgument, "unknown bench mode '{}': expected io, compute, full or all",
       name);
}

void simulate_step(double seconds, const std::byte* data) {
  volatile std::byte sink{};
  if (data != nullptr) sink = *data;
  (void)sink;
  std::this_thread::sleep_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(seconds)));
}

bool reset_peak_memory() {
  std::ofstream clear("/proc/self/clear_refs");
  if (!clear) return false;
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

ModeResult run_mode(Mode mode, const SourceFactory& factory, const LoaderSetting& setting,
                    const RunOptions& options) {
  if (options.trials < 1 || options.batches < 1 || options.warmup < 0) {
    fail(ErrorCode::kInvalidArgument,
         "bench: expected trials >= 1, batches >= 1 and warmup >= 0, got {}, {}, {}",
         options.trials, options.batches, options.warmup);
  }
  if (mode != Mode::kIo && !(options.step_ms > 0)) {
    fail(ErrorCode::kInvalidArgument, "bench mode {} needs a step time > 0 ms, got {}",
         mode_name(mode), options.step_ms);
  }
  reset_peak_memory();
  ModeResult result = mode == Mode::kCompute ? run_compute(factory, setting, options)
                                             : run_with_loader(mode, factory, setting, options);
  result.memory = peak_memory();
  return result;
}

nlohmann::json to_json(const ModeResult& r, bool include_queue) {
  nlohmann::json queue = {{"capacity", r.queue_capacity},
                          {"mean_occupancy", r.mean_queue_occupancy},
                          {"empty_fraction", r.queue_empty_fraction}};
  if (include_queue) {
    nlohmann::json t = nlohmann::json::array(), occupancy = nlohmann::json::array();
    for (const QueuePoint& p : r.queue) t.push_back(p.t), occupancy.push_back(p.occupancy);
    queue["t_s"] = std::move(t);
    queue["occupancy"] = std::move(occupancy);
  }
  nlohmann::json out = {
      {"mode", mode_name(r.mode)},
      {"setting", to_json(r.setting)},
      {"trials", r.trials},
      {"batches_per_trial", r.batches_per_trial},
      {"batch_bytes", r.batch_bytes},
      {"samples_per_s", to_json(r.samples_per_s)},
      {"gb_per_s", to_json(r.gb_per_s)},
      {"s_per_batch", to_json(r.s_per_batch)},
      {"batch_interval_s", to_json(r.batch_interval_s)},
      {"time_to_first_batch_s", r.time_to_first_batch_s},
      {"wall_s", r.wall_s},
      {"cpu_s", r.cpu_s},
      {"cpu_s_per_sample", r.samples > 0 && r.cpu_s > 0 ? nlohmann::json(r.cpu_s / r.samples)
                                                        : nlohmann::json(nullptr)},
      {"breakdown_s_per_batch",
       {{"read", r.breakdown.read},
        {"decode", r.breakdown.decode},
        {"assemble", r.breakdown.assemble},
        {"wait", r.breakdown.wait},
        {"compute", r.breakdown.compute},
        {"finish", r.breakdown.finish}}},
      {"accelerator_utilisation", r.accelerator_utilisation},
      {"queue", std::move(queue)},
      {"peak_memory", to_json(r.memory)}};
  if (r.cache) {
    out["cache"] = {{"hits", r.cache->hits},
                    {"misses", r.cache->misses},
                    {"bytes_from_cache", r.cache->bytes_from_cache},
                    {"bytes_fetched", r.cache->bytes_fetched},
                    {"bytes_written", r.cache->bytes_written},
                    {"evicted", r.cache->evicted},
                    {"discarded", r.cache->discarded}};
  }
  return out;
}

}  // namespace chute::bench
