// numcodecs filters as array->array codecs on the flattened chunk: delta, fixedscaleoffset,
// astype, quantize and shuffle (a byte shuffle that precedes an array->array codec). Their
// configurations carry the dtypes they act on; values are held natively (byte order is the
// bytes codec's business). Arithmetic follows numcodecs with NumPy 1.x casting: float32 data
// computes in float32, everything else in float64; integer deltas wrap around.

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

template <typename T>
struct Tag {
  using type = T;
};

/// Calls f(Tag<T>{}) with the C++ type of a numeric dtype (bool as uint8).
template <typename F>
void visit_numeric(const DataType& d, const char* codec, F&& f) {
  switch (d.kind) {
    case DTypeKind::kBool:
      return f(Tag<uint8_t>{});
    case DTypeKind::kInt:
      switch (d.size) {
        case 1:
          return f(Tag<int8_t>{});
        case 2:
          return f(Tag<int16_t>{});
        case 4:
          return f(Tag<int32_t>{});
        case 8:
          return f(Tag<int64_t>{});
      }
      break;
    case DTypeKind::kUInt:
      switch (d.size) {
        case 1:
          return f(Tag<uint8_t>{});
        case 2:
          return f(Tag<uint16_t>{});
        case 4:
          return f(Tag<uint32_t>{});
        case 8:
          return f(Tag<uint64_t>{});
      }
      break;
    case DTypeKind::kFloat:
      if (d.size == 4) return f(Tag<float>{});
      if (d.size == 8) return f(Tag<double>{});
      break;
    default:
      break;
  }
  fail(ErrorCode::kUnsupported, "{}: data type {} is not supported", codec, dtype_label(d));
}

/// A conversion without undefined behaviour: out-of-range or NaN floats become To's minimum
/// (what x86 NumPy gives), integers wrap.
template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    const double x = static_cast<double>(v);
    // [lo, hi) is To's range; both bounds are exact in double.
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = std::is_signed_v<To>
                              ? -lo
                              : 2.0 * (static_cast<double>(std::numeric_limits<To>::max() / 2) + 1);
    if (!(x >= lo && x < hi)) return std::numeric_limits<To>::min();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(v);
  }
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

/// The float type NumPy 1.x computes `array op python_float` in.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, float>, float, double>;

enum class FilterKind { kDelta, kFixedScaleOffset, kAsType, kQuantize };

class NumcodecsFilter final : public ArrayToArrayCodec {
 public:
  NumcodecsFilter(FilterKind kind, std::string label, DataType decoded, DataType encoded,
                  const ChunkLayout& layout, double offset, double scale, int digits)
      : kind_(kind),
        label_(std::move(label)),
        decoded_(decoded),
        offset_(offset),
        scale_(scale),
        digits_(digits) {
    encoded_layout_.dtype = encoded;
    encoded_layout_.shape = layout.shape;
    count_ = static_cast<size_t>(layout.num_elements());
    // Fail at creation, not per chunk, for types the arithmetic does not support.
    visit_numeric(decoded_, label_.c_str(), [](auto) {});
    visit_numeric(encoded, label_.c_str(), [](auto) {});
  }

  const ChunkLayout& encoded_layout() const override { return encoded_layout_; }

  void decode(std::span<const std::byte> encoded, std::span<std::byte> decoded) const override {
    visit_numeric(decoded_, label_.c_str(), [&](auto d) {
      visit_numeric(encoded_layout_.dtype, label_.c_str(), [&](auto e) {
        decode_typed<typename decltype(d)::type, typename decltype(e)::type>(encoded.data(),
                                                                             decoded.data());
      });
    });
  }

  void encode(std::span<const std::byte> decoded, std::span<std::byte> encoded) const override {
    visit_numeric(decoded_, label_.c_str(), [&](auto d) {
      visit_numeric(encoded_layout_.dtype, label_.c_str(), [&](auto e) {
        encode_typed<typename decltype(d)::type, typename decltype(e)::type>(decoded.data(),
                                                                             encoded.data());
      });
    });
  }

