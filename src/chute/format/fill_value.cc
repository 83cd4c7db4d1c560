#include "chute/format/fill_value.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "chute/util/error.h"

namespace chute {
namespace {

using nlohmann::json;

// Bit pattern of the IEEE-style binary format with `exp_bits` exponent and `mant_bits` mantissa
// bits nearest to `x` (round to nearest even), including subnormals, overflow to infinity and NaN.
uint64_t encode_binary_float(double x, int exp_bits, int mant_bits) {
  const uint64_t sign = std::signbit(x) ? uint64_t{1} << (exp_bits + mant_bits) : 0;
  const uint64_t exp_all_ones = (uint64_t{1} << exp_bits) - 1;
  const uint64_t infinity = sign | (exp_all_ones << mant_bits);
  if (std::isnan(x)) return infinity | (uint64_t{1} << (mant_bits - 1));
  if (std::isinf(x)) return infinity;
  const double magnitude = std::fabs(x);
  if (magnitude == 0.0) return sign;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int min_exponent = 1 - bias;
  int k = 0;
  const double fraction = std::frexp(magnitude, &k);  // magnitude = fraction * 2^k, [0.5, 1)
  int exponent = k - 1;
  if (exponent < min_exponent) {
    // Subnormal: count units of the smallest subnormal. A result of 2^mant_bits is exactly the
    // bit pattern of the smallest normal number, so no special case is needed.
    return sign |
           static_cast<uint64_t>(std::nearbyint(std::ldexp(magnitude, mant_bits - min_exponent)));
  }
  uint64_t mantissa =
      static_cast<uint64_t>(std::nearbyint(std::ldexp(fraction * 2.0 - 1.0, mant_bits)));
  if (mantissa == (uint64_t{1} << mant_bits)) {
    mantissa = 0;
    ++exponent;
  }
  if (exponent > bias) return infinity;
  return sign | (static_cast<uint64_t>(exponent + bias) << mant_bits) | mantissa;
}

std::string describe(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

template <typename T>
void store_native(std::vector<std::byte>& out, size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}

// Writes one float (or bfloat16) of `size` bytes at `offset`.
void encode_float(const json& value, DTypeKind kind, int size, std::vector<std::byte>& out,
                  size_t offset, const std::string& where, const std::string& type_name) {
  double number = 0.0;
  if (value.is_number()) {
    number = value.get<double>();
  } else if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text == "NaN") {
      number = std::numeric_limits<double>::quiet_NaN();
    } else if (text == "Infinity") {
      number = std::numeric_limits<double>::infinity();
    } else if (text == "-Infinity") {
      number = -std::numeric_limits<double>::infinity();
    } else if (text.size() == 2 + 2 * static_cast<size_t>(size) && text[0] == '0' &&
               (text[1] == 'x' || text[1] == 'X')) {
      uint64_t bits = 0;
      auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), bits, 16);
      if (ec != std::errc() || end != text.data() + text.size()) {
        fail(ErrorCode::kInvalidMetadata, "{} is {}, not a valid hex bit pattern for {}", where,
             describe(value), type_name);
      }
      std::memcpy(out.data() + offset, &bits, static_cast<size_t>(size));  // little-endian host
      return;
    } else {
      fail(ErrorCode::kInvalidMetadata,
           "{} is {}, expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or a hex string "
           "of {} digits for {}",
           where, describe(value), 2 * size, type_name);
    }
  } else {
    fail(ErrorCode::kInvalidMetadata, "{} is {}, expected a number for {}", where, describe(value),
         type_name);
  }
  if (kind == DTypeKind::kBFloat) {
    store_native(out, offset, float_to_bfloat16_bits(number));
  } else if (size == 2) {
    store_native(out, offset, float_to_half_bits(number));
  } else if (size == 4) {
    store_native(out, offset, static_cast<uint32_t>(encode_binary_float(number, 8, 23)));
  } else {
    store_native(out, offset, number);
  }
}

