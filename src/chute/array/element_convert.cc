#include "chute/array/element_convert.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "chute/array/read_plan.h"
#include "chute/array/strided_copy.h"
#include "chute/util/error.h"
#include "chute/util/float16.h"
#include "chute/util/missing_values.h"

// x × scale and + offset are two roundings, as in NumPy: never fused into one multiply-add
// (CMakeLists.txt compiles this file with -ffp-contract=off for targets that have FMA).

namespace chute {
namespace {

struct Half {
  uint16_t bits;
};

template <typename In>
double widen(const std::byte* p) {
  In v;
  std::memcpy(&v, p, sizeof(In));
  if constexpr (std::is_same_v<In, Half>) {
    return half_to_float(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

template <typename In, typename Out>
void run(const ElementConvert& c, const std::byte* src, int64_t count, std::byte* dst,
         int64_t dst_stride) {
  const double* missing = c.missing.data();
  const size_t n_missing = c.missing.size();
  const bool has_scale = c.scale.has_value();
  const bool has_offset = c.offset.has_value();
  const double scale = c.scale.value_or(1.0);
  const double offset = c.offset.value_or(0.0);
  if (n_missing <= 1 && dst_stride == static_cast<int64_t>(sizeof(Out))) {
    // The common case, written so the compiler vectorizes it: a contiguous run and at most one
    // missing value (NaN when none: it equals nothing), selected after the arithmetic.
    const double m0 = n_missing ? missing[0] : std::numeric_limits<double>::quiet_NaN();
    for (int64_t i = 0; i < count; ++i) {
      const double x = widen<In>(src + i * static_cast<int64_t>(sizeof(In)));
      double y = x;
      if (has_scale) y = y * scale;
      if (has_offset) y = y + offset;
      const Out out = static_cast<Out>(x == m0 ? std::numeric_limits<double>::quiet_NaN() : y);
      std::memcpy(dst + i * static_cast<int64_t>(sizeof(Out)), &out, sizeof(Out));
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    double x = widen<In>(src + i * static_cast<int64_t>(sizeof(In)));
    if (is_missing_value({missing, n_missing}, x)) {
      x = std::numeric_limits<double>::quiet_NaN();
    } else {
      if (has_scale) x = x * scale;
      if (has_offset) x = x + offset;
    }
    const Out out = static_cast<Out>(x);
    std::memcpy(dst + i * dst_stride, &out, sizeof(Out));
  }
}

using RunFn = void (*)(const ElementConvert&, const std::byte*, int64_t, std::byte*, int64_t);

template <typename Out>
RunFn pick_out(DataType stored) {
  switch (stored.kind) {
    case DTypeKind::kInt:
      switch (stored.size) {
        case 1:
          return run<int8_t, Out>;
        case 2:
          return run<int16_t, Out>;
        case 4:
          return run<int32_t, Out>;
        case 8:
          return run<int64_t, Out>;
      }
      break;
    case DTypeKind::kUInt:
      switch (stored.size) {
        case 1:
          return run<uint8_t, Out>;
        case 2:
          return run<uint16_t, Out>;
        case 4:
          return run<uint32_t, Out>;
        case 8:
          return run<uint64_t, Out>;
      }
      break;
    case DTypeKind::kFloat:
      switch (stored.size) {
        case 2:
          return run<Half, Out>;
        case 4:
          return run<float, Out>;
        case 8:
          return run<double, Out>;
      }
      break;
    default:
      break;
  }
  return nullptr;
}

RunFn pick(const ElementConvert& c) {
  if (c.decoded == DataType{DTypeKind::kFloat, 4}) {
    return c.scale || c.offset ? nullptr : pick_out<float>(c.stored);
  }
  if (c.decoded == DataType{DTypeKind::kFloat, 8}) return pick_out<double>(c.stored);
  return nullptr;
}

}  // namespace

void check_convert(const ElementConvert& convert, std::string_view name) {
  if (pick(convert) == nullptr) {
    fail(ErrorCode::kInvalidArgument,
         "array '{}': cannot decode stored {} to {}{} (int8..uint64 or float16/32/64 to "
         "float32 or float64; float64 when scaled)",
         name, convert.stored.name(), convert.decoded.name(),
         convert.scale || convert.offset ? " with scale_factor/add_offset" : "");
  }
}

void convert_run(const ElementConvert& convert, const std::byte* src, int64_t count, std::byte* dst,
                 int64_t dst_byte_stride) {
  const RunFn fn = pick(convert);
  if (fn == nullptr) check_convert(convert, "?");
  fn(convert, src, count, dst, dst_byte_stride);
}

void strided_transform(const std::byte* src, std::span<const int64_t> src_shape,
                       std::span<const int64_t> src_start, const StridedView& dst,
                       const ElementConvert& convert) {
  const size_t rank = dst.shape.size();
  if (rank > kMaxCopyRank) {
    fail(ErrorCode::kUnsupported, "a copy of rank {} (at most {})", rank, kMaxCopyRank);
  }
  const RunFn fn = pick(convert);
  if (fn == nullptr) check_convert(convert, "?");
  const int64_t in_size = convert.stored.size;
  for (int64_t n : dst.shape) {
    if (n == 0) return;
  }
  // The loop nest outermost first: unit dimensions dropped, neighbours contiguous in both
  // source and destination merged, so the innermost run is as long as it can be.
  int64_t extent[kMaxCopyRank + 1];
  int64_t src_stride[kMaxCopyRank + 1];
  int64_t dst_stride[kMaxCopyRank + 1];
  size_t depth = 0;
  int64_t stride = in_size;
  int64_t strides[kMaxCopyRank];
  for (size_t d = rank; d-- > 0;) {
    strides[d] = stride;
    stride *= src_shape[d];
  }
  for (size_t d = 0; d < rank; ++d) {
    src += src_start[d] * strides[d];
    const int64_t n = dst.shape[d];
    if (n == 1) continue;
    if (depth > 0 && src_stride[depth - 1] == n * strides[d] &&
        dst_stride[depth - 1] == n * dst.byte_strides[d]) {
      extent[depth - 1] *= n;
      src_stride[depth - 1] = strides[d];
      dst_stride[depth - 1] = dst.byte_strides[d];
      continue;
    }
    extent[depth] = n;
    src_stride[depth] = strides[d];
    dst_stride[depth] = dst.byte_strides[d];
    ++depth;
  }
  if (depth == 0 || src_stride[depth - 1] != in_size) {  // no contiguous innermost run
    extent[depth] = 1;
    src_stride[depth] = in_size;
    dst_stride[depth] = 0;
    ++depth;
  }
  const size_t inner = depth - 1;
  int64_t index[kMaxCopyRank + 1] = {};
  std::byte* out = dst.data;
  for (;;) {
    fn(convert, src, extent[inner], out, dst_stride[inner]);
    size_t d = inner;
    for (;;) {
      if (d == 0) return;
      --d;
      src += src_stride[d];
      out += dst_stride[d];
      if (++index[d] < extent[d]) break;
      src -= src_stride[d] * extent[d];
      out -= dst_stride[d] * extent[d];
      index[d] = 0;
    }
  }
}

void place_target(const std::byte* decoded, std::span<const int64_t> chunk_shape,
                  const ChunkTarget& target, int64_t item_size) {
  if (target.convert != nullptr) {
    strided_transform(decoded, chunk_shape, target.chunk_start, target.dst, *target.convert);
  } else {
    strided_copy(decoded, chunk_shape, target.chunk_start, target.dst, item_size);
  }
}

void fill_target(const ChunkTarget& target, std::span<const std::byte> fill_value) {
  if (target.convert == nullptr) {
    strided_fill(target.dst, fill_value);
    return;
  }
  std::byte converted[8];
  convert_run(*target.convert, fill_value.data(), 1, converted, 0);
  strided_fill(target.dst, {converted, target.convert->decoded.size});
}

}  // namespace chute