  std::string describe() const override { return label_; }

 private:
  template <typename D, typename E>
  void decode_typed(const std::byte* in, std::byte* out) const {
    switch (kind_) {
      case FilterKind::kDelta: {
        D sum{};
        for (size_t i = 0; i < count_; ++i) {
          sum = add(sum, convert<D>(load<E>(in + i * sizeof(E))));
          store<D>(out + i * sizeof(D), sum);
        }
        return;
      }
      case FilterKind::kFixedScaleOffset: {
        using C = compute_t<E>;
        for (size_t i = 0; i < count_; ++i) {
          const C v = static_cast<C>(load<E>(in + i * sizeof(E))) / static_cast<C>(scale_) +
                      static_cast<C>(offset_);
          store<D>(out + i * sizeof(D), convert<D>(v));
        }
        return;
      }
      case FilterKind::kAsType:
      case FilterKind::kQuantize:
        for (size_t i = 0; i < count_; ++i) {
          store<D>(out + i * sizeof(D), convert<D>(load<E>(in + i * sizeof(E))));
        }
        return;
    }
  }

  template <typename D, typename E>
  void encode_typed(const std::byte* in, std::byte* out) const {
    switch (kind_) {
      case FilterKind::kDelta: {
        D previous{};
        for (size_t i = 0; i < count_; ++i) {
          const D v = load<D>(in + i * sizeof(D));
          store<E>(out + i * sizeof(E), convert<E>(i == 0 ? v : sub(v, previous)));
          previous = v;
        }
        return;
      }
      case FilterKind::kFixedScaleOffset: {
        using C = compute_t<D>;
        for (size_t i = 0; i < count_; ++i) {
          const C v = (static_cast<C>(load<D>(in + i * sizeof(D))) - static_cast<C>(offset_)) *
                      static_cast<C>(scale_);
          store<E>(out + i * sizeof(E), convert<E>(std::nearbyint(v)));
        }
        return;
      }
      case FilterKind::kAsType:
        for (size_t i = 0; i < count_; ++i) {
          store<E>(out + i * sizeof(E), convert<E>(load<D>(in + i * sizeof(D))));
        }
        return;
      case FilterKind::kQuantize: {
        using C = compute_t<D>;
        const C scale = static_cast<C>(quantize_scale());
        for (size_t i = 0; i < count_; ++i) {
          const C v = std::nearbyint(scale * static_cast<C>(load<D>(in + i * sizeof(D)))) / scale;
          store<E>(out + i * sizeof(E), convert<E>(v));
        }
        return;
      }
    }
  }

  /// numcodecs Quantize: the power of two just above 10^digits.
  double quantize_scale() const {
    const double precision = std::pow(10.0, -digits_);
    double exp = std::log10(precision);
    exp = exp < 0 ? std::floor(exp) : std::ceil(exp);
    const double bits = std::ceil(std::log2(std::pow(10.0, -exp)));
    return std::pow(2.0, bits);
  }

  template <typename T>
  static T add(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
  template <typename T>
  static T sub(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
    } else {
      return a - b;
    }
  }

  FilterKind kind_;
  std::string label_;
  DataType decoded_;
  ChunkLayout encoded_layout_;
  size_t count_ = 0;
  double offset_;
  double scale_;
  int digits_;
};

class ShuffleFilter final : public ArrayToArrayCodec {
 public:
  ShuffleFilter(const ChunkLayout& layout, size_t element_size)
      : layout_(layout), element_size_(element_size) {}
  const ChunkLayout& encoded_layout() const override { return layout_; }
  void decode(std::span<const std::byte> encoded, std::span<std::byte> decoded) const override {
    byte_unshuffle(encoded, decoded, element_size_);
  }
  void encode(std::span<const std::byte> decoded, std::span<std::byte> encoded) const override {
    byte_shuffle(decoded, encoded, element_size_);
  }
  std::string describe() const override { return fmt::format("shuffle({})", element_size_); }

 private:
  ChunkLayout layout_;
  size_t element_size_;
};

