#include "chute/dist/rank_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "chute/bench/table.h"
#include "chute/dist/all_ranks.h"
#include "chute/util/error.h"

namespace chute::dist {
namespace {

const char* combine_name(Combine combine) {
  switch (combine) {
    case Combine::kSum:
      return "sum";
    case Combine::kMax:
      return "max";
    case Combine::kMin:
      return "min";
    case Combine::kMean:
      return "mean";
  }
  return "sum";
}

Combine combine_from_name(const std::string& name) {
  for (Combine c : {Combine::kSum, Combine::kMax, Combine::kMin, Combine::kMean}) {
    if (name == combine_name(c)) return c;
  }
  fail(ErrorCode::kInvalidArgument, "rank report: unknown combine \"{}\"", name);
}

// FNV-1a over the metric names and combine kinds: equal on every rank that reports the same list.
int64_t signature(std::span<const RankMetric> metrics) {
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&](std::string_view text) {
    for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
    hash = (hash ^ 0xff) * 1099511628211ull;
  };
  for (const RankMetric& metric : metrics) {
    mix(metric.name);
    mix(combine_name(metric.combine));
  }
  return static_cast<int64_t>(hash >> 1);
}

double combine_values(const std::vector<double>& values, Combine combine) {
  if (values.empty()) return 0;
  switch (combine) {
    case Combine::kSum: {
      double sum = 0;
      for (double v : values) sum += v;
      return sum;
    }
    case Combine::kMax:
      return *std::max_element(values.begin(), values.end());
    case Combine::kMin:
      return *std::min_element(values.begin(), values.end());
    case Combine::kMean: {
      double sum = 0;
      for (double v : values) sum += v;
      return sum / static_cast<double>(values.size());
    }
  }
  return 0;
}

// A JSON number, or null for NaN/infinity (JSON has no such numbers).
nlohmann::json number(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

}  // namespace

double MetricAcrossRanks::spread() const {
  if (min == max) return 1;
  if (min == 0) return std::numeric_limits<double>::quiet_NaN();
  return max / min;
}

const MetricAcrossRanks* RankReport::find(std::string_view name) const {
  for (const MetricAcrossRanks& metric : metrics) {
    if (metric.name == name) return &metric;
  }
  return nullptr;
}

nlohmann::json RankReport::to_json() const {
  nlohmann::json out = {{"world_size", world_size}, {"metrics", nlohmann::json::object()}};
  for (const MetricAcrossRanks& m : metrics) {
    nlohmann::json per_rank = nlohmann::json::array();
    for (double v : m.per_rank) per_rank.push_back(number(v));
    out["metrics"][m.name] = {{"combine", combine_name(m.combine)},
                              {"per_rank", per_rank},
                              {"aggregate", number(m.aggregate)},
                              {"min", number(m.min)},
                              {"max", number(m.max)},
                              {"spread", number(m.spread())}};
  }
  return out;
}

RankReport rank_report_from_json(const nlohmann::json& json) {
  RankReport report;
  report.world_size = json.at("world_size").get<int>();
  for (const auto& [name, m] : json.at("metrics").items()) {
    MetricAcrossRanks metric;
    metric.name = name;
    metric.combine = combine_from_name(m.at("combine").get<std::string>());
    auto value = [](const nlohmann::json& v) {
      return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
    };
    for (const auto& v : m.at("per_rank")) metric.per_rank.push_back(value(v));
    metric.aggregate = value(m.at("aggregate"));
    metric.min = value(m.at("min"));
    metric.max = value(m.at("max"));
    report.metrics.push_back(std::move(metric));
  }
  return report;
}

std::string RankReport::render(const std::string& title,
                               std::span<const std::string> columns) const {
  std::vector<const MetricAcrossRanks*> shown;
  if (columns.empty()) {
    for (const MetricAcrossRanks& m : metrics) shown.push_back(&m);
  } else {
    for (const std::string& name : columns) {
      if (const MetricAcrossRanks* m = find(name)) shown.push_back(m);
    }
  }
  std::vector<std::string> headers = {"rank"};
  for (const MetricAcrossRanks* m : shown) headers.push_back(m->name);
  bench::Table table(headers);
  for (int r = 0; r < world_size; ++r) {
    std::vector<std::string> row = {std::to_string(r)};
    for (const MetricAcrossRanks* m : shown) {
      row.push_back(r < static_cast<int>(m->per_rank.size()) ? bench::format_number(m->per_rank[r])
                                                             : "n/a");
    }
    table.add_row(std::move(row));
  }
  std::vector<std::string> all = {"all"};
  std::vector<std::string> spread = {"spread"};
  for (const MetricAcrossRanks* m : shown) {
    all.push_back(bench::format_number(m->aggregate) + " (" + combine_name(m->combine) + ")");
    spread.push_back(std::isfinite(m->spread()) ? bench::format_number(m->spread()) + "×"
                                                : std::string("n/a"));
  }
  table.add_row(std::move(all));
  table.add_row(std::move(spread));
  return table.render(title);
}

RankReport gather_rank_report(Comm& comm, std::span<const RankMetric> metrics) {
  const int64_t count = static_cast<int64_t>(metrics.size());
  const int64_t sig = signature(metrics);
  if (comm.allreduce_i64(count, ReduceOp::kMin) != comm.allreduce_i64(count, ReduceOp::kMax) ||
      comm.allreduce_i64(sig, ReduceOp::kMin) != comm.allreduce_i64(sig, ReduceOp::kMax)) {
    fail(ErrorCode::kInternal,
         "rank report: ranks reported different metric lists (rank {} has {} metrics)", comm.rank(),
         count);
  }
  RankReport report;
  report.world_size = comm.size();
  for (const RankMetric& metric : metrics) {
    MetricAcrossRanks m;
    m.name = metric.name;
    m.combine = metric.combine;
    m.per_rank = comm.allgather_f64(metric.value);
    m.aggregate = combine_values(m.per_rank, metric.combine);
    m.min = combine_values(m.per_rank, Combine::kMin);
    m.max = combine_values(m.per_rank, Combine::kMax);
    report.metrics.push_back(std::move(m));
  }
  return report;
}

void compute_rank_scaling(std::vector<RankScalingRow>& rows) {
  if (rows.empty()) return;
  const RankScalingRow* base = &rows[0];
  for (const RankScalingRow& row : rows) {
    if (row.ranks < base->ranks) base = &row;
  }
  const double base_rate = base->samples_per_s;
  const int base_ranks = base->ranks;
  for (RankScalingRow& row : rows) {
    row.speedup =
        base_rate > 0 ? row.samples_per_s / base_rate : std::numeric_limits<double>::quiet_NaN();
    row.efficiency = row.speedup / (static_cast<double>(row.ranks) / base_ranks);
  }
}

std::vector<RankScalingRow> run_rank_sweep(
    Comm& world, std::span<const int> rank_counts,
    const std::function<std::vector<RankMetric>(Comm& sub)>& measure) {
  for (int k : rank_counts) {
    if (k < 1 || k > world.size()) {
      fail(ErrorCode::kInvalidArgument,
           "--sweep ranks: expected rank counts between 1 and {} (the ranks launched), got {}; "
           "launch with at least {} ranks (mpirun -np {} ...)",
           world.size(), k, k, k);
    }
  }
  std::vector<RankScalingRow> rows;
  for (int k : rank_counts) {
    std::unique_ptr<Comm> sub = world.first_ranks(k);
    std::vector<RankMetric> metrics;
    run_on_all_ranks(world, fmt::format("the benchmark on {} rank(s)", k), [&] {
      if (sub) metrics = measure(*sub);
    });
    std::string row_json;
    if (sub) {
      RankReport report = gather_rank_report(*sub, metrics);
      if (sub->rank() == 0) row_json = report.to_json().dump();
    }
    RankReport report = rank_report_from_json(
        nlohmann::json::parse(world.broadcast_from_root(std::move(row_json))));
    RankScalingRow row;
    row.ranks = k;
    auto aggregate = [&](std::string_view name) {
      const MetricAcrossRanks* m = report.find(name);
      if (m == nullptr) {
        fail(ErrorCode::kInternal, "--sweep ranks: the measurement did not report \"{}\"", name);
      }
      return m->aggregate;
    };
    row.samples_per_s = aggregate(kSamplesPerS);
    row.global_batch_s = aggregate(kSecondsPerBatch);
    row.startup_s = aggregate(kStartupSeconds);
    row.report = std::move(report);
    rows.push_back(std::move(row));
  }
  compute_rank_scaling(rows);
  return rows;
}

std::string render_rank_scaling(std::span<const RankScalingRow> rows) {
  bench::Table table(
      {"ranks", "s/global batch", "samples/s", "speedup", "efficiency", "start-up", "rank spread"});
  for (const RankScalingRow& row : rows) {
    const MetricAcrossRanks* rate = row.report.find(kSamplesPerS);
    const double spread = rate ? rate->spread() : std::numeric_limits<double>::quiet_NaN();
    table.add_row({std::to_string(row.ranks), bench::format_seconds(row.global_batch_s),
                   bench::format_number(row.samples_per_s), bench::format_number(row.speedup),
                   bench::format_percent(row.efficiency), bench::format_seconds(row.startup_s),
                   std::isfinite(spread) ? bench::format_number(spread) + "×" : "n/a"});
  }
  return table.render("Scaling across ranks (speedup and efficiency vs the fewest ranks)");
}

nlohmann::json to_json(std::span<const RankScalingRow> rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const RankScalingRow& row : rows) {
    out.push_back({{"ranks", row.ranks},
                   {"global_batch_s", number(row.global_batch_s)},
                   {"samples_per_s", number(row.samples_per_s)},
                   {"speedup", number(row.speedup)},
                   {"efficiency", number(row.efficiency)},
                   {"startup_s", number(row.startup_s)},
                   {"report", row.report.to_json()}});
  }
  return out;
}