void encode_integer(const json& value, DataType type, std::vector<std::byte>& out,
                    const std::string& where, const std::string& type_name) {
  const int bits = 8 * type.size;
  const bool is_signed = type.kind == DTypeKind::kInt;
  auto out_of_range = [&]() {
    fail(ErrorCode::kInvalidMetadata, "{} is {}, which does not fit in {}", where, describe(value),
         type_name);
  };
  const uint64_t max_value = is_signed ? (uint64_t{1} << (bits - 1)) - 1
                                       : (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
  uint64_t pattern = 0;
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > max_value) out_of_range();
    pattern = v;
  } else if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < 0) {
      if (!is_signed) out_of_range();
      if (bits < 64 && v < -(int64_t{1} << (bits - 1))) out_of_range();
    } else if (static_cast<uint64_t>(v) > max_value) {
      out_of_range();
    }
    pattern = static_cast<uint64_t>(v);
  } else if (value.is_number_float()) {
    // Some writers store integral fill values of integer arrays as floats ("fill_value": 0.0).
    const double v = value.get<double>();
    const double low = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double high = std::ldexp(1.0, bits - (is_signed ? 1 : 0));
    if (!std::isfinite(v) || v != std::trunc(v) || v < low || v >= high) out_of_range();
    pattern = is_signed ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
  } else {
    fail(ErrorCode::kInvalidMetadata, "{} is {}, expected an integer for {}", where,
         describe(value), type_name);
  }
  std::memcpy(out.data(), &pattern, type.size);  // low bytes first on a little-endian host
}

}  // namespace

uint16_t float_to_half_bits(double value) {
  return static_cast<uint16_t>(encode_binary_float(value, 5, 10));
}

uint16_t float_to_bfloat16_bits(double value) {
  return static_cast<uint16_t>(encode_binary_float(value, 8, 7));
}

double half_bits_to_double(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0x1f) {
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

std::vector<std::byte> encode_fill_value(const json& value, DataType type,
                                         const std::string& where) {
  static_assert(std::endian::native == std::endian::little, "chute assumes a little-endian host");
  std::vector<std::byte> out(type.size, std::byte{0});
  if (value.is_null()) return out;
  const std::string type_name = type.name();
  if (type.is_time() && value.is_string() && value.get_ref<const std::string&>() == "NaT") {
    store_native(out, 0, std::numeric_limits<int64_t>::min());
    return out;
  }
  switch (type.kind) {
    case DTypeKind::kBool:
      if (value.is_boolean()) {
        out[0] = value.get<bool>() ? std::byte{1} : std::byte{0};
      } else if (value.is_number_integer() && (value == 0 || value == 1)) {
        out[0] = value == 1 ? std::byte{1} : std::byte{0};
      } else {
        fail(ErrorCode::kInvalidMetadata, "{} is {}, expected true or false for bool", where,
             describe(value));
      }
      return out;
    case DTypeKind::kInt:
    case DTypeKind::kUInt:
      encode_integer(value, type, out, where, type_name);
      return out;
    case DTypeKind::kFloat:
    case DTypeKind::kBFloat:
      encode_float(value, type.kind, type.size, out, 0, where, type_name);
      return out;
    case DTypeKind::kComplex: {
      const int half = type.size / 2;
      if (value.is_array()) {
        if (value.size() != 2) {
          fail(ErrorCode::kInvalidMetadata, "{} is {}, expected [real, imaginary] for {}", where,
               describe(value), type_name);
        }
        encode_float(value[0], DTypeKind::kFloat, half, out, 0, where, type_name);
        encode_float(value[1], DTypeKind::kFloat, half, out, half, where, type_name);
      } else {
        encode_float(value, DTypeKind::kFloat, half, out, 0, where, type_name);
      }
      return out;
    }
  }
  fail(ErrorCode::kInternal, "{}: unknown data type kind", where);
}

}  // namespace chute
