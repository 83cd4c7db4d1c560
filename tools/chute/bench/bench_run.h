#pragma once
// The three benchmark modes, DLIO-style:
//   io      - the loader alone, batches consumed as fast as they come;
//   compute - one cached batch fed to a simulated training step (a sleep of step_ms, see
//   simulate_step): the
//             throughput an accelerator would reach if loading were free;
//   full    - the loader feeding the simulated step on the consumer thread.
// Each runs `warmup` batches, then `trials` trials of `batches` batches; figures are mean ± std
// over trials. Accelerator utilisation = compute time / wall time (DLIO's definition).

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chute/bench/batch_source.h"
#include "chute/bench/machine.h"
#include "chute/bench/stats.h"

namespace chute::bench {

enum class Mode { kIo, kCompute, kFull };
const char* mode_name(Mode mode);
/// "io", "compute", "full"; throws kInvalidArgument otherwise.
Mode parse_mode(const std::string& name);

struct RunOptions {
  int warmup = 2;  // batches before the trials (the first one gives time to first batch)
  int trials = 3;
  int batches = 20;                  // per trial
  double step_ms = 0;                // simulated step; compute and full modes need > 0
  size_t max_queue_samples = 20000;  // queue occupancy points kept per mode
  bool record_indices = false;       // keep every batch's sample indices (for the peers)
  /// Called before the source is created and before each trial, after which the source drops
  /// what it read ahead (--page-cache cold evicts the dataset's pages here, so every timed
  /// batch is read after the eviction; the call is not timed).
  std::function<void()> before_trial;
};

struct TimeBreakdown {  // seconds per batch
  double read = 0;      // worker time in the store, summed over threads
  double decode = 0;    // worker time in codecs, summed over threads
  double assemble = 0;  // worker time placing/filling, summed over threads
  double wait = 0;      // consumer time blocked on the queue
  double compute = 0;   // consumer time in the simulated step
  double finish = 0;    // wall time of the dataset's post-read pass (windows: placement)
};

struct QueuePoint {
  double t = 0;       // seconds since the first trial began
  int occupancy = 0;  // batches ready when the consumer asked for the next one
};

struct ModeResult {
  Mode mode = Mode::kIo;
  LoaderSetting setting;
  int trials = 0;
  int batches_per_trial = 0;
  int64_t batch_bytes = 0;           // decoded bytes of one batch (mean)
  Summary samples_per_s;             // over trials
  Summary gb_per_s;                  // over trials, 10^9 decoded bytes per second
  Summary s_per_batch;               // over trials (trial wall / batches)
  Summary batch_interval_s;          // over every timed batch (time between consecutive batches)
  double time_to_first_batch_s = 0;  // loader creation to first batch (0 in compute mode)
  double wall_s = 0;                 // all trials
  double cpu_s = 0;                  // user + system CPU of the whole process over the trials
  int64_t samples = 0;               // all trials
  TimeBreakdown breakdown;
  double accelerator_utilisation = 0;  // compute / wall over the trials (0 in io mode)
  int queue_capacity = 0;
  double mean_queue_occupancy = 0;
  double queue_empty_fraction = 0;  // share of requests that found the queue empty
  std::vector<QueuePoint> queue;
  PeakMemory memory;                // after the mode (VmHWM reset before it where possible)
  std::optional<CacheStats> cache;  // node-local cache counters over the timed trials
  std::vector<std::vector<int64_t>> batch_indices;  // warm-up and timed batches, when recorded
};

/// Runs one mode on a fresh source from `factory`. Throws kInvalidArgument when step_ms <= 0 for
/// compute/full, or when options ask for no batches.
ModeResult run_mode(Mode mode, const SourceFactory& factory, const LoaderSetting& setting,
                    const RunOptions& options);

/// A simulated accelerator step of `seconds`: the host thread sleeps, as it does while a GPU
/// runs the step (DLIO emulates compute the same way), so the loader keeps every core. Spinning
/// instead would take a core from the loader that a real accelerator does not. Reads one byte
/// of `data` if given, so the batch is touched by the consumer.
void simulate_step(double seconds, const std::byte* data = nullptr);

/// Resets the process's peak resident memory (Linux: writes 5 to /proc/self/clear_refs).
/// Returns false when the system does not allow it.
bool reset_peak_memory();

nlohmann::json to_json(const ModeResult& result, bool include_queue = true);

}  // namespace chute::bench
