#include "chute/bench/sweep.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>

#include "chute/util/error.h"

namespace chute::bench {
namespace {

std::vector<std::string_view> split(std::string_view text, std::string_view separators) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(separators, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

int parse_positive(std::string_view text, std::string_view axis) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) {
    fail(ErrorCode::kInvalidArgument, "sweep axis '{}': expected a positive integer, got '{}'",
         axis, text);
  }
  return value;
}

// Points that differ only in threads scale against each other.
std::tuple<int, int, int> group_of(const LoaderSetting& s) {
  return {s.prefetch, s.batch_size, s.io_concurrency};
}

std::vector<int>* axis_named(SweepSpec& spec, std::string_view name) {
  if (name == "threads") return &spec.threads;
  if (name == "prefetch") return &spec.prefetch;
  if (name == "batch" || name == "batch_size" || name == "batch-size") return &spec.batch_size;
  if (name == "io_concurrency" || name == "io-concurrency" || name == "io") {
    return &spec.io_concurrency;
  }
  return nullptr;
}

double sum_of_squares(std::span<const std::pair<double, double>> data, double serial, double base) {
  const double base_speedup = amdahl_speedup(serial, base);
  double total = 0;
  for (auto [n, speedup] : data) {
    const double residual = speedup - amdahl_speedup(serial, n) / base_speedup;
    total += residual * residual;
  }
  return total;
}

}  // namespace

SweepSpec parse_sweep(std::span<const std::string> arguments) {
  SweepSpec spec;
  std::vector<int>* current = nullptr;
  std::string current_name;
  for (const std::string& argument : arguments) {
    for (std::string_view token : split(argument, " \t;,")) {
      std::string_view value = token;
      if (size_t eq = token.find('='); eq != std::string_view::npos) {
        current_name = std::string(token.substr(0, eq));
        current = axis_named(spec, current_name);
        if (current == nullptr) {
          fail(ErrorCode::kInvalidArgument,
               "sweep: unknown axis '{}' (expected threads, prefetch, batch or io_concurrency)",
               current_name);
        }
        if (!current->empty())
          fail(ErrorCode::kInvalidArgument, "sweep: axis '{}' given twice", current_name);
        value = token.substr(eq + 1);
        if (value.empty()) continue;
      }
      if (current == nullptr) {
        fail(ErrorCode::kInvalidArgument, "sweep: expected AXIS=V1,V2,... got '{}'", argument);
      }
      const int parsed = parse_positive(value, current_name);
      if (std::find(current->begin(), current->end(), parsed) == current->end()) {
        current->push_back(parsed);
      }
    }
  }
  if (current != nullptr && current->empty()) {
    fail(ErrorCode::kInvalidArgument, "sweep: axis '{}' has no values", current_name);
  }
  return spec;
}

std::vector<LoaderSetting> expand(const SweepSpec& spec, const LoaderSetting& base) {
  auto or_base = [](const std::vector<int>& axis, int value) {
    return axis.empty() ? std::vector<int>{value} : axis;
  };
  std::vector<LoaderSetting> settings;
  for (int io : or_base(spec.io_concurrency, base.io_concurrency)) {
    for (int batch : or_base(spec.batch_size, base.batch_size)) {
      for (int prefetch : or_base(spec.prefetch, base.prefetch)) {
        for (int threads : or_base(spec.threads, base.threads)) {
          settings.push_back({threads, prefetch, batch, io});
        }
      }
    }
  }
  return settings;
}

std::vector<ScalingRow> scaling_table(std::span<const SweepPoint> points) {
  // (prefetch, batch, io_concurrency) -> points
  std::map<std::tuple<int, int, int>, std::vector<size_t>> groups;
  std::vector<std::tuple<int, int, int>> order;
  for (size_t i = 0; i < points.size(); ++i) {
    auto key = group_of(points[i].setting);
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(i);
  }
  std::vector<ScalingRow> rows;
  for (const auto& key : order) {
    const auto& members = groups[key];
    size_t base = members.front();
    for (size_t i : members) {
      if (points[i].setting.threads < points[base].setting.threads) base = i;
    }
    for (size_t i : members) {
      ScalingRow row;
      row.setting = points[i].setting;
      row.samples_per_s = points[i].samples_per_s;
      row.base_threads = points[base].setting.threads;
      const double base_rate = points[base].samples_per_s;
      row.speedup = base_rate > 0 ? points[i].samples_per_s / base_rate : 0;
      row.efficiency =
          row.speedup * static_cast<double>(row.base_threads) / points[i].setting.threads;
      rows.push_back(row);
    }
  }
  return rows;
}

