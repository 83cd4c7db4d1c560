#pragma once
// Summary statistics of repeated measurements (trials, batch times): mean, sample standard
// deviation and percentiles, as the benchmark reports them.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

namespace chute::bench {

struct Summary {
  size_t count = 0;
  double mean = 0;
  double std = 0;  // sample standard deviation (n - 1); 0 when count < 2
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};

/// Mean, sample standard deviation, min/max and percentiles of `values`. All zero when empty.
Summary summarize(std::span<const double> values);

/// The p-th percentile (p in [0, 100]) of `values` with linear interpolation between closest
/// ranks (NumPy's default). Precondition: values is not empty.
double percentile(std::span<const double> values, double p);

/// {"mean", "std", "min", "max", "p50", "p90", "p99", "count"}.
nlohmann::json to_json(const Summary& summary);

}  // namespace chute::bench
