#pragma once
// `chute bench` across ranks: what `mpirun -np N chute bench ...` does.
//
// Without `--sweep ranks=...`: every rank runs the whole benchmark on its own share (rank r of N,
// --batch-size samples per rank, so the global batch is batch_size × N); the ranks start
// together after a barrier; rank 0 adds a "ranks" section with each rank's figures of the io
// mode, the aggregate (throughput and bytes summed, times from the slowest rank) and the spread
// (max / min), and prints it after its own report. Peers run on rank 0 only.
//
// With `--sweep ranks=1,2,4`: --batch-size is the GLOBAL batch (strong scaling, the question
// "how fast is one global batch read on k ranks"); for each k the first k ranks read
// ceil(batch / k) samples each in io mode while the others wait (see rank_report.h for why this
// runs on sub-communicators instead of re-launching mpirun). Needs at least max(k) ranks.
//
// Failures: the dataset is opened on every rank first and the outcome agreed on, so a rank that
// cannot open its data makes every rank fail with the same message naming it; any later error
// on one rank reaches all of them too (run_on_all_ranks), never a hang.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "chute/bench/bench_session.h"
#include "chute/dist/comm.h"

namespace chute::dist {

using BenchLog = std::function<void(const std::string&)>;

/// Runs the benchmark as described above. Collective over `comm`. Returns rank 0's report
/// (with its "ranks" section, or the rank sweep document) on rank 0 and the rank's own report
/// elsewhere. With one rank and no ranks sweep it is bench::run_bench unchanged.
nlohmann::json run_bench_on_ranks(Comm& comm, bench::BenchOptions options, const BenchLog& log);

/// The terminal text for rank 0: the usual report, then the per-rank table; or, for a rank
/// sweep, the per-k rank tables and the scaling table.
std::string render_bench_on_ranks(const nlohmann::json& report);

/// Seconds since this process started (Linux /proc), NaN where unknown: how long the launcher,
/// MPI start-up and program start took before the benchmark began.
double seconds_since_process_start();

}  // namespace chute::dist
