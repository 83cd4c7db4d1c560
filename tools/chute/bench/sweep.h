#pragma once
// Sweeps over loader settings: parsing `threads=1,2,4 prefetch=1,2 batch=8,16`, the speedup and
// parallel-efficiency tables, an Amdahl fit of the serial fraction, and a recommended setting.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace chute::bench {

/// The loader knobs a sweep varies.
struct LoaderSetting {
  int threads = 1;
  int prefetch = 2;
  int batch_size = 16;
  int io_concurrency = 0;  // chunk reads in flight; 0: the store's preference
  bool operator==(const LoaderSetting&) const = default;
};

/// Values per axis; an empty axis keeps the base setting's value.
struct SweepSpec {
  std::vector<int> threads;
  std::vector<int> prefetch;
  std::vector<int> batch_size;
  std::vector<int> io_concurrency;
  bool empty() const {
    return threads.empty() && prefetch.empty() && batch_size.empty() && io_concurrency.empty();
  }
};

/// Parses sweep arguments. Each argument may hold several axes separated by spaces or commas:
/// "threads=1,2,4", "prefetch=1,2 batch=8,16" and "threads=1,2,prefetch=1,2" all work. Axis
/// names: threads, prefetch, batch (or batch_size), io_concurrency (or io). Values are positive
/// integers, kept in the order given with duplicates removed. Throws kInvalidArgument naming the
/// bad part.
SweepSpec parse_sweep(std::span<const std::string> arguments);

/// Every combination of the spec's axes (threads varying fastest), with `base` filling empty axes.
std::vector<LoaderSetting> expand(const SweepSpec& spec, const LoaderSetting& base);

/// One measured setting of a sweep.
struct SweepPoint {
  LoaderSetting setting;
  double samples_per_s = 0;  // mean over trials
  double samples_per_s_std = 0;
  double gb_per_s = 0;
  double s_per_batch = 0;
};

/// A row of the scaling table: speedup = throughput / throughput at the group's base thread count
/// (threads=1 when measured, else the smallest), efficiency = speedup / (threads / base threads).
struct ScalingRow {
  LoaderSetting setting;
  double samples_per_s = 0;
  int base_threads = 1;
  double speedup = 1;
  double efficiency = 1;
};

/// Groups points by (prefetch, batch size, io_concurrency) and computes each point's speedup and
/// efficiency against the group's base thread count. Rows keep the points' order within each group.
std::vector<ScalingRow> scaling_table(std::span<const SweepPoint> points);

/// Amdahl's law: the speedup on n threads when a fraction `serial` of the work is serial.
double amdahl_speedup(double serial, double n);

struct AmdahlFit {
  double serial_fraction = 0;  // in [0, 1]
  double rms_residual = 0;     // of the fitted relative speedups
  double base_threads = 1;
  double predicted_speedup_16 = 1;  // relative to 1 thread
  double predicted_speedup_64 = 1;
  size_t points = 0;
};

/// Least-squares fit of the serial fraction s to (threads, speedup) pairs, where speedups are
/// relative to `base_threads` (the model is amdahl(s, n) / amdahl(s, base)). Superlinear data
/// gives s = 0. Precondition: at least one pair with threads != base_threads, all values > 0.
AmdahlFit fit_amdahl(std::span<const std::pair<double, double>> threads_speedup,
                     double base_threads = 1);

/// Fits the serial fraction on the scaling rows of the group (prefetch, batch) with most thread
/// counts; nullopt when no group has two thread counts.
std::optional<AmdahlFit> fit_amdahl(std::span<const ScalingRow> rows);

/// Index of the recommended setting: the cheapest point whose throughput is within `tolerance`
/// (0.05 = 5%) of the best. Cheapest = fewest threads, then smallest prefetch, then smallest
/// batch. Precondition: points is not empty.
size_t recommend(std::span<const SweepPoint> points, double tolerance = 0.05);

nlohmann::json to_json(const LoaderSetting& setting);
nlohmann::json to_json(const AmdahlFit& fit);

}  // namespace chute::bench
