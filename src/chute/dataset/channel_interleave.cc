#include "chute/dataset/channel_interleave.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "chute/util/simd_transpose.h"

namespace chute::detail {

namespace {

template <typename T>
void interleave_scalar(const T* tile, int64_t stride, int64_t group, int64_t p0, int64_t n, T* dst,
                       int64_t channels) {
  for (int64_t p = p0; p < n; ++p) {
    T* pixel = dst + p * channels;
    for (int64_t j = 0; j < group; ++j) pixel[j] = tile[j * stride + p];
  }
}

#if defined(__SSE2__)
/// Eight rows of 16-bit values: blocks of 8 pixels × 8 channels transposed in registers, so
/// each pixel's eight values leave as one 16-byte store.
int64_t interleave8_u16(const uint16_t* tile, int64_t stride, int64_t n, uint16_t* dst,
                        int64_t channels) {
  int64_t p = 0;
  for (; p + 8 <= n; p += 8) {
    __m128i a[8];
    for (int j = 0; j < 8; ++j) {
      a[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + j * stride + p));
    }
    transpose8x8_epi16(a);  // a[k] = the eight channels of pixel p + k
    for (int k = 0; k < 8; ++k) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (p + k) * channels), a[k]);
    }
  }
  return p;
}

/// Eight rows of 32-bit values: two 4 × 4 transposes per 4 pixels.
int64_t interleave8_u32(const float* tile, int64_t stride, int64_t n, float* dst,
                        int64_t channels) {
  int64_t p = 0;
  for (; p + 4 <= n; p += 4) {
    for (int half = 0; half < 8; half += 4) {
      __m128 r0 = _mm_loadu_ps(tile + (half + 0) * stride + p);
      __m128 r1 = _mm_loadu_ps(tile + (half + 1) * stride + p);
      __m128 r2 = _mm_loadu_ps(tile + (half + 2) * stride + p);
      __m128 r3 = _mm_loadu_ps(tile + (half + 3) * stride + p);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(dst + (p + 0) * channels + half, r0);
      _mm_storeu_ps(dst + (p + 1) * channels + half, r1);
      _mm_storeu_ps(dst + (p + 2) * channels + half, r2);
      _mm_storeu_ps(dst + (p + 3) * channels + half, r3);
    }
  }
  return p;
}
#endif

}  // namespace

void interleave_rows(const std::byte* tile, int64_t tile_stride, int64_t group, int64_t n,
                     std::byte* dst, int64_t channels, int64_t item) {
  if (item == 2) {
    const auto* in = reinterpret_cast<const uint16_t*>(tile);
    auto* out = reinterpret_cast<uint16_t*>(dst);
    int64_t done = 0;
#if defined(__SSE2__)
    if (group == 8) done = interleave8_u16(in, tile_stride, n, out, channels);
#endif
    interleave_scalar(in, tile_stride, group, done, n, out, channels);
  } else {
    // Bits copied as integers: a float copy could quieten a signalling NaN.
    const auto* in = reinterpret_cast<const uint32_t*>(tile);
    auto* out = reinterpret_cast<uint32_t*>(dst);
    int64_t done = 0;
#if defined(__SSE2__)
    if (group == 8) {
      done = interleave8_u32(reinterpret_cast<const float*>(tile), tile_stride, n,
                             reinterpret_cast<float*>(dst), channels);
    }
#endif
    interleave_scalar(in, tile_stride, group, done, n, out, channels);
  }
}

}  // namespace chute::detail
