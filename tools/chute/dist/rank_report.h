#pragma once
// Per-rank benchmark numbers gathered to rank 0, and the scaling study over rank counts.
//
// Every rank measures its own loader and describes the result as named metrics, each saying how
// ranks combine: throughputs and counts add up (kSum), times that the job waits for take the
// slowest rank (kMax: start-up, seconds per batch — a global batch is ready when every rank's
// share is). Rank 0 receives a RankReport with the per-rank values, the aggregate and the spread
// (max / min) of each metric.
//
// `--sweep ranks=1,2,4` runs inside one launch of the largest rank count, on sub-communicators
// of the first k ranks (the others wait at a barrier), instead of re-launching `mpirun -np k`
// for each k: it works the same under srun and in batch allocations where a nested mpirun is not
// allowed, and it needs no path to the launcher. Start-up per k is still measured (the loader is
// created anew for each k), apart from the steady state.

#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chute/dist/comm.h"

namespace chute::dist {

enum class Combine { kSum, kMax, kMin, kMean };

struct RankMetric {
  std::string name;  // e.g. "samples_per_s"
  double value = 0;
  Combine combine = Combine::kSum;
};

struct MetricAcrossRanks {
  std::string name;
  Combine combine = Combine::kSum;
  std::vector<double> per_rank;  // element r from rank r
  double aggregate = 0;          // per `combine`
  double min = 0;
  double max = 0;
  /// max / min: 1 when all ranks agree; NaN when min is 0 and max is not.
  double spread() const;
};

struct RankReport {
  int world_size = 1;
  std::vector<MetricAcrossRanks> metrics;  // in the order the ranks gave them

  /// The metric named `name`, or nullptr.
  const MetricAcrossRanks* find(std::string_view name) const;
  /// {"world_size": N, "metrics": {name: {"combine", "per_rank", "aggregate", "min", "max",
  /// "spread"}}}.
  nlohmann::json to_json() const;
  /// A table with one row per rank plus "all" (aggregate) and "spread" rows; `columns` picks and
  /// orders the metrics shown (all when empty).
  std::string render(const std::string& title, std::span<const std::string> columns = {}) const;
};

/// Gathers every rank's metrics. Collective. All ranks must pass the same names and combine
/// kinds in the same order (else every rank throws kInternal). Every rank receives the full
/// report (one allgather per metric: the data is tiny).
RankReport gather_rank_report(Comm& comm, std::span<const RankMetric> metrics);

/// One row of the rank scaling table.
struct RankScalingRow {
  int ranks = 1;
  double global_batch_s = 0;  // slowest rank's seconds per batch: time per global batch
  double samples_per_s = 0;   // sum over ranks
  double startup_s = 0;       // slowest rank's time to first batch
  double speedup = 1;         // samples_per_s / samples_per_s of the smallest rank count
  double efficiency = 1;      // speedup / (ranks / smallest rank count)
  RankReport report;
};

RankReport rank_report_from_json(const nlohmann::json& json);

/// Metric names the scaling table reads; measure() must report them.
inline constexpr std::string_view kSamplesPerS = "samples_per_s";    // kSum
inline constexpr std::string_view kSecondsPerBatch = "s_per_batch";  // kMax
inline constexpr std::string_view kStartupSeconds = "startup_s";     // kMax

/// For each k of `rank_counts` (1 <= k <= world.size(), validated on every rank first), the first
/// k ranks of `world` call measure(sub) with a communicator of k ranks and report their metrics;
/// the other ranks wait. Collective over `world`; every rank returns the rows (ranks that sat a
/// step out still learn its row). Errors inside measure() reach every rank (run_on_all_ranks).
std::vector<RankScalingRow> run_rank_sweep(
    Comm& world, std::span<const int> rank_counts,
    const std::function<std::vector<RankMetric>(Comm& sub)>& measure);

/// Fills speedup and efficiency of `rows` against the row with the fewest ranks.
void compute_rank_scaling(std::vector<RankScalingRow>& rows);

/// The scaling table: ranks, global batch time, samples/s, speedup, efficiency, start-up.
std::string render_rank_scaling(std::span<const RankScalingRow> rows);
nlohmann::json to_json(std::span<const RankScalingRow> rows);

/// Removes the `ranks=...` axis from sweep arguments written like the bench's other axes
/// ("ranks=1,2,4", "threads=1,2 ranks=1,2", "ranks=1,2,threads=4") and returns its values in the
/// order given, duplicates removed; `arguments` keeps the other axes. Empty when absent. Throws
/// kInvalidArgument for values that are not positive integers.
std::vector<int> take_ranks_axis(std::vector<std::string>& arguments);

/// Per-rank batch size when a global batch of `global_batch` is split across `ranks` ranks:
/// ceil(global_batch / ranks), so the real global batch is that times `ranks` (equal when
/// divisible). Preconditions: both >= 1.
int64_t per_rank_batch(int64_t global_batch, int ranks);

}  // namespace chute::dist
