#include "chute/dataset/cf_time.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string_view>

#include "chute/array/strided_copy.h"
#include "chute/dataset/cf_decoding.h"
#include "chute/util/civil_date.h"
#include "chute/util/error.h"
#include "chute/util/missing_values.h"

namespace chute {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

/// Nanoseconds of a unit name, 0 when unknown.
int64_t unit_nanoseconds(const std::string& unit) {
  struct Unit {
    const char* names[5];
    int64_t ns;
  };
  static constexpr Unit kUnits[] = {
      {{"nanoseconds", "nanosecond", "ns", nullptr, nullptr}, 1},
      {{"microseconds", "microsecond", "us", nullptr, nullptr}, 1'000},
      {{"milliseconds", "millisecond", "ms", nullptr, nullptr}, 1'000'000},
      {{"seconds", "second", "secs", "sec", "s"}, kNanosPerSecond},
      {{"minutes", "minute", "mins", "min", nullptr}, 60 * kNanosPerSecond},
      {{"hours", "hour", "hrs", "hr", "h"}, 3600 * kNanosPerSecond},
      {{"days", "day", "d", nullptr, nullptr}, 86400 * kNanosPerSecond},
  };
  for (const Unit& u : kUnits) {
    for (const char* n : u.names) {
      if (n != nullptr && unit == n) return u.ns;
    }
  }
  return 0;
}

bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/// A small cursor over the date text; every reader returns false on a mismatch.
struct Cursor {
  std::string_view text;
  size_t at = 0;
  bool done() const { return at >= text.size(); }
  char peek() const { return done() ? '\0' : text[at]; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++at;
    return true;
  }
  /// 1..max_digits decimal digits.
  bool number(int64_t* out, int max_digits, int* digits = nullptr) {
    int n = 0;
    int64_t v = 0;
    while (n < max_digits && std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + (text[at++] - '0');
      ++n;
    }
    if (digits) *digits = n;
    *out = v;
    return n > 0;
  }
  void skip_spaces() {
    while (std::isspace(static_cast<unsigned char>(peek()))) ++at;
  }
};

/// Parses the reference date; false when it is not a date of the form in the header.
bool parse_reference(std::string_view text, CfTimeUnits* out) {
  Cursor c{trim(text)};
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, nanos = 0;
  const bool negative_year = c.eat('-');
  if (!c.number(&year, 6) || !c.eat('-') || !c.number(&month, 2) || !c.eat('-') ||
      !c.number(&day, 2)) {
    return false;
  }
  if (negative_year) year = -year;
  if (month < 1 || month > 12) return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (day < 1 || day > kDays[month - 1] + (month == 2 && leap(year))) return false;
  // Time: after 'T' or spaces, but a zone may follow the date directly ("1970-01-01 UTC").
  const size_t before_time = c.at;
  if (!c.eat('T')) c.skip_spaces();
  if (std::isdigit(static_cast<unsigned char>(c.peek()))) {
    if (!c.number(&hour, 2)) return false;
    if (c.eat(':')) {
      if (!c.number(&minute, 2)) return false;
      if (c.eat(':')) {
        if (!c.number(&second, 2)) return false;
        if (c.eat('.')) {
          int digits = 0;
          int64_t fraction = 0;
          if (!c.number(&fraction, 9, &digits)) return false;
          while (std::isdigit(static_cast<unsigned char>(c.peek()))) ++c.at;  // beyond ns
          for (int i = digits; i < 9; ++i) fraction *= 10;
          nanos = fraction;
        }
      }
    }
    if (hour > 24 || minute > 59 || second > 60) return false;
  } else if (c.at != before_time && c.text[before_time] == 'T') {
    return false;  // "1970-01-01T" with nothing after
  }
  // Zone.
  c.skip_spaces();
  int64_t zone_seconds = 0;
  if (c.eat('Z')) {
  } else if (c.text.substr(c.at) == "UTC" || c.text.substr(c.at) == "utc") {
    c.at = c.text.size();
  } else if (c.peek() == '+' || c.peek() == '-') {
    const int64_t sign = c.peek() == '-' ? -1 : 1;
    ++c.at;
    int64_t zh = 0, zm = 0;
    int digits = 0;
    if (!c.number(&zh, 4, &digits)) return false;
    if (digits == 4) {
      zm = zh % 100, zh /= 100;
    } else if (digits == 2 || digits == 1) {
      if (c.eat(':') && !c.number(&zm, 2)) return false;
    } else {
      return false;
    }
    if (zh > 23 || zm > 59) return false;
    zone_seconds = sign * (zh * 3600 + zm * 60);
  }
  c.skip_spaces();
  if (!c.done()) return false;
  out->reference_seconds = detail::days_from_civil(year, month, day) * 86400 + hour * 3600 +
                           minute * 60 + second - zone_seconds;
  out->reference_ns = nanos;
  return true;
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

[[noreturn]] void out_of_range(const std::string& name, double value,
                               const std::string& units = "") {
  fail(ErrorCode::kOutOfRange,
       "array '{}': time value {}{} is a date outside what int64 seconds since 1970 hold", name,
       value, units.empty() ? std::string() : fmt::format(" with units '{}'", units));
}

/// A stored integer of `type` (1, 2, 4 or 8 bytes, signed or not) as int64; a uint64 above
/// INT64_MAX is out of range.
int64_t load_integer(const std::byte* at, DataType type, const std::string& name) {
  auto load = [&]<typename T>(T) {
    T v;
    std::memcpy(&v, at, sizeof(T));
    return v;
  };
  const bool is_signed = type.kind == DTypeKind::kInt;
  switch (type.size) {
    case 1:
      return is_signed ? load(int8_t{}) : load(uint8_t{});
    case 2:
      return is_signed ? load(int16_t{}) : load(uint16_t{});
    case 4:
      return is_signed ? int64_t{load(int32_t{})} : int64_t{load(uint32_t{})};
    default: {
      if (is_signed) return load(int64_t{});
      const uint64_t v = load(uint64_t{});
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        out_of_range(name, static_cast<double>(v));
      }
      return static_cast<int64_t>(v);
    }
  }
}

/// A stored float (float16, bfloat16, float32, float64) as double.
double load_float(const std::byte* at, DataType type) {
  if (type == DataType{DTypeKind::kFloat, 8}) {
    double v;
    std::memcpy(&v, at, 8);
    return v;
  }
  float f;
  if (type == DataType{DTypeKind::kFloat, 4}) {
    std::memcpy(&f, at, 4);
  } else {  // float16, bfloat16: widen through the decode kernel
    detail::ChannelDecode plain;
    plain.stored = type;
    detail::decode_run(at, 1, plain, reinterpret_cast<std::byte*>(&f), 1,
                       DataType{DTypeKind::kFloat, 4});
  }
  return f;
}

}  // namespace

bool looks_like_cf_time_units(const std::string& units) {
  const std::string text = lower(units);
  const size_t since = text.find(" since ");
  return since != std::string::npos && since > 0 &&
         trim(std::string_view(text).substr(0, since)).find(' ') == std::string_view::npos;
}

CfTimeUnits parse_cf_time_units(const std::string& units, const std::string& name) {
  const std::string text = lower(units);
  const size_t since = text.find(" since ");
  if (since == std::string::npos) {
    fail(ErrorCode::kInvalidMetadata,
         "array '{}': attribute 'units' is '{}', expected '<unit> since <date>'", name, units);
  }
  const std::string unit(trim(std::string_view(text).substr(0, since)));
  CfTimeUnits out;
  out.text = units;
  out.unit_ns = unit_nanoseconds(unit);
  if (out.unit_ns == 0) {
    fail(ErrorCode::kInvalidMetadata,
         "array '{}': attribute 'units' is '{}': unknown time unit '{}' (expected days, hours, "
         "minutes, seconds, milliseconds, microseconds or nanoseconds)",
         name, units, unit);
  }
  // The date keeps its case ('T', 'Z', 'UTC'): parse the original text.
  const std::string_view date = std::string_view(units).substr(since + 7);
  if (!parse_reference(date, &out)) {
    fail(ErrorCode::kInvalidMetadata,
         "array '{}': attribute 'units' is '{}': cannot read the reference date '{}' (expected "
         "YYYY-MM-DD[ HH:MM:SS[.f]][ zone])",
         name, units, trim(date));
  }
  return out;
}

void check_cf_calendar(const nlohmann::json& attributes, const CfTimeUnits& units,
                       const std::string& name) {
  std::string calendar = "standard";
  if (attributes.is_object()) {
    if (auto it = attributes.find("calendar"); it != attributes.end()) {
      if (!it->is_string()) {
        fail(ErrorCode::kInvalidMetadata, "array '{}': attribute 'calendar' is {}, expected text",
             name, it->dump());
      }
      calendar = lower(it->get<std::string>());
    }
  }
  if (calendar == "proleptic_gregorian") return;
  if (calendar == "standard" || calendar == "gregorian") {
    if (units.reference_seconds < detail::days_from_civil(1582, 10, 15) * 86400) {
      fail(ErrorCode::kUnsupported,
           "array '{}': calendar '{}' with a reference date before 1582-10-15 (a mixed "
           "Julian/Gregorian calendar) is not supported; proleptic_gregorian is",
           name, calendar);
    }
    return;
  }
  fail(ErrorCode::kUnsupported,
       "array '{}': calendar '{}' is not supported (chute decodes times of the standard, "
       "gregorian and proleptic_gregorian calendars)",
       name, calendar);
}

int64_t cf_time_seconds(int64_t value, const CfTimeUnits& units, const std::string& name) {
  int64_t seconds = 0;
  if (units.unit_ns % kNanosPerSecond == 0) {  // whole seconds: the fraction cannot carry
    if (__builtin_mul_overflow(value, units.unit_ns / kNanosPerSecond, &seconds) ||
        __builtin_add_overflow(seconds, units.reference_seconds, &seconds)) {
      out_of_range(name, static_cast<double>(value), units.text);
    }
    return seconds;
  }
  int64_t nanos = 0;
  if (__builtin_mul_overflow(value, units.unit_ns, &nanos) ||
      __builtin_add_overflow(nanos, units.reference_ns, &nanos) ||
      __builtin_add_overflow(floor_div(nanos, kNanosPerSecond), units.reference_seconds,
                             &seconds)) {
    out_of_range(name, static_cast<double>(value), units.text);
  }
  return seconds;
}

int64_t cf_time_seconds(double value, const CfTimeUnits& units, const std::string& name) {
  if (std::isnan(value)) return kNotATime;
  if (!std::isfinite(value)) out_of_range(name, value, units.text);
  // As xarray: the value in nanoseconds, rounded half to even, then floored to seconds.
  const double nanos = std::nearbyint(value * static_cast<double>(units.unit_ns));
  double seconds = 0;
  if (std::abs(nanos) < 9.0e18) {
    const int64_t total = static_cast<int64_t>(nanos) + units.reference_ns;
    seconds = static_cast<double>(floor_div(total, kNanosPerSecond));
  } else {  // beyond ±292 years of nanoseconds: whole seconds are all float64 holds anyway
    seconds = std::floor(nanos / 1e9);
  }
  seconds += static_cast<double>(units.reference_seconds);
  if (!(std::abs(seconds) < 9.2e18)) out_of_range(name, value, units.text);
  return static_cast<int64_t>(seconds);
}

std::vector<int64_t> decode_cf_times(const Array& array, const std::string& name) {
  const ArrayMetadata& meta = array.metadata();
  const nlohmann::json& attrs = meta.attributes;
  auto units_it = attrs.is_object() ? attrs.find("units") : attrs.end();
  if (!attrs.is_object() || units_it == attrs.end()) {
    fail(ErrorCode::kInvalidMetadata,
         "array '{}': no attribute 'units' (a time coordinate needs '<unit> since <date>')", name);
  }
  if (!units_it->is_string()) {
    fail(ErrorCode::kInvalidMetadata,
         "array '{}': attribute 'units' is {}, expected '<unit> since <date>'", name,
         units_it->dump());
  }
  const CfTimeUnits units = parse_cf_time_units(units_it->get<std::string>(), name);
  check_cf_calendar(attrs, units, name);
  const DataType type = meta.data_type;
  if (!detail::is_decodable(type)) {
    fail(ErrorCode::kUnsupported, "array '{}': time coordinate of dtype {} (expected numbers)",
         name, type.name());
  }
  const detail::CfEncoding cf = detail::parse_cf_encoding(meta, name);
  const int64_t n = meta.num_elements();
  std::vector<std::byte> raw(static_cast<size_t>(n * type.size));
  std::vector<int64_t> start(meta.rank(), 0);
  array.read(start, StridedView::contiguous(raw.data(), meta.shape, type.size));
  std::vector<int64_t> out(static_cast<size_t>(n));
  const bool integral = type.kind == DTypeKind::kInt || type.kind == DTypeKind::kUInt;
  auto is_missing = [&](double v) { return is_missing_value(cf.missing, v); };
  for (int64_t i = 0; i < n; ++i) {
    const std::byte* at = raw.data() + i * type.size;
    int64_t& seconds = out[static_cast<size_t>(i)];
    if (integral) {  // exact: int64 arithmetic unless packed
      const int64_t v = load_integer(at, type, name);
      const auto as_double = static_cast<double>(v);
      seconds = is_missing(as_double) ? kNotATime
                : cf.scaled ? cf_time_seconds(as_double * cf.scale + cf.offset, units, name)
                            : cf_time_seconds(v, units, name);
    } else {
      const double v = load_float(at, type);
      seconds = is_missing(v)
                    ? kNotATime
                    : cf_time_seconds(cf.scaled ? v * cf.scale + cf.offset : v, units, name);
    }
  }
  return out;
}

}  // namespace chute
