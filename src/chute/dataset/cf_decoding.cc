#include "chute/dataset/cf_decoding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "chute/array/strided_copy.h"
#include "chute/pipeline/transforms.h"
#include "chute/util/error.h"
#include "chute/util/missing_values.h"
#include "chute/util/simd_transpose.h"

namespace chute::detail {

namespace {

using json = nlohmann::json;

/// The little-endian bytes of a base64 text (xarray writes float _FillValue of Zarr v3 arrays
/// this way); empty when the text is not base64.
std::vector<uint8_t> decode_base64(const std::string& text) {
  auto sextet = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = sextet(c);
    if (v < 0) return {};
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if ((count += 6) >= 8) {
      count -= 8;
      out.push_back(static_cast<uint8_t>((bits >> count) & 0xffu));
    }
  }
  return out;
}

/// A stored value of `type` from its native bytes.
double value_of(const std::byte* bytes, DataType type) {
  auto load = [&]<typename T>(T) {
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return static_cast<double>(v);
  };
  switch (type.kind) {
    case DTypeKind::kInt:
      return type.size == 1   ? load(int8_t{})
             : type.size == 2 ? load(int16_t{})
             : type.size == 4 ? load(int32_t{})
                              : load(int64_t{});
    case DTypeKind::kUInt:
      return type.size == 1   ? load(uint8_t{})
             : type.size == 2 ? load(uint16_t{})
             : type.size == 4 ? load(uint32_t{})
                              : load(uint64_t{});
    case DTypeKind::kFloat:
      if (type.size == 2) {
        uint16_t bits;
        std::memcpy(&bits, bytes, 2);
        return half_to_float(bits);
      }
      return type.size == 4 ? load(float{}) : load(double{});
    case DTypeKind::kBFloat: {
      uint16_t bits;
      std::memcpy(&bits, bytes, 2);
      return bfloat16_to_float(bits);
    }
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

/// A number attribute (or the one element of a list) as double.
double number_of(const json& value, DataType /*type*/, const std::string& name, const char* field) {
  if (value.is_number()) return value.get<double>();
  if (value.is_array() && value.size() == 1 && value[0].is_number()) return value[0].get<double>();
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
    const std::vector<uint8_t> bytes = decode_base64(text);
    // xarray encodes a float fill value as the base64 of its little-endian float64.
    if (bytes.size() == 8) {
      return value_of(reinterpret_cast<const std::byte*>(bytes.data()),
                      DataType{DTypeKind::kFloat, 8});
    }
  }
  fail(ErrorCode::kInvalidMetadata, "array '{}': attribute '{}' is {}, expected a number", name,
       field, value.dump());
}

void add_missing(std::vector<double>& missing, double value) {
  if (std::isnan(value)) return;  // NaN stays NaN without a comparison
  missing.push_back(value);       // sorted and made unique once all are in
}

template <typename In>
In load_at(const std::byte* src, int64_t i) {
  In v;
  std::memcpy(&v, src + i * static_cast<int64_t>(sizeof(In)), sizeof(In));
  return v;
}

struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};

template <typename In>
double widen(In v) {
  if constexpr (std::is_same_v<In, Half>) {
    return half_to_float(v.bits);
  } else if constexpr (std::is_same_v<In, BFloat>) {
    return bfloat16_to_float(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

/// How the fast path finds stored values equal to the missing value `m` (compared in double, as
/// widen() does): kNone when no value of In can equal it (a fractional or out-of-range m for an
/// integer type, an m no float represents), kStored when comparing in In is exact (`out` set),
/// kDouble otherwise (half, bfloat16, integers beyond 2^53).
enum class MissingCompare { kNone, kStored, kDouble };

template <typename In>
MissingCompare missing_compare(double m, In& out) {
  if constexpr (std::is_integral_v<In>) {
    if (!(m >= static_cast<double>(std::numeric_limits<In>::min()) &&
          m <= static_cast<double>(std::numeric_limits<In>::max()) && m == std::floor(m))) {
      return MissingCompare::kNone;
    }
    if (std::fabs(m) >= 9007199254740992.0) return MissingCompare::kDouble;  // 2^53
    out = static_cast<In>(m);
    return MissingCompare::kStored;
  } else if constexpr (std::is_same_v<In, float> || std::is_same_v<In, double>) {
    out = static_cast<In>(m);
    return static_cast<double>(out) == m ? MissingCompare::kStored : MissingCompare::kNone;
  } else {
    return MissingCompare::kDouble;
  }
}

template <typename In, typename Out, typename Cast>
void run_typed(const std::byte* src, int64_t count, const ChannelDecode& d, Out* dst,
               int64_t stride, Cast cast) {
  const float mean = d.mean, inv_std = d.inv_std;
  if constexpr (std::is_same_v<In, float>) {
    if (!d.cf.any() && !d.replace_nan) {  // the common case: normalise and cast only
      const auto* in = reinterpret_cast<const float*>(src);
      if (stride == 1) {  // contiguous: let the compiler vectorise
        for (int64_t i = 0; i < count; ++i) dst[i] = cast((in[i] - mean) * inv_std);
        return;
      }
      for (int64_t i = 0; i < count; ++i) dst[i * stride] = cast((in[i] - mean) * inv_std);
      return;
    }
  }
  const double scale = d.cf.scale, offset = d.cf.offset;
  const std::vector<double>& missing = d.cf.missing;
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  if (missing.size() <= 1) {
    // At most one missing value (the usual _FillValue): blocks of simple loops that vectorise,
    // with the same arithmetic as the general loop below. The comparison with the missing value
    // is made in the stored type where that is exact (missing_compare).
    constexpr int64_t kBlock = 256;
    float block[kBlock];
    In native_missing{};
    const double m = missing.empty() ? 0.0 : missing[0];
    const MissingCompare compare =
        missing.empty() ? MissingCompare::kNone : missing_compare(m, native_missing);
    for (int64_t base = 0; base < count; base += kBlock) {
      const int64_t n = std::min(kBlock, count - base);
      const std::byte* in = src + base * static_cast<int64_t>(sizeof(In));
      for (int64_t i = 0; i < n; ++i) {
        block[i] = static_cast<float>(widen(load_at<In>(in, i)) * scale + offset);
      }
      if (compare == MissingCompare::kStored) {
        if constexpr (std::is_arithmetic_v<In>) {
          for (int64_t i = 0; i < n; ++i) {
            block[i] = load_at<In>(in, i) == native_missing ? kNaN : block[i];
          }
        }
      } else if (compare == MissingCompare::kDouble) {
        for (int64_t i = 0; i < n; ++i) block[i] = widen(load_at<In>(in, i)) == m ? kNaN : block[i];
      }
      if (d.replace_nan) {
        const float nan_value = d.nan_value;
        for (int64_t i = 0; i < n; ++i) block[i] = std::isnan(block[i]) ? nan_value : block[i];
      }
      Out* out = dst + base * stride;
      if (stride == 1) {
        for (int64_t i = 0; i < n; ++i) out[i] = cast((block[i] - mean) * inv_std);
      } else {
        for (int64_t i = 0; i < n; ++i) out[i * stride] = cast((block[i] - mean) * inv_std);
      }
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const double raw = widen(load_at<In>(src, i));
    float value = is_missing_value(missing, raw) ? kNaN : static_cast<float>(raw * scale + offset);
    if (d.replace_nan && std::isnan(value)) value = d.nan_value;
    dst[i * stride] = cast((value - mean) * inv_std);
  }
}

/// Runs run_typed for the stored type; false when decode_run does not read it.
template <typename Out, typename Cast>
bool run_known(const std::byte* src, int64_t count, const ChannelDecode& d, Out* dst,
               int64_t stride, Cast cast) {
  const DataType t = d.stored;
  switch (t.kind) {
    case DTypeKind::kInt:
      if (t.size == 1) return run_typed<int8_t>(src, count, d, dst, stride, cast), true;
      if (t.size == 2) return run_typed<int16_t>(src, count, d, dst, stride, cast), true;
      if (t.size == 4) return run_typed<int32_t>(src, count, d, dst, stride, cast), true;
      return run_typed<int64_t>(src, count, d, dst, stride, cast), true;
    case DTypeKind::kUInt:
      if (t.size == 1) return run_typed<uint8_t>(src, count, d, dst, stride, cast), true;
      if (t.size == 2) return run_typed<uint16_t>(src, count, d, dst, stride, cast), true;
      if (t.size == 4) return run_typed<uint32_t>(src, count, d, dst, stride, cast), true;
      return run_typed<uint64_t>(src, count, d, dst, stride, cast), true;
    case DTypeKind::kFloat:
      if (t.size == 2) return run_typed<Half>(src, count, d, dst, stride, cast), true;
      if (t.size == 4) return run_typed<float>(src, count, d, dst, stride, cast), true;
      return run_typed<double>(src, count, d, dst, stride, cast), true;
    case DTypeKind::kBFloat:
      return run_typed<BFloat>(src, count, d, dst, stride, cast), true;
    default:
      return false;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CHUTE_AVX2_DECODE 1
/// run_known compiled for AVX2 (everything it calls inlined into it): the same C++ and the same
/// IEEE arithmetic (no FMA: a contracted multiply-add would round differently), twice the
/// lanes of the SSE2 baseline for the int -> double -> float decode and the casts. Used when
/// the CPU has AVX2 (checked once); the outputs are bit-identical either way.
template <typename Out, typename Cast>
__attribute__((target("avx2"), flatten)) bool run_known_avx2(const std::byte* src, int64_t count,
                                                             const ChannelDecode& d, Out* dst,
                                                             int64_t stride, Cast cast) {
  return run_known(src, count, d, dst, stride, cast);
}

#endif

template <typename Out, typename Cast>
void run_out(const std::byte* src, int64_t count, const ChannelDecode& d, Out* dst, int64_t stride,
             Cast cast) {
#if defined(CHUTE_AVX2_DECODE)
  if (cpu_has_avx2() && run_known_avx2(src, count, d, dst, stride, cast)) return;
#endif
  if (!run_known(src, count, d, dst, stride, cast)) {
    fail(ErrorCode::kUnsupported, "cannot decode stored dtype {}", d.stored.name());
  }
}

}  // namespace

bool is_decodable(DataType t) {
  if (t.is_time()) return false;  // datetime64/timedelta64 values are not numbers to decode
  switch (t.kind) {
    case DTypeKind::kInt:
    case DTypeKind::kUInt:
      return t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8;
    case DTypeKind::kFloat:
      return t.size == 2 || t.size == 4 || t.size == 8;
    case DTypeKind::kBFloat:
      return true;
    default:
      return false;
  }
}

CfEncoding parse_cf_encoding(const ArrayMetadata& meta, const std::string& name) {
  CfEncoding cf;
  const json& attrs = meta.attributes;
  if (!attrs.is_object()) return cf;
  const DataType type = meta.data_type;
  if (auto it = attrs.find("scale_factor"); it != attrs.end()) {
    cf.scale = number_of(*it, type, name, "scale_factor");
    cf.scaled = true;
  }
  if (auto it = attrs.find("add_offset"); it != attrs.end()) {
    cf.offset = number_of(*it, type, name, "add_offset");
    cf.scaled = true;
  }
  if (auto it = attrs.find("_FillValue"); it != attrs.end()) {
    if (!it->is_null()) add_missing(cf.missing, number_of(*it, type, name, "_FillValue"));
  } else if (meta.zarr_format == 2 && !meta.fill_value_null && is_decodable(type)) {
    add_missing(cf.missing, value_of(meta.fill_value.data(), type));
  }
  if (auto it = attrs.find("missing_value"); it != attrs.end() && !it->is_null()) {
    if (it->is_array() && it->size() != 1) {
      for (const json& v : *it) add_missing(cf.missing, number_of(v, type, name, "missing_value"));
    } else {
      add_missing(cf.missing, number_of(*it, type, name, "missing_value"));
    }
  }
  normalize_missing(cf.missing);
  if (cf.any() && !is_decodable(type)) {
    fail(ErrorCode::kUnsupported, "array '{}': CF encoding on dtype {} (expected a number type)",
         name, type.name());
  }
  return cf;
}

void decode_run(const std::byte* src, int64_t count, const ChannelDecode& decode, std::byte* dst,
                int64_t dst_stride, DataType out_type) {
  if (out_type == DataType{DTypeKind::kFloat, 4}) {
    run_out(src, count, decode, reinterpret_cast<float*>(dst), dst_stride,
            [](float v) { return v; });
  } else if (out_type == DataType{DTypeKind::kFloat, 2}) {
    run_out(src, count, decode, reinterpret_cast<uint16_t*>(dst), dst_stride,
            [](float v) { return float_to_half(v); });
  } else if (out_type == DataType{DTypeKind::kBFloat, 2}) {
    run_out(src, count, decode, reinterpret_cast<uint16_t*>(dst), dst_stride,
            [](float v) { return float_to_bfloat16(v); });
  } else {
    fail(ErrorCode::kUnsupported, "output dtype {} (float32, float16, bfloat16 are supported)",
         out_type.name());
  }
}

void stream_out(std::byte* dst, const std::byte* src, size_t n) {
  stream_bytes(dst, src, n);
  stream_fence();
}

}  // namespace chute::detail