std::vector<int> take_ranks_axis(std::vector<std::string>& arguments) {
  std::vector<int> ranks;
  std::vector<std::string> kept;
  for (const std::string& argument : arguments) {
    // Split into parts on spaces and commas; a part with '=' starts an axis.
    std::vector<std::string> parts;
    std::string part;
    for (char c : argument + " ") {
      if (c == ' ' || c == ',') {
        if (!part.empty()) parts.push_back(part);
        part.clear();
      } else {
        part += c;
      }
    }
    bool in_ranks = false;
    std::string rest;
    for (const std::string& p : parts) {
      std::string value = p;
      if (size_t eq = p.find('='); eq != std::string::npos) {
        in_ranks = p.substr(0, eq) == "ranks";
        if (!in_ranks) {
          rest += (rest.empty() ? "" : " ") + p;
          continue;
        }
        value = p.substr(eq + 1);
      } else if (!in_ranks) {
        rest += "," + p;
        continue;
      }
      int k = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), k);
      if (ec != std::errc() || ptr != value.data() + value.size() || k < 1) {
        fail(ErrorCode::kInvalidArgument,
             "--sweep ranks: expected positive integers like ranks=1,2,4, got \"{}\"", value);
      }
      if (std::find(ranks.begin(), ranks.end(), k) == ranks.end()) ranks.push_back(k);
    }
    if (!rest.empty()) kept.push_back(rest);
  }
  arguments = std::move(kept);
  return ranks;
}

int64_t per_rank_batch(int64_t global_batch, int ranks) {
  if (global_batch < 1 || ranks < 1) {
    fail(ErrorCode::kInvalidArgument, "expected a global batch >= 1 and ranks >= 1, got {} and {}",
         global_batch, ranks);
  }
  return (global_batch + ranks - 1) / ranks;
}

}  // namespace chute::dist
