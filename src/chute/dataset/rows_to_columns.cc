#include "chute/dataset/rows_to_columns.h"

#include <atomic>

#include "chute/util/simd_transpose.h"
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace chute::detail {
namespace {

std::atomic<bool> portable{false};

template <bool kMap>
void scalar_columns(const float* const* rows, const float* mul, const float* add, int64_t q0,
                    int64_t q1, int64_t i0, int64_t n, float* out, int64_t out_stride) {
  for (int64_t i = i0; i < n; ++i) {
    for (int64_t q = q0; q < q1; ++q) {
      const float x = rows[q][i];
      out[i * out_stride + q] = kMap ? x * mul[q] + add[q] : x;
    }
  }
}

#if defined(__SSE2__)
// Four rows at a time; returns the first row left.
template <bool kMap>
int64_t sse_columns(const float* const* rows, const float* mul, const float* add, int64_t q0,
                    int64_t count, int64_t n, float* out, int64_t out_stride) {
  int64_t q = q0;
  for (; q + 4 <= count; q += 4) {
    __m128 m[4], a[4];
    if constexpr (kMap) {
      for (int k = 0; k < 4; ++k) m[k] = _mm_set1_ps(mul[q + k]), a[k] = _mm_set1_ps(add[q + k]);
    }
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      __m128 r[4];
      for (int k = 0; k < 4; ++k) {
        r[k] = _mm_loadu_ps(rows[q + k] + i);
        if constexpr (kMap) r[k] = _mm_add_ps(_mm_mul_ps(r[k], m[k]), a[k]);
      }
      _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);
      for (int k = 0; k < 4; ++k) _mm_storeu_ps(out + (i + k) * out_stride + q, r[k]);
    }
    scalar_columns<kMap>(rows, mul, add, q, q + 4, i, n, out, out_stride);
  }
  return q;
}
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// Eight rows at a time; returns the first row left.
template <bool kMap>
__attribute__((target("avx2"))) int64_t avx2_columns(const float* const* rows, const float* mul,
                                                     const float* add, int64_t count, int64_t n,
                                                     float* out, int64_t out_stride) {
  int64_t q = 0;
  for (; q + 8 <= count; q += 8) {
    __m256 m[8], a[8];
    if constexpr (kMap) {
      for (int k = 0; k < 8; ++k) {
        m[k] = _mm256_set1_ps(mul[q + k]);
        a[k] = _mm256_set1_ps(add[q + k]);
      }
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      __m256 r[8];
      for (int k = 0; k < 8; ++k) {
        r[k] = _mm256_loadu_ps(rows[q + k] + i);
        if constexpr (kMap) r[k] = _mm256_add_ps(_mm256_mul_ps(r[k], m[k]), a[k]);
      }
      transpose8x8_ps(r);
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(out + (i + k) * out_stride + q, r[k]);
    }
    scalar_columns<kMap>(rows, mul, add, q, q + 8, i, n, out, out_stride);
  }
  return q;
}

#endif

template <bool kMap>
void columns(const float* const* rows, const float* mul, const float* add, int64_t count, int64_t n,
             float* out, int64_t out_stride) {
  int64_t q = 0;
  if (!portable.load(std::memory_order_relaxed)) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (cpu_has_avx2()) q = avx2_columns<kMap>(rows, mul, add, count, n, out, out_stride);
#endif
#if defined(__SSE2__)
    q = sse_columns<kMap>(rows, mul, add, q, count, n, out, out_stride);
#endif
  }
  scalar_columns<kMap>(rows, mul, add, q, count, 0, n, out, out_stride);
}

}  // namespace

void rows_to_columns(const float* const* rows, const float* mul, const float* add, int64_t count,
                     int64_t n, float* out, int64_t out_stride) {
  if (mul != nullptr && add != nullptr) {
    columns<true>(rows, mul, add, count, n, out, out_stride);
  } else {
    columns<false>(rows, nullptr, nullptr, count, n, out, out_stride);
  }
}

void set_portable_rows_to_columns(bool value) { portable.store(value); }

}  // namespace chute::detail
