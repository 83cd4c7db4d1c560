#include "chute/bench/stats.h"

#include <algorithm>
#include <cmath>

#include "chute/util/error.h"

namespace chute::bench {
namespace {

double percentile_of_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.size() == 1) return sorted.front();
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

}  // namespace

double percentile(std::span<const double> values, double p) {
  if (values.empty()) fail(ErrorCode::kInvalidArgument, "percentile of no values");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return percentile_of_sorted(sorted, p);
}

Summary summarize(std::span<const double> values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double v : sorted) sum += v;
  s.mean = sum / static_cast<double>(s.count);
  if (s.count > 1) {
    double squares = 0;
    for (double v : sorted) squares += (v - s.mean) * (v - s.mean);
    s.std = std::sqrt(squares / static_cast<double>(s.count - 1));
  }
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = percentile_of_sorted(sorted, 50);
  s.p90 = percentile_of_sorted(sorted, 90);
  s.p99 = percentile_of_sorted(sorted, 99);
  return s;
}

nlohmann::json to_json(const Summary& s) {
  return {{"mean", s.mean}, {"std", s.std}, {"min", s.min}, {"max", s.max},
          {"p50", s.p50},   {"p90", s.p90}, {"p99", s.p99}, {"count", s.count}};
}

}  // namespace chute::bench
