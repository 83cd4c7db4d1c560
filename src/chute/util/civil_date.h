#pragma once
// Proleptic Gregorian dates as days since 1970-01-01 and back (H. Hinnant's algorithms,
// http://howardhinnant.github.io/date_algorithms.html), shared by the CF time decoder and the
// computed forcings.

#include <cstdint>

namespace chute::detail {

/// Days from 1970-01-01 to y-m-d (m in 1..12, d in 1..31).
constexpr int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct CivilDate {
  int64_t year, month, day;
};

/// The date `days` after 1970-01-01 (proleptic Gregorian; Howard Hinnant's civil_from_days).
constexpr CivilDate civil_from_days(int64_t days) {
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  return {yoe + era * 400 + (m <= 2), m, d};
}

/// The year of the date `days` after 1970-01-01.
constexpr int64_t year_of_days(int64_t days) { return civil_from_days(days).year; }

static_assert(civil_from_days(11016).month == 2 && civil_from_days(11016).day == 29);
static_assert(year_of_days(-1) == 1969 && year_of_days(11016) == 2000 && year_of_days(0) == 1970);

}  // namespace chute::detail