double config_number(const nlohmann::json& config, const char* key, const char* codec) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_number()) {
    fail(ErrorCode::kInvalidMetadata, "{}: configuration needs a number '{}', got {}", codec, key,
         it == config.end() ? "nothing" : it->dump());
  }
  return it->get<double>();
}

/// The filter's decoded dtype: config[key] when present (its size must match the chunk's),
/// else the chunk's.
DataType decoded_dtype(const nlohmann::json& config, const char* key, const char* codec,
                       const ChunkLayout& layout) {
  if (!config.contains(key) || config[key].is_null()) return layout.dtype;
  DataType d = parse_filter_dtype(config, key, codec);
  if (d.size != layout.dtype.size) {
    fail(ErrorCode::kInvalidMetadata, "{}: {} {} does not match the chunk's data type {}", codec,
         key, config[key].dump(), dtype_label(layout.dtype));
  }
  return d;
}

}  // namespace

std::unique_ptr<ArrayToArrayCodec> make_numcodecs_filter(const std::string& id,
                                                         const nlohmann::json& config,
                                                         const ChunkLayout& decoded) {
  const char* codec = id.c_str();
  if (id == "shuffle") {
    const int64_t size = config_int(config, "elementsize", decoded.dtype.size, codec);
    if (size < 1 || size > (1 << 16)) {
      fail(ErrorCode::kInvalidMetadata, "shuffle: elementsize must be in [1, 65536], got {}", size);
    }
    return std::make_unique<ShuffleFilter>(decoded, static_cast<size_t>(size));
  }
  if (id == "astype") {
    DataType d = decoded_dtype(config, "decode_dtype", codec, decoded);
    DataType e = parse_filter_dtype(config, "encode_dtype", codec);
    return std::make_unique<NumcodecsFilter>(
        FilterKind::kAsType, fmt::format("astype({} -> {})", dtype_label(d), dtype_label(e)), d, e,
        decoded, 0, 1, 0);
  }
  DataType d = decoded_dtype(config, "dtype", codec, decoded);
  DataType e = config.contains("astype") && !config["astype"].is_null()
                   ? parse_filter_dtype(config, "astype", codec)
                   : d;
  const std::string types =
      d == e ? dtype_label(d) : fmt::format("{} -> {}", dtype_label(d), dtype_label(e));
  if (id == "delta") {
    return std::make_unique<NumcodecsFilter>(FilterKind::kDelta, fmt::format("delta({})", types), d,
                                             e, decoded, 0, 1, 0);
  }
  if (id == "fixedscaleoffset") {
    const double offset = config_number(config, "offset", codec);
    const double scale = config_number(config, "scale", codec);
    if (scale == 0 || !std::isfinite(scale) || !std::isfinite(offset)) {
      fail(ErrorCode::kInvalidMetadata,
           "fixedscaleoffset: scale must be finite and non-zero, offset finite; got scale {}, "
           "offset {}",
           scale, offset);
    }
    return std::make_unique<NumcodecsFilter>(
        FilterKind::kFixedScaleOffset,
        fmt::format("fixedscaleoffset(offset {}, scale {}, {})", offset, scale, types), d, e,
        decoded, offset, scale, 0);
  }
  if (id == "quantize") {
    const int64_t digits = config_int(config, "digits", INT64_MIN, codec);
    if (digits == INT64_MIN || digits < -300 || digits > 300) {
      fail(ErrorCode::kInvalidMetadata, "quantize: digits must be an integer in [-300, 300]");
    }
    if (d.kind != DTypeKind::kFloat || e.kind != DTypeKind::kFloat) {
      fail(ErrorCode::kInvalidMetadata, "quantize: only floating point types, got {}", types);
    }
    return std::make_unique<NumcodecsFilter>(FilterKind::kQuantize,
                                             fmt::format("quantize(digits {}, {})", digits, types),
                                             d, e, decoded, 0, 1, static_cast<int>(digits));
  }
  fail(ErrorCode::kUnsupported, "unsupported codec '{}'", id);
}

}  // namespace chute
