#include "chute/dataset/computed_forcings.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "chute/util/error.h"

namespace chute {

namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;
constexpr double kSolarConstant = 1361.0;  // W m⁻²
constexpr int64_t kDay = 86400;

/// Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (H. Hinnant's algorithm).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

int64_t year_of_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
}

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

double computed_forcing(ComputedForcing kind, int64_t seconds, double lat, double lon) {
  const int64_t days = seconds >= 0 ? seconds / kDay : -((-seconds + kDay - 1) / kDay);
  const double hours = static_cast<double>(seconds - days * kDay) / 3600.0;
  const int64_t year = year_of_days(days);
  const int64_t jan1 = days_from_civil(year, 1, 1);
  const auto year_days = static_cast<double>(days_from_civil(year + 1, 1, 1) - jan1);
  const double day_of_year = static_cast<double>(days - jan1) + hours / 24.0;
  const double local = hours + lon / 15.0;
  switch (kind) {
    case ComputedForcing::kCosLocalTime:
      return std::cos(kTwoPi * local / 24.0);
    case ComputedForcing::kSinLocalTime:
      return std::sin(kTwoPi * local / 24.0);
    case ComputedForcing::kCosDayOfYear:
      return std::cos(kTwoPi * day_of_year / year_days);
    case ComputedForcing::kSinDayOfYear:
      return std::sin(kTwoPi * day_of_year / year_days);
    case ComputedForcing::kToa:
      break;
  }
  const double g = kTwoPi * day_of_year / year_days;
  const double e0 = 1.000110 + 0.034221 * std::cos(g) + 0.001280 * std::sin(g) +
                    0.000719 * std::cos(2 * g) + 0.000077 * std::sin(2 * g);
  const double decl = 0.006918 - 0.399912 * std::cos(g) + 0.070257 * std::sin(g) -
                      0.006758 * std::cos(2 * g) + 0.000907 * std::sin(2 * g) -
                      0.002697 * std::cos(3 * g) + 0.00148 * std::sin(3 * g);
  const double eot = 229.18 * (0.000075 + 0.001868 * std::cos(g) - 0.032077 * std::sin(g) -
                               0.014615 * std::cos(2 * g) - 0.040849 * std::sin(2 * g));
  const double hour_angle = kTwoPi * (local + eot / 60.0 - 12.0) / 24.0;
  const double phi = lat * std::numbers::pi / 180.0;
  const double cos_zenith =
      std::sin(phi) * std::sin(decl) + std::cos(phi) * std::cos(decl) * std::cos(hour_angle);
  return kSolarConstant * e0 * std::max(0.0, cos_zenith);
}

}  // namespace chute
