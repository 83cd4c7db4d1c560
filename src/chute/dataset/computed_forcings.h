#pragma once
// Forcings chute computes itself from the date and the grid, for windows (GraphCast-style
// inputs known at the target time). For a time t (seconds since 1970-01-01 UTC) and a grid
// point at latitude φ, longitude λ (degrees):
//
//   d   = fractional day of the year, 0 at 00:00 UTC on 1 January; Y = 365 or 366 days
//   u   = hours since 00:00 UTC of t's day;  local = u + λ / 15 (mean local time, hours)
//   cos_local_time, sin_local_time   = cos, sin(2π · local / 24)
//   cos_day_of_year, sin_day_of_year = cos, sin(2π · d / Y)
//   toa_radiation (W m⁻², instantaneous) = S0 · E0 · max(0, cos θ), with S0 = 1361 W m⁻² and,
//   after Spencer (1971), γ = 2π · d / Y:
//     E0 = 1.000110 + 0.034221 cos γ + 0.001280 sin γ + 0.000719 cos 2γ + 0.000077 sin 2γ
//     δ  = 0.006918 − 0.399912 cos γ + 0.070257 sin γ − 0.006758 cos 2γ + 0.000907 sin 2γ
//          − 0.002697 cos 3γ + 0.00148 sin 3γ                         (declination, radians)
//     EoT = 229.18 (0.000075 + 0.001868 cos γ − 0.032077 sin γ − 0.014615 cos 2γ
//          − 0.040849 sin 2γ)                                       (equation of time, minutes)
//     h  = 2π (u + λ / 15 + EoT / 60 − 12) / 24                      (hour angle)
//     cos θ = sin φ sin δ + cos φ cos δ cos h
//   ERA5's `toa_incident_solar_radiation` is this integrated over the hour before (J m⁻²);
//   this is the instantaneous flux at t.

#include <cstdint>
#include <span>
#include <string>

namespace chute {

enum class ComputedForcing { kCosLocalTime, kSinLocalTime, kCosDayOfYear, kSinDayOfYear, kToa };

/// Parses one of: cos_local_time, sin_local_time, cos_day_of_year, sin_day_of_year,
/// toa_radiation. Throws kInvalidArgument listing them otherwise.
ComputedForcing parse_computed_forcing(const std::string& name);

/// The forcing's value at time `seconds` (since 1970-01-01 UTC), latitude and longitude in
/// degrees, as described above.
double computed_forcing(ComputedForcing kind, int64_t seconds, double lat, double lon);

/// out[i] = computed_forcing(kind, seconds, lats[y], lons[x]) for the grid points p0 + i
/// (i < n) of the row-major grid lats × lons, p = y · lons.size() + x: the same values, bit for
/// bit, with the terms that depend on the date alone, on the row alone or on the column alone
/// computed once per call instead of once per point (toa_radiation: ~15 sines and cosines a
/// point become one multiply-add).
void computed_forcing_run(ComputedForcing kind, int64_t seconds, std::span<const double> lats,
                          std::span<const double> lons, int64_t p0, int64_t n, float* out);

}  // namespace chute
