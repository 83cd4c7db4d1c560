#pragma once
// Fill values from Zarr metadata (v2 and v3 JSON encodings) turned into the bytes of one element
// in native byte order, and the float16/bfloat16 conversions they need.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chute/array/dtype.h"

namespace chute {

/// Nearest float16 (IEEE binary16) bit pattern of `value`, rounding to nearest even; values past
/// the largest finite half become ±infinity, NaN becomes the quiet NaN 0x7e00 (sign kept).
uint16_t float_to_half_bits(double value);
/// Nearest bfloat16 bit pattern of `value`, rounding to nearest even.
uint16_t float_to_bfloat16_bits(double value);
/// The value of a float16 bit pattern.
double half_bits_to_double(uint16_t bits);

/// Encodes a fill value as `type.size` native-order bytes. Accepts JSON numbers, booleans,
/// "NaN", "Infinity", "-Infinity", hex bit patterns "0x7fc00000" (floats, v3), [re, im] for
/// complex types, and null (all zero bytes). `where` starts error messages, e.g.
/// "array 'x': zarr.json field 'fill_value'". Throws kInvalidMetadata when the value does not
/// fit the type.
std::vector<std::byte> encode_fill_value(const nlohmann::json& value, DataType type,
                                         const std::string& where);

}  // namespace chute
