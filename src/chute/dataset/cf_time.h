#pragma once
// CF time coordinates as xarray writes them: `units` "<unit> since <date>" and `calendar`,
// decoded to int64 seconds since 1970-01-01 UTC without Python (xarray/cftime are the oracle in
// python/tests/test_cf_time.py).
//
// Units: nanoseconds, microseconds, milliseconds, seconds, minutes, hours, days (and the usual
// abbreviations: ns, us, ms, s, sec, min, h, hr, d, singulars). The reference date is
// "YYYY-M-D", optionally followed by a time "H[:M[:S[.fraction]]]" after a space or `T`, and an
// optional zone: `Z`, `UTC`, or an offset "+HH:MM" / "+HHMM" / "-HH" (the date is then moved to
// UTC, as pandas does). Calendars: standard, gregorian (reference dates from 1582-10-15 on) and
// proleptic_gregorian; others are refused. Stored values may be integers or floats, packed with
// scale_factor/add_offset (applied first, as xarray does); fill values and NaN decode to
// kNotATime.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "chute/array/array.h"

namespace chute {

/// A missing time (NaT): a fill value or NaN in the stored coordinate.
inline constexpr int64_t kNotATime = std::numeric_limits<int64_t>::min();

struct CfTimeUnits {
  int64_t unit_ns = 0;            // length of one stored unit in nanoseconds
  int64_t reference_seconds = 0;  // the reference date, seconds since 1970-01-01 UTC (floor)
  int64_t reference_ns = 0;       // and its fraction of a second, in [0, 1e9)
  std::string text;               // the attribute as written (for messages)
};

/// True when `units` has the form "<word> since <something>" (what marks a time coordinate).
bool looks_like_cf_time_units(const std::string& units);

/// Parses "<unit> since <date>". Throws kInvalidMetadata naming array `name` and attribute
/// 'units' when the unit or the date cannot be read.
CfTimeUnits parse_cf_time_units(const std::string& units, const std::string& name);

/// Checks the `calendar` attribute of `attributes` (absent: standard) against what chute
/// decodes. Throws kUnsupported naming the array and the calendar otherwise, and for a
/// standard/gregorian calendar with a reference date before 1582-10-15.
void check_cf_calendar(const nlohmann::json& attributes, const CfTimeUnits& units,
                       const std::string& name);

/// Seconds since the epoch (floor) of one stored value, exact for integers; kNotATime for NaN.
/// Every step is checked arithmetic: a date that does not fit in int64 seconds throws
/// kOutOfRange naming the array, the value and the units (never a date wrapped around).
int64_t cf_time_seconds(int64_t value, const CfTimeUnits& units, const std::string& name);
int64_t cf_time_seconds(double value, const CfTimeUnits& units, const std::string& name);

/// Reads the 1-D time coordinate `array` whole and decodes it from its attributes (units,
/// calendar, scale_factor/add_offset, _FillValue/missing_value). Throws kInvalidMetadata when it
/// has no `units` attribute of the form above (naming array and attribute), kUnsupported for
/// another calendar or a non-number dtype.
std::vector<int64_t> decode_cf_times(const Array& array, const std::string& name);

}  // namespace chute