double amdahl_speedup(double serial, double n) { return 1.0 / (serial + (1.0 - serial) / n); }

AmdahlFit fit_amdahl(std::span<const std::pair<double, double>> data, double base_threads) {
  bool informative = false;
  for (auto [n, speedup] : data) {
    if (!(n > 0) || !(speedup > 0) || !std::isfinite(speedup)) {
      fail(ErrorCode::kInvalidArgument,
           "Amdahl fit: expected positive (threads, speedup), got ({}, {})", n, speedup);
    }
    informative |= n != base_threads;
  }
  if (!informative) {
    fail(ErrorCode::kInvalidArgument, "Amdahl fit: needs a thread count other than the base {}",
         base_threads);
  }
  // One parameter on [0, 1]: a coarse grid finds the basin, golden-section search refines it.
  constexpr int kGrid = 2000;
  int best = 0;
  double best_value = sum_of_squares(data, 0, base_threads);
  for (int i = 1; i <= kGrid; ++i) {
    const double value = sum_of_squares(data, static_cast<double>(i) / kGrid, base_threads);
    if (value < best_value) best_value = value, best = i;
  }
  double lo = std::max(0, best - 1) / double{kGrid};
  double hi = std::min(kGrid, best + 1) / double{kGrid};
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  for (int iteration = 0; iteration < 100; ++iteration) {
    const double a = hi - ratio * (hi - lo), b = lo + ratio * (hi - lo);
    if (sum_of_squares(data, a, base_threads) < sum_of_squares(data, b, base_threads)) {
      hi = b;
    } else {
      lo = a;
    }
  }
  AmdahlFit fit;
  fit.serial_fraction = (lo + hi) / 2;
  if (sum_of_squares(data, best / double{kGrid}, base_threads) <
      sum_of_squares(data, fit.serial_fraction, base_threads)) {
    fit.serial_fraction = best / double{kGrid};
  }
  fit.points = data.size();
  fit.base_threads = base_threads;
  fit.rms_residual = std::sqrt(sum_of_squares(data, fit.serial_fraction, base_threads) /
                               static_cast<double>(data.size()));
  fit.predicted_speedup_16 = amdahl_speedup(fit.serial_fraction, 16);
  fit.predicted_speedup_64 = amdahl_speedup(fit.serial_fraction, 64);
  return fit;
}

std::optional<AmdahlFit> fit_amdahl(std::span<const ScalingRow> rows) {
  std::map<std::tuple<int, int, int>, std::vector<std::pair<double, double>>> groups;
  std::map<std::tuple<int, int, int>, int> bases;
  for (const ScalingRow& row : rows) {
    if (row.speedup <= 0) continue;
    auto key = group_of(row.setting);
    groups[key].emplace_back(row.setting.threads, row.speedup);
    bases[key] = row.base_threads;
  }
  const std::vector<std::pair<double, double>>* chosen = nullptr;
  int base = 1;
  for (const auto& [key, data] : groups) {
    if (data.size() >= 2 && (chosen == nullptr || data.size() > chosen->size())) {
      chosen = &data;
      base = bases[key];
    }
  }
  if (chosen == nullptr) return std::nullopt;
  return fit_amdahl(*chosen, base);
}

size_t recommend(std::span<const SweepPoint> points, double tolerance) {
  if (points.empty()) fail(ErrorCode::kInvalidArgument, "recommend: no sweep points");
  double best = 0;
  for (const SweepPoint& p : points) best = std::max(best, p.samples_per_s);
  size_t chosen = points.size();
  auto cost = [&](size_t i) {
    const LoaderSetting& s = points[i].setting;
    return std::tuple{s.threads, s.prefetch, s.batch_size, s.io_concurrency};
  };
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].samples_per_s < (1.0 - tolerance) * best) continue;
    if (chosen == points.size() || cost(i) < cost(chosen)) chosen = i;
  }
  return chosen;
}

nlohmann::json to_json(const LoaderSetting& s) {
  return {{"threads", s.threads},
          {"prefetch", s.prefetch},
          {"batch_size", s.batch_size},
          {"io_concurrency", s.io_concurrency}};
}

nlohmann::json to_json(const AmdahlFit& fit) {
  return {{"serial_fraction", fit.serial_fraction},
          {"rms_residual", fit.rms_residual},
          {"base_threads", fit.base_threads},
          {"points", fit.points},
          {"predicted_speedup_16", fit.predicted_speedup_16},
          {"predicted_speedup_64", fit.predicted_speedup_64}};
}

}  // namespace chute::bench
