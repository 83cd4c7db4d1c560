// `chute stats STORE --out stats.zarr [--start DATE] [--end DATE] [--variables ...]`: the
// normalisation statistics of a weather store, computed by the Python package
// (chute.weather_stats: reads through chute's own decoded reads, float64 accumulation with
// NumPy, Zarr output with zarr-python), run with the interpreter `chute bench` uses for its
// peers. The Python side owns the computation so that `chute.statistics()` and the CLI cannot
// disagree.
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "chute/bench/python_tools.h"
#include "chute/util/error.h"
#include "commands.h"

namespace chute::cli {

void register_stats(CLI::App& app) {
  struct Flags {
    std::string store, out, start, end;
    std::vector<std::string> variables;
    int threads = 0;
    bool per_gridpoint = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* stats = app.add_subcommand(
      "stats",
      "per-variable/per-level mean, std, min, max and time-difference statistics of a "
      "weather store, written as a Zarr group for chute.windows(statistics=...)");
  stats->add_option("STORE", flags->store, "Zarr group (as xarray writes it)")->required();
  stats->add_option("--out", flags->out, "output Zarr group")->required();
  stats->add_option("--start", flags->start, "first date (inclusive), e.g. 1979-01-01");
  stats->add_option("--end", flags->end, "last date (inclusive), e.g. 2017-12-31T18");
  stats->add_option("--variables", flags->variables, "variables (default: every one with time)");
  stats->add_option("--threads", flags->threads, "reader threads (0: one per core)");
  stats->add_flag("--per-gridpoint", flags->per_gridpoint,
                  "statistics over time per (level, lat, lon) point: arrays (level, lat, lon) "
                  "and the group attribute per_gridpoint = true");
  stats->callback([flags] {
    std::string command =
        bench::shell_quote(bench::find_python()) +
        " -c 'import sys; from chute.weather_stats import main; sys.exit(main())' " +
        bench::shell_quote(flags->store) + " --out " + bench::shell_quote(flags->out);
    if (!flags->start.empty()) command += " --start " + bench::shell_quote(flags->start);
    if (!flags->end.empty()) command += " --end " + bench::shell_quote(flags->end);
    if (!flags->variables.empty()) {
      command += " --variables";
      for (const std::string& v : flags->variables) command += " " + bench::shell_quote(v);
    }
    if (flags->threads > 0) command += " --threads " + std::to_string(flags->threads);
    if (flags->per_gridpoint) command += " --per-gridpoint";
    const int status = std::system(command.c_str());
    if (status == -1 || !WIFEXITED(status)) {
      fail(ErrorCode::kIoError, "stats: could not run {}", command);
    }
    if (WEXITSTATUS(status) != 0) {
      fail(ErrorCode::kInvalidArgument, "stats: the Python helper exited with {} ({})",
           WEXITSTATUS(status), command);
    }
  });
}

}  // namespace chute::cli
