// CF time units and calendars (cf_time.h): the parser on the forms xarray, netCDF and CDS write,
// the seconds of integer and float values, and errors that name the array and the attribute.
// python/tests/test_cf_time.py checks the decoded coordinates against xarray.

#include "chute/dataset/cf_time.h"

#include <gtest/gtest.h>

#include "chute/util/error_test_util.h"

namespace chute {
namespace {

using testing::message_of;
using json = nlohmann::json;

constexpr int64_t k1979 = 283996800;  // 1979-01-01T00:00:00Z
constexpr int64_t kDay = 86400;

int64_t seconds_of(const std::string& units, int64_t value) {
  return cf_time_seconds(value, parse_cf_time_units(units, "time"), "time");
}

TEST(CfTime, ReadsUnitsAndReferenceDatesInTheUsualForms) {
  struct Row {
    const char* units;
    int64_t unit_ns;
    int64_t reference;
  };
  const Row rows[] = {
      {"hours since 1979-01-01", 3'600'000'000'000, k1979},
      {"hours since 1979-01-01 00:00:00", 3'600'000'000'000, k1979},
      {"hours since 1979-01-01T00:00:00", 3'600'000'000'000, k1979},
      {"Hours Since 1979-1-1 0:0:0", 3'600'000'000'000, k1979},
      {"days since 1979-01-01", kDay * 1'000'000'000, k1979},
      {"day since 1979-01-02 06:00", kDay * 1'000'000'000, k1979 + kDay + 6 * 3600},
      {"seconds since 1970-01-01 00:00:00 +05:00", 1'000'000'000, -5 * 3600},
      {"seconds since 1970-01-01T00:00:00Z", 1'000'000'000, 0},
      {"seconds since 1970-01-01 00:00:00 UTC", 1'000'000'000, 0},
      {"s since 1970-01-01 00:00:00-0130", 1'000'000'000, 90 * 60},
      {"minutes since 2000-02-29 12", 60'000'000'000, 951825600},
      {"milliseconds since 1969-12-31 23:59:59", 1'000'000, -1},
      {"microseconds since 1900-01-01", 1'000, -2208988800},
      {"nanoseconds since 2262-04-11", 1, 9223286400},
      {"  hours   since   1979-01-01   ", 3'600'000'000'000, k1979},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.units);
    const CfTimeUnits units = parse_cf_time_units(row.units, "time");
    EXPECT_EQ(units.unit_ns, row.unit_ns);
    EXPECT_EQ(units.reference_seconds, row.reference);
    EXPECT_EQ(units.reference_ns, 0);
    EXPECT_TRUE(looks_like_cf_time_units(row.units));
  }
  const CfTimeUnits fraction = parse_cf_time_units("seconds since 1970-01-01 00:00:00.25", "t");
  EXPECT_EQ(fraction.reference_seconds, 0);
  EXPECT_EQ(fraction.reference_ns, 250'000'000);
  EXPECT_FALSE(looks_like_cf_time_units("K"));
  EXPECT_FALSE(looks_like_cf_time_units("degrees_north"));
}

TEST(CfTime, IntegerAndFloatValuesGiveSeconds) {
  EXPECT_EQ(seconds_of("hours since 1979-01-01", 6), k1979 + 6 * 3600);
  EXPECT_EQ(seconds_of("hours since 1979-01-01", -30), k1979 - 30 * 3600);
  EXPECT_EQ(seconds_of("days since 1979-01-01", 366), k1979 + 366 * kDay);
  // Below a second: floored, as numpy's datetime64[ns] -> [s].
  EXPECT_EQ(seconds_of("milliseconds since 1970-01-01", 1500), 1);
  EXPECT_EQ(seconds_of("milliseconds since 1970-01-01", -1), -1);
  const CfTimeUnits hours = parse_cf_time_units("hours since 1979-01-01", "time");
  EXPECT_EQ(cf_time_seconds(0.5, hours, "time"), k1979 + 1800);
  EXPECT_EQ(cf_time_seconds(-0.25, hours, "time"), k1979 - 900);
  EXPECT_EQ(cf_time_seconds(std::nan(""), hours, "time"), kNotATime);
  // Far from the reference: whole seconds still right beyond the int64 nanosecond range.
  const CfTimeUnits days = parse_cf_time_units("days since 1000-01-01", "time");
  EXPECT_EQ(cf_time_seconds(365243.0, days, "time"), days.reference_seconds + 365243 * kDay);
  EXPECT_EQ(cf_time_seconds(int64_t{365243}, days, "time"), days.reference_seconds + 365243 * kDay);
  EXPECT_NE(message_of([&] { cf_time_seconds(int64_t{1} << 62, hours, "t2m_time"); },
                       ErrorCode::kOutOfRange)
                .find("array 't2m_time'"),
            std::string::npos);
  EXPECT_THROW(cf_time_seconds(1e300, hours, "time"), Error);
}

TEST(CfTime, BadUnitsNameTheArrayAndTheAttribute) {
  const char* bad[] = {
      "hours",
      "months since 1979-01-01",
      "years since 1979-01-01",
      "hours since 1979-13-01",
      "hours since 1979-02-30",
      "hours since 1979-01-01 25:00",
      "hours since 1979-01-01T",
      "hours since 1979-01-01 00:00:00 +5:00:00",
      "hours since yesterday",
      "hours since 1979-01-01 00:00 garbage",
      "hours since ",
  };
  for (const char* units : bad) {
    SCOPED_TRACE(units);
    const std::string message =
        message_of([&] { parse_cf_time_units(units, "valid_time"); }, ErrorCode::kInvalidMetadata);
    EXPECT_NE(message.find("array 'valid_time'"), std::string::npos) << message;
    EXPECT_NE(message.find("attribute 'units'"), std::string::npos) << message;
  }
}

TEST(CfTime, CalendarsOtherThanGregorianAreRefusedByName) {
  const CfTimeUnits modern = parse_cf_time_units("hours since 1979-01-01", "time");
  for (const char* ok : {"standard", "gregorian", "proleptic_gregorian", "Standard"}) {
    EXPECT_NO_THROW(check_cf_calendar(json{{"calendar", ok}}, modern, "time")) << ok;
  }
  EXPECT_NO_THROW(check_cf_calendar(json::object(), modern, "time"));
  for (const char* other : {"noleap", "365_day", "360_day", "julian", "all_leap"}) {
    const std::string message = message_of(
        [&] {
          check_cf_calendar(json{{"calendar", other}}, modern, "time");
        },
        ErrorCode::kUnsupported);
    EXPECT_NE(message.find("array 'time': calendar '" + std::string(other) + "'"),
              std::string::npos)
        << message;
  }
  // Before 1582-10-15 the standard calendar is Julian; numpy's dates are proleptic Gregorian.
  const CfTimeUnits old = parse_cf_time_units("days since 1500-01-01", "time");
  EXPECT_THROW(check_cf_calendar(json::object(), old, "time"), Error);
  EXPECT_NO_THROW(check_cf_calendar(json{{"calendar", "proleptic_gregorian"}}, old, "time"));
  EXPECT_EQ(message_of(
                [&] {
                  check_cf_calendar(json{{"calendar", 3}}, modern, "time");
                },
                ErrorCode::kInvalidMetadata)
                .find("array 'time': attribute 'calendar'"),
            0u);
}

}  // namespace
}  // namespace chute
