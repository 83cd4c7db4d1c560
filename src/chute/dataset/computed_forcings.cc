#include "chute/dataset/computed_forcings.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "chute/util/civil_date.h"
#include "chute/util/error.h"

namespace chute {

namespace {

using detail::days_from_civil;
using detail::year_of_days;

constexpr double kTwoPi = 2 * std::numbers::pi;
constexpr double kSolarConstant = 1361.0;  // W m⁻²
constexpr int64_t kDay = 86400;

}  // namespace

ComputedForcing parse_computed_forcing(const std::string& name) {
  if (name == "cos_local_time") return ComputedForcing::kCosLocalTime;
  if (name == "sin_local_time") return ComputedForcing::kSinLocalTime;
  if (name == "cos_day_of_year") return ComputedForcing::kCosDayOfYear;
  if (name == "sin_day_of_year") return ComputedForcing::kSinDayOfYear;
  if (name == "toa_radiation") return ComputedForcing::kToa;
  fail(ErrorCode::kInvalidArgument,
       "computed forcing '{}' is not one of cos_local_time, sin_local_time, cos_day_of_year, "
       "sin_day_of_year, toa_radiation",
       name);
}

namespace {

/// What a forcing needs from the date alone.
struct SolarDate {
  double hours = 0;  // since 00:00 UTC of the day
  double g = 0;      // 2π · day of the year / days in the year
  double s0_e0 = 0;  // S0 · E0
  double sin_decl = 0, cos_decl = 0;
  double eot_hours = 0;  // EoT / 60
};

SolarDate solar_date(int64_t seconds) {
  SolarDate d;
  const int64_t days = seconds >= 0 ? seconds / kDay : -((-seconds + kDay - 1) / kDay);
  d.hours = static_cast<double>(seconds - days * kDay) / 3600.0;
  const int64_t year = year_of_days(days);
  const int64_t jan1 = days_from_civil(year, 1, 1);
  const auto year_days = static_cast<double>(days_from_civil(year + 1, 1, 1) - jan1);
  const double day_of_year = static_cast<double>(days - jan1) + d.hours / 24.0;
  d.g = kTwoPi * day_of_year / year_days;
  const double g = d.g;
  const double e0 = 1.000110 + 0.034221 * std::cos(g) + 0.001280 * std::sin(g) +
                    0.000719 * std::cos(2 * g) + 0.000077 * std::sin(2 * g);
  d.s0_e0 = kSolarConstant * e0;
  const double decl = 0.006918 - 0.399912 * std::cos(g) + 0.070257 * std::sin(g) -
                      0.006758 * std::cos(2 * g) + 0.000907 * std::sin(2 * g) -
                      0.002697 * std::cos(3 * g) + 0.00148 * std::sin(3 * g);
  d.sin_decl = std::sin(decl);
  d.cos_decl = std::cos(decl);
  const double eot = 229.18 * (0.000075 + 0.001868 * std::cos(g) - 0.032077 * std::sin(g) -
                               0.014615 * std::cos(2 * g) - 0.040849 * std::sin(2 * g));
  d.eot_hours = eot / 60.0;
  return d;
}

/// The part of a forcing that depends on the column (longitude): the whole value for the
/// local-time forcings, cos(hour angle) for toa_radiation.
double column_term(ComputedForcing kind, const SolarDate& d, double lon) {
  const double local = d.hours + lon / 15.0;
  switch (kind) {
    case ComputedForcing::kCosLocalTime:
      return std::cos(kTwoPi * local / 24.0);
    case ComputedForcing::kSinLocalTime:
      return std::sin(kTwoPi * local / 24.0);
    case ComputedForcing::kToa:
      return std::cos(kTwoPi * (local + d.eot_hours - 12.0) / 24.0);
    default:
      return 0;
  }
}

/// cos θ = a + b · cos(hour angle): a = sin φ sin δ, b = cos φ cos δ.
struct RowTerms {
  double a = 0, b = 0;
};

RowTerms row_terms(const SolarDate& d, double lat) {
  const double phi = lat * std::numbers::pi / 180.0;
  return {std::sin(phi) * d.sin_decl, std::cos(phi) * d.cos_decl};
}

double toa(const SolarDate& d, RowTerms row, double cos_hour_angle) {
  return d.s0_e0 * std::max(0.0, row.a + row.b * cos_hour_angle);
}

double day_of_year_value(ComputedForcing kind, const SolarDate& d) {
  return kind == ComputedForcing::kCosDayOfYear ? std::cos(d.g) : std::sin(d.g);
}

}  // namespace

double computed_forcing(ComputedForcing kind, int64_t seconds, double lat, double lon) {
  const SolarDate d = solar_date(seconds);
  switch (kind) {
    case ComputedForcing::kCosDayOfYear:
    case ComputedForcing::kSinDayOfYear:
      return day_of_year_value(kind, d);
    case ComputedForcing::kToa:
      return toa(d, row_terms(d, lat), column_term(kind, d, lon));
    default:
      return column_term(kind, d, lon);
  }
}

void computed_forcing_run(ComputedForcing kind, int64_t seconds, std::span<const double> lats,
                          std::span<const double> lons, int64_t p0, int64_t n, float* out) {
  if (n <= 0) return;
  const SolarDate d = solar_date(seconds);
  if (kind == ComputedForcing::kCosDayOfYear || kind == ComputedForcing::kSinDayOfYear) {
    std::fill(out, out + n, static_cast<float>(day_of_year_value(kind, d)));
    return;
  }
  const auto width = static_cast<int64_t>(lons.size());
  // The columns this run touches: all of them once it covers a row.
  const int64_t x_first = n >= width ? 0 : p0 % width;
  const int64_t columns = std::min(n, width);
  thread_local std::vector<double> column;
  column.resize(static_cast<size_t>(columns));
  for (int64_t k = 0; k < columns; ++k) {
    const int64_t x = (x_first + k) % width;
    column[static_cast<size_t>(k)] = column_term(kind, d, lons[static_cast<size_t>(x)]);
  }
  int64_t p = p0;
  for (int64_t i = 0; i < n;) {
    const int64_t y = p / width, x = p % width;
    const int64_t run = std::min(n - i, width - x);
    const double* terms =
        column.data() + (n >= width ? x : x - x_first + (x < x_first ? width : 0));
    if (kind == ComputedForcing::kToa) {
      const RowTerms row = row_terms(d, lats[static_cast<size_t>(y)]);
      for (int64_t k = 0; k < run; ++k) out[i + k] = static_cast<float>(toa(d, row, terms[k]));
    } else {
      for (int64_t k = 0; k < run; ++k) out[i + k] = static_cast<float>(terms[k]);
    }
    i += run;
    p += run;
  }
}

}  // namespace chute
