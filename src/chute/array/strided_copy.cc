#include "chute/array/strided_copy.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CHUTE_AVX2_TILES 1
#endif

#include "chute/util/error.h"
#include "chute/util/simd_transpose.h"

namespace chute {
namespace {

/// set_copy_kernels: kPortable keeps to the scalar kernels for transposes (tests and
/// cube_symmetry_bench compare the two in one process).
std::atomic<bool> portable_kernels{false};

/// The loop nest of a copy after dropping unit dimensions and merging contiguous neighbours,
/// outermost first. Strides are in bytes.
struct LoopNest {
  size_t rank = 0;
  int64_t extent[kMaxCopyRank];
  int64_t dst_stride[kMaxCopyRank];
  int64_t src_stride[kMaxCopyRank];

  void push(int64_t n, int64_t dst, int64_t src) {
    if (n == 1) return;  // a unit dimension never steps
    if (rank > 0 && dst_stride[rank - 1] == n * dst && src_stride[rank - 1] == n * src) {
      extent[rank - 1] *= n;  // contiguous in both: merge into the outer neighbour
      dst_stride[rank - 1] = dst;
      src_stride[rank - 1] = src;
      return;
    }
    extent[rank] = n;
    dst_stride[rank] = dst;
    src_stride[rank] = src;
    ++rank;
  }

  /// Moves dimension `from` to position `to` (later dimensions shift up by one).
  void move(size_t from, size_t to) {
    while (from < to) swap_with_next(from++);
    while (from > to) swap_with_next(--from);
  }
  void swap_with_next(size_t d) {
    std::swap(extent[d], extent[d + 1]);
    std::swap(dst_stride[d], dst_stride[d + 1]);
    std::swap(src_stride[d], src_stride[d + 1]);
  }
  /// The dimension whose stride in `strides` is ±item_size, or rank when none is.
  size_t unit_dimension(const int64_t* strides, int64_t item_size) const {
    for (size_t d = rank; d-- > 0;) {
      if (strides[d] == item_size || strides[d] == -item_size) return d;
    }
    return rank;
  }

  /// Removes the innermost dimension when it is contiguous in both and returns the bytes that
  /// one memcpy then moves; otherwise returns one element.
  int64_t pop_contiguous_run(int64_t item_size, bool src_contiguous) {
    if (rank > 0 && dst_stride[rank - 1] == item_size &&
        (!src_contiguous || src_stride[rank - 1] == item_size)) {
      --rank;
      return extent[rank] * item_size;
    }
    return item_size;
  }
};

/// Calls line(dst, src, n, dst_stride, src_stride) once per innermost line of the nest, where
/// the line runs n steps of the innermost dimension (one step when the nest is empty).
template <typename Line>
void walk(const LoopNest& nest, std::byte* dst, const std::byte* src, Line&& line) {
  if (nest.rank == 0) {
    line(dst, src, int64_t{1}, int64_t{0}, int64_t{0});
    return;
  }
  const size_t inner = nest.rank - 1;
  int64_t index[kMaxCopyRank] = {};
  for (;;) {
    line(dst, src, nest.extent[inner], nest.dst_stride[inner], nest.src_stride[inner]);
    size_t d = inner;
    for (;;) {
      if (d == 0) return;
      --d;
      dst += nest.dst_stride[d];
      src += nest.src_stride[d];
      if (++index[d] < nest.extent[d]) break;
      dst -= nest.dst_stride[d] * nest.extent[d];
      src -= nest.src_stride[d] * nest.extent[d];
      index[d] = 0;
    }
  }
}

template <size_t N>
void copy_fixed(std::byte* dst, const std::byte* src, int64_t n, int64_t dst_stride,
                int64_t src_stride) {
  for (int64_t i = 0; i < n; ++i, dst += dst_stride, src += src_stride) std::memcpy(dst, src, N);
}

using LineCopy = void (*)(std::byte*, const std::byte*, int64_t, int64_t, int64_t);

/// copy_fixed<N> for N = 0, 4, 8, ..., 4 * (sizeof...(I) - 1).
template <size_t... I>
constexpr auto make_small_copies(std::index_sequence<I...>) {
  return std::array<LineCopy, sizeof...(I)>{&copy_fixed<4 * I>...};
}

/// Short runs (a few channels of a channels-last chunk: 5 float32 = 20 bytes) dominate the
/// scatter of channel-split chunks; a fixed-size memcpy compiles to a few moves instead of a
/// call into libc per run.
constexpr int64_t kMaxSmallRun = 128;
constexpr auto kSmallCopies = make_small_copies(std::make_index_sequence<kMaxSmallRun / 4 + 1>{});

/// Copies n runs of `run` bytes; sizes of common elements get a fixed-size memcpy.
void copy_line(std::byte* dst, const std::byte* src, int64_t n, int64_t dst_stride,
               int64_t src_stride, int64_t run) {
  if (run % 4 == 0 && run <= kMaxSmallRun) {
    return kSmallCopies[static_cast<size_t>(run / 4)](dst, src, n, dst_stride, src_stride);
  }
  switch (run) {
    case 1:
      return copy_fixed<1>(dst, src, n, dst_stride, src_stride);
    case 2:
      return copy_fixed<2>(dst, src, n, dst_stride, src_stride);
    default:
      for (int64_t i = 0; i < n; ++i, dst += dst_stride, src += src_stride) {
        std::memcpy(dst, src, static_cast<size_t>(run));
      }
  }
}

/// Copies n elements of N bytes read forwards from `src` and written backwards from `dst` (the
/// highest address of the run): the innermost line of a placement that reverses the fastest
/// axis (half of the cube's 48 symmetries). Four (two) elements at a time are reversed in a
/// register instead of moved one by one.
template <size_t N>
void copy_reversed(std::byte* dst, const std::byte* src, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (N == 4 || N == 8) {
    constexpr int64_t kLanes = 16 / N;
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * N));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * N + 16));
      if constexpr (N == 4) {
        a = _mm_shuffle_epi32(a, _MM_SHUFFLE(0, 1, 2, 3));
        b = _mm_shuffle_epi32(b, _MM_SHUFFLE(0, 1, 2, 3));
      } else {
        a = _mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 3, 2));
        b = _mm_shuffle_epi32(b, _MM_SHUFFLE(1, 0, 3, 2));
      }
      std::byte* last = dst - (i + 2 * kLanes - 1) * static_cast<int64_t>(N);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(last), b);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(last + 16), a);
    }
  }
#endif
  for (; i < n; ++i) std::memcpy(dst - i * static_cast<int64_t>(N), src + i * N, N);
}

/// The line kernel for single elements of `item_size` bytes moving with these strides: a
/// reversed run when the destination steps back by one element while the source steps forward.
void copy_elements(std::byte* dst, const std::byte* src, int64_t n, int64_t dst_stride,
                   int64_t src_stride, int64_t item_size) {
  if (dst_stride == -item_size && src_stride == item_size) {
    switch (item_size) {
      case 4:
        return copy_reversed<4>(dst, src, n);
      case 8:
        return copy_reversed<8>(dst, src, n);
      case 2:
        return copy_reversed<2>(dst, src, n);
      default:
        break;
    }
  }
  copy_line(dst, src, n, dst_stride, src_stride, item_size);
}

/// Transposes whose destination-order walk reads the source with at least this stride run in
/// tiles: lines that far apart fall into the same L1 sets and evict each other. 256-byte rows
/// (a staged 64³ chunk) stay in L1 and are walked in destination order; 2 KiB rows (a crop read
/// straight from a mapped 512³ volume) are tiled: HDF5 crops 117 and 108 -> 127 and 138
/// samples/s against 4 KiB, back to back (docs/measurements/w3-volumes.md).
constexpr int64_t kTileMinStride = 1024;

/// Element-wise copies whose source rows lie at least kTileMinStride apart (a crop read straight
/// out of a mapped volume: rows of 2 KiB, planes of 1 MiB, each row's run in its own lines)
/// first copy a slice of those rows, packed, into a cache-resident stage of at most kStageBytes
/// (64 rows of 256 bytes: a 64³ float32 crop's plane or column of planes), then transpose or
/// reverse from the stage. Read straight from memory, each tile's 8 source rows missed the
/// cache at once and the transpose waited on them; staged, the rows are read as plain runs with
/// the next rows prefetched, and the registers work on L1. (cube_symmetry_bench
/// BM_PlaceRandomCropsFromVolume; docs/design/volume-crops.md.)
constexpr int64_t kStageBytes = 16 << 10;
/// Rows prefetched ahead of the one being staged.
constexpr int64_t kStagePrefetchRows = 8;

/// Copies out of far-apart rows that move at least this much write whole destination lines
/// with non-temporal stores: the destination (a batch) is not read again before it leaves the
/// cache, and a line written whole need not be read from memory first. Smaller copies keep
/// their destination cached for the caller.
constexpr int64_t kStreamDestinationMinBytes = 256 << 10;

bool streams_destination(const std::vector<int64_t>& shape, int64_t item_size) {
  int64_t bytes = item_size;
  for (int64_t n : shape) bytes *= n;
  return bytes >= kStreamDestinationMinBytes;
}

void prefetch_row(const std::byte* row, int64_t bytes) {
  for (int64_t at = 0; at < bytes; at += 64) __builtin_prefetch(row + at);
  __builtin_prefetch(row + bytes - 1);  // a row that does not start a line ends in one more
}

/// Copies `rows` rows of `row_bytes` bytes, `stride` apart from `src`, packed into `stage`.
/// `next` (or null) is where the following stage's rows start: its first rows are prefetched
/// while the last ones of this stage are copied.
void stage_rows(std::byte* stage, const std::byte* src, int64_t rows, int64_t stride,
                int64_t row_bytes, const std::byte* next) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ahead = r + kStagePrefetchRows;
    if (ahead < rows) {
      prefetch_row(src + ahead * stride, row_bytes);
    } else if (next != nullptr) {
      prefetch_row(next + (ahead - rows) * stride, row_bytes);
    }
    std::memcpy(stage + r * row_bytes, src + r * stride, static_cast<size_t>(row_bytes));
  }
}

/// Rows of `row_bytes` a stage holds (a multiple of 8, the tile edge, when more fit), or 0 when
/// one row does not fit: such copies are not staged.
int64_t stage_row_count(int64_t row_bytes) {
  const int64_t rows = kStageBytes / row_bytes;
  return rows >= 8 ? rows / 8 * 8 : rows;
}

/// A 2-D transpose block: `a` steps the destination by one element (±item_size) and the
/// source by src_a; `b` steps the source by one element and the destination by dst_b.
struct Tile {
  int64_t na, nb;
  int64_t dst_a, src_a;
  int64_t dst_b, src_b;
};

template <size_t N>
void copy_tiled_fixed(std::byte* dst, const std::byte* src, const Tile& t) {
  // 8 x 8 elements: 8 source and 8 destination lines stay in L1 while the tile is copied,
  // instead of one side missing on every element. Lines 16 KB apart (64³ float32 crops) share
  // L1 sets, so 16 x 16 tiles (16 lines a side in 8-way sets) ran at 1.9 GB/s, 8 x 8 at 2.7.
  constexpr int64_t kTile = 8;
  for (int64_t b0 = 0; b0 < t.nb; b0 += kTile) {
    const int64_t b1 = std::min(t.nb, b0 + kTile);
    for (int64_t a0 = 0; a0 < t.na; a0 += kTile) {
      const int64_t a1 = std::min(t.na, a0 + kTile);
      for (int64_t b = b0; b < b1; ++b) {
        std::byte* d = dst + b * t.dst_b + a0 * t.dst_a;
        const std::byte* s = src + b * t.src_b + a0 * t.src_a;
        for (int64_t a = a0; a < a1; ++a, d += t.dst_a, s += t.src_a) std::memcpy(d, s, N);
      }
    }
  }
}

#if defined(__SSE2__)
/// copy_tiled_fixed<4> with the 4 x 4 blocks of each tile transposed in registers: four
/// 16-byte loads along the source's rows, _MM_TRANSPOSE4_PS, four stores along the
/// destination's (reversed in the register when the destination runs backwards).
void copy_tiled_float(std::byte* dst, const std::byte* src, const Tile& t) {
  if (t.src_b != 4 || (t.dst_a != 4 && t.dst_a != -4)) return copy_tiled_fixed<4>(dst, src, t);
  constexpr int64_t kTile = 8;
  const bool backwards = t.dst_a < 0;
  auto scalar = [&](int64_t a, int64_t b) {
    std::memcpy(dst + b * t.dst_b + a * t.dst_a, src + a * t.src_a + b * 4, 4);
  };
  for (int64_t b0 = 0; b0 < t.nb; b0 += kTile) {
    const int64_t b1 = std::min(t.nb, b0 + kTile);
    for (int64_t a0 = 0; a0 < t.na; a0 += kTile) {
      const int64_t a1 = std::min(t.na, a0 + kTile);
      int64_t b = b0;
      for (; b + 4 <= b1; b += 4) {
        int64_t a = a0;
        for (; a + 4 <= a1; a += 4) {
          const std::byte* s = src + a * t.src_a + b * 4;
          __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(s));
          __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(s + t.src_a));
          __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(s + 2 * t.src_a));
          __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(s + 3 * t.src_a));
          _MM_TRANSPOSE4_PS(r0, r1, r2, r3);  // r_j = elements a..a+3 at b + j
          const __m128 rows[4] = {r0, r1, r2, r3};
          for (int64_t j = 0; j < 4; ++j) {
            std::byte* d = dst + (b + j) * t.dst_b + a * t.dst_a;
            if (backwards) {
              _mm_storeu_ps(reinterpret_cast<float*>(d - 12),
                            _mm_shuffle_ps(rows[j], rows[j], _MM_SHUFFLE(0, 1, 2, 3)));
            } else {
              _mm_storeu_ps(reinterpret_cast<float*>(d), rows[j]);
            }
          }
        }
        for (; a < a1; ++a) {
          for (int64_t j = 0; j < 4; ++j) scalar(a, b + j);
        }
      }
      for (; b < b1; ++b) {
        for (int64_t a = a0; a < a1; ++a) scalar(a, b);
      }
    }
  }
}
#endif

#if defined(__SSE2__)
/// copy_tiled_fixed<2> with 8 x 8 blocks of 2-byte elements (float16, bfloat16, int16)
/// transposed in SSE2 registers: eight 16-byte loads along the source's rows, three rounds of
/// unpacks (16-, 32-, 64-bit), eight stores along the destination's (reversed in the register
/// when the destination runs backwards). SSE2 is part of every x86-64 CPU, so no dispatch.
void copy_tiled_half(std::byte* dst, const std::byte* src, const Tile& t) {
  const bool backwards = t.dst_a < 0;
  auto scalar = [&](int64_t a, int64_t b) {
    std::memcpy(dst + b * t.dst_b + a * t.dst_a, src + a * t.src_a + b * 2, 2);
  };
  int64_t b = 0;
  for (; b + 8 <= t.nb; b += 8) {
    int64_t a = 0;
    for (; a + 8 <= t.na; a += 8) {
      const std::byte* s = src + a * t.src_a + b * 2;
      __m128i r[8];
      for (int k = 0; k < 8; ++k) {
        r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k * t.src_a));
      }
      detail::transpose8x8_epi16(r);  // r[j] = elements a..a+7 at b + j
      for (int64_t j = 0; j < 8; ++j) {
        std::byte* d = dst + (b + j) * t.dst_b + a * t.dst_a;
        if (backwards) {
          __m128i v = _mm_shufflelo_epi16(r[j], _MM_SHUFFLE(0, 1, 2, 3));
          v = _mm_shufflehi_epi16(v, _MM_SHUFFLE(0, 1, 2, 3));
          v = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 3, 2));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d - 14), v);
        } else {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d), r[j]);
        }
      }
    }
    for (; a < t.na; ++a) {
      for (int64_t j = 0; j < 8; ++j) scalar(a, b + j);
    }
  }
  for (; b < t.nb; ++b) {
    for (int64_t a = 0; a < t.na; ++a) scalar(a, b);
  }
}
#endif

#if defined(CHUTE_AVX2_TILES)
/// copy_tiled_float with 8 x 8 blocks transposed in AVX2 registers (eight 32-byte loads along
/// the source's rows, three rounds of shuffles, eight stores along the destination's), for
/// CPUs that have AVX2 (checked once at run time; the SSE2 kernel is the baseline).
__attribute__((target("avx2"))) void copy_tiled_float_avx2(std::byte* dst, const std::byte* src,
                                                           const Tile& t) {
  const bool backwards = t.dst_a < 0;
  const __m256i reverse = _mm256_set_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  auto scalar = [&](int64_t a, int64_t b) {
    std::memcpy(dst + b * t.dst_b + a * t.dst_a, src + a * t.src_a + b * 4, 4);
  };
  int64_t b = 0;
  for (; b + 8 <= t.nb; b += 8) {
    int64_t a = 0;
    for (; a + 8 <= t.na; a += 8) {
      const std::byte* s = src + a * t.src_a + b * 4;
      __m256 r[8];
      for (int k = 0; k < 8; ++k)
        r[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + k * t.src_a));
      detail::transpose8x8_ps(r);  // r[j] = elements a..a+7 at b + j
      for (int64_t j = 0; j < 8; ++j) {
        std::byte* d = dst + (b + j) * t.dst_b + a * t.dst_a;
        if (backwards) {
          _mm256_storeu_ps(reinterpret_cast<float*>(d - 28),
                           _mm256_permutevar8x32_ps(r[j], reverse));
        } else {
          _mm256_storeu_ps(reinterpret_cast<float*>(d), r[j]);
        }
      }
    }
    for (; a < t.na; ++a) {
      for (int64_t j = 0; j < 8; ++j) scalar(a, b + j);
    }
  }
  for (; b < t.nb; ++b) {
    for (int64_t a = 0; a < t.na; ++a) scalar(a, b);
  }
}

/// Writes the 16 floats of `lo` (elements i..i+7) and `hi` (i+8..i+15) reversed, as one whole
/// line [d - 15, d] with two adjacent non-temporal stores: element i lands at d, i+15 at d - 15.
__attribute__((target("avx2"))) inline void stream_line_reversed(float* d, __m256 lo, __m256 hi) {
  const __m256i reverse = _mm256_set_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  _mm256_stream_ps(d - 7, _mm256_permutevar8x32_ps(lo, reverse));
  _mm256_stream_ps(d - 15, _mm256_permutevar8x32_ps(hi, reverse));
}

/// A staged transpose into a destination that is not read again soon (a batch): 16 (a) x 8 (b)
/// blocks, two 8 x 8 transposes, and each destination line's 64 bytes written whole by two
/// adjacent non-temporal stores, so the line is never read from memory first. With 8 x 8
/// blocks a line's two halves came from different blocks and streaming stores were slower than
/// cached ones; whole lines made staged transposes of mapped crops 24% faster (design notes:
/// docs/design/volume-crops.md).
/// Preconditions (streams_whole_lines): float32, na % 16 == 0, nb % 8 == 0, src_b == 4,
/// dst_a == +-4, every destination line this writes starts at a 64-byte boundary.
__attribute__((target("avx2"))) void copy_tiled_float_avx2_lines(std::byte* dst,
                                                                 const std::byte* src,
                                                                 const Tile& t) {
  const bool backwards = t.dst_a < 0;
  for (int64_t b = 0; b < t.nb; b += 8) {
    for (int64_t a = 0; a < t.na; a += 16) {
      const std::byte* s = src + a * t.src_a + b * 4;
      __m256 lo[8], hi[8];
      for (int k = 0; k < 8; ++k) {
        lo[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + k * t.src_a));
        hi[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + (k + 8) * t.src_a));
      }
      detail::transpose8x8_ps(lo);  // lo[j] = elements a..a+7 at b + j, hi[j] = a+8..a+15
      detail::transpose8x8_ps(hi);
      for (int64_t j = 0; j < 8; ++j) {
        auto* d = reinterpret_cast<float*>(dst + (b + j) * t.dst_b + a * t.dst_a);
        if (backwards) {  // element a at d, a+15 at d - 15: the line is [d - 15, d]
          stream_line_reversed(d, lo[j], hi[j]);
        } else {
          _mm256_stream_ps(d, lo[j]);
          _mm256_stream_ps(d + 8, hi[j]);
        }
      }
    }
  }
}

/// copy_reversed<4> for a staged row into a destination line-aligned at its low end: 16
/// elements at a time, reversed in registers, written as one whole line by two adjacent
/// non-temporal stores (`dst` is the highest element, as for copy_reversed). Precondition:
/// n % 16 == 0, dst + 4 on a 64-byte boundary.
__attribute__((target("avx2"))) void copy_reversed_float_avx2_lines(std::byte* dst,
                                                                    const std::byte* src,
                                                                    int64_t n) {
  auto* d = reinterpret_cast<float*>(dst);
  const auto* s = reinterpret_cast<const float*>(src);
  for (int64_t i = 0; i < n; i += 16) {
    stream_line_reversed(d - i, _mm256_loadu_ps(s + i), _mm256_loadu_ps(s + i + 8));
  }
}

#endif

/// True when a tile of `item_size` elements has a kernel that transposes blocks in registers
/// here (not kPortable; the source's unit step and the destination's are one element).
bool has_register_tiles(int64_t item_size) {
  if (portable_kernels.load(std::memory_order_relaxed)) return false;
#if defined(CHUTE_AVX2_TILES)
  if (item_size == 4) return detail::cpu_has_avx2();
#endif
#if defined(__SSE2__)
  if (item_size == 2) return true;
#endif
  return false;
}

/// True when copy_tiled_float_avx2_lines can place tile `t` of `item_size` elements at `dst`.
bool streams_whole_lines(const std::byte* dst, const Tile& t, int64_t item_size) {
#if defined(CHUTE_AVX2_TILES)
  if (item_size != 4 || t.src_b != 4 || (t.dst_a != 4 && t.dst_a != -4) || t.na % 16 != 0 ||
      t.nb % 8 != 0 || t.dst_b % 64 != 0 || !has_register_tiles(4)) {
    return false;
  }
  // The first line's lowest address: dst itself, or 15 elements below it when a runs backwards.
  const auto first = reinterpret_cast<uintptr_t>(dst) - (t.dst_a < 0 ? 60 : 0);
  return first % 64 == 0;
#else
  return false;
#endif
}

void copy_tiled(std::byte* dst, const std::byte* src, const Tile& t, int64_t item_size) {
  const bool unit_steps = t.src_b == item_size && (t.dst_a == item_size || t.dst_a == -item_size);
  const bool registers = unit_steps && !portable_kernels.load(std::memory_order_relaxed);
  switch (item_size) {
    case 1:
      return copy_tiled_fixed<1>(dst, src, t);
    case 2:
#if defined(__SSE2__)
      if (registers) return copy_tiled_half(dst, src, t);
#endif
      return copy_tiled_fixed<2>(dst, src, t);
    case 4:
#if defined(CHUTE_AVX2_TILES)
      if (registers && detail::cpu_has_avx2()) return copy_tiled_float_avx2(dst, src, t);
#endif
#if defined(__SSE2__)
      if (registers) return copy_tiled_float(dst, src, t);
#endif
      return copy_tiled_fixed<4>(dst, src, t);
    case 8:
      return copy_tiled_fixed<8>(dst, src, t);
    default:
      for (int64_t b = 0; b < t.nb; ++b) {
        copy_line(dst + b * t.dst_b, src + b * t.src_b, t.na, t.dst_a, t.src_a, item_size);
      }
  }
}

template <size_t N>
void interleave_fixed(std::span<const InterleavedRun> runs, std::ptrdiff_t dst_offset,
                      std::ptrdiff_t src_offset, int64_t n, int64_t dst_stride,
                      int64_t src_stride) {
  for (int64_t i = 0; i < n; ++i, dst_offset += dst_stride, src_offset += src_stride) {
    for (const InterleavedRun& run : runs) {
      std::memcpy(run.dst + dst_offset, run.src + src_offset, N);
    }
  }
}

using InterleaveLine = void (*)(std::span<const InterleavedRun>, std::ptrdiff_t, std::ptrdiff_t,
                                int64_t, int64_t, int64_t);

template <size_t... I>
constexpr auto make_small_interleaves(std::index_sequence<I...>) {
  return std::array<InterleaveLine, sizeof...(I)>{&interleave_fixed<4 * I>...};
}

constexpr auto kSmallInterleaves =
    make_small_interleaves(std::make_index_sequence<kMaxSmallRun / 4 + 1>{});

/// Runs of any sizes: a memcpy of each run's own length.
void interleave_any(std::span<const InterleavedRun> runs, std::ptrdiff_t dst_offset,
                    std::ptrdiff_t src_offset, int64_t n, int64_t dst_stride, int64_t src_stride) {
  for (int64_t i = 0; i < n; ++i, dst_offset += dst_stride, src_offset += src_stride) {
    for (const InterleavedRun& run : runs) {
      std::memcpy(run.dst + dst_offset, run.src + src_offset, static_cast<size_t>(run.bytes));
    }
  }
}

/// The line kernel for these runs, chosen once per copy: runs of one small size (the common
/// case: every chunk holds the same number of channels) get a fixed-size memcpy.
InterleaveLine choose_interleave(std::span<const InterleavedRun> runs) {
  const int64_t bytes = runs.front().bytes;
  const bool uniform = std::all_of(runs.begin(), runs.end(),
                                   [&](const InterleavedRun& run) { return run.bytes == bytes; });
  if (uniform && bytes % 4 == 0 && bytes <= kMaxSmallRun) {
    return kSmallInterleaves[static_cast<size_t>(bytes / 4)];
  }
  return &interleave_any;
}

/// Interleaved copies of at least kStreamMinBytes whose runs tile each destination line are
/// assembled in a cache-resident bounce buffer of kStreamBounceBytes and streamed out. The
/// bounce is filled one run at a time, so each source is read as one sequential stretch
/// (16 KB of W1 pixels: 102 × 20 bytes per channel chunk) with its pointers in registers.
/// Measured on W1 samples (8 chunks of 20-byte runs): 7.1 GB/s pixel by pixel into an 8 KB
/// bounce, 10.4-11.2 GB/s run by run into 16 KB, 9.1-10.7 GB/s into 32-256 KB (one thread).
constexpr int64_t kStreamMinBytes = 1 << 20;
constexpr int64_t kStreamBounceBytes = 16 << 10;

/// True when the runs sit side by side in the destination and fill one outer step exactly
/// (`step` bytes), so that consecutive steps form one contiguous range.
bool runs_tile_steps(std::span<const InterleavedRun> runs, int64_t step) {
  int64_t width = 0;
  for (const InterleavedRun& run : runs) {
    if (run.dst != runs.front().dst + width) return false;
    width += run.bytes;
  }
  return width == step;
}

void check_rank(size_t rank) {
  if (rank > kMaxCopyRank) {
    fail(ErrorCode::kUnsupported, "expected a view of rank at most {}, got rank {}", kMaxCopyRank,
         rank);
  }
}

bool has_zero_extent(const std::vector<int64_t>& shape) {
  return std::any_of(shape.begin(), shape.end(), [](int64_t n) { return n <= 0; });
}

}  // namespace

void set_copy_kernels(CopyKernels kernels) {
  portable_kernels.store(kernels == CopyKernels::kPortable, std::memory_order_relaxed);
}

void strided_copy(const std::byte* src, std::span<const int64_t> src_shape,
                  std::span<const int64_t> src_start, const StridedView& dst, int64_t item_size) {
  const size_t rank = dst.shape.size();
  check_rank(rank);
  if (src_shape.size() != rank || src_start.size() != rank || dst.byte_strides.size() != rank) {
    fail(ErrorCode::kInternal, "strided_copy: ranks differ (source {}, start {}, destination {})",
         src_shape.size(), src_start.size(), rank);
  }
  if (has_zero_extent(dst.shape)) return;

  int64_t src_strides[kMaxCopyRank];
  int64_t stride = item_size;
  int64_t offset = 0;
  for (size_t d = rank; d-- > 0;) {
    src_strides[d] = stride;
    offset += src_start[d] * stride;
    stride *= src_shape[d];
  }
  LoopNest nest;
  for (size_t d = 0; d < rank; ++d) nest.push(dst.shape[d], dst.byte_strides[d], src_strides[d]);
  const int64_t run = nest.pop_contiguous_run(item_size, /*src_contiguous=*/true);
  if (run > item_size) {
    if (run % 64 == 0 && nest.rank > 0 && nest.src_stride[nest.rank - 1] >= kTileMinStride &&
        streams_destination(dst.shape, item_size)) {
      // Whole lines out of far-apart source rows (a crop of a mapped volume, no transpose):
      // the next rows prefetched, each run streamed where it starts a line.
      bool streamed = false;
      walk(nest, dst.data, src + offset,
           [&](std::byte* d, const std::byte* s, int64_t n, int64_t ds, int64_t ss) {
             for (int64_t i = 0; i < n; ++i, d += ds, s += ss) {
               if (i + kStagePrefetchRows < n) prefetch_row(s + kStagePrefetchRows * ss, run);
               if (reinterpret_cast<uintptr_t>(d) % 64 == 0) {
                 stream_bytes(d, s, static_cast<size_t>(run));
                 streamed = true;
               } else {
                 std::memcpy(d, s, static_cast<size_t>(run));
               }
             }
           });
      if (streamed) stream_fence();
      return;
    }
    walk(nest, dst.data, src + offset,
         [run](std::byte* d, const std::byte* s, int64_t n, int64_t ds, int64_t ss) {
           copy_line(d, s, n, ds, ss, run);
         });
    return;
  }
  // Element by element: a permuted or reversed destination (a transformed crop). When the
  // destination's unit-stride dimension is not the source's, the copy is a transpose: it runs
  // in tiles of both, so that neither side is walked across the whole block with a stride.
  const size_t dst_unit = nest.unit_dimension(nest.dst_stride, item_size);
  const size_t src_unit = nest.unit_dimension(nest.src_stride, item_size);
  const bool transpose =
      nest.rank >= 2 && dst_unit < nest.rank && src_unit < nest.rank && dst_unit != src_unit;
  if (transpose && std::abs(nest.src_stride[dst_unit]) < kTileMinStride &&
      !has_register_tiles(item_size)) {
    // Short strides without register tiles: write the destination in order, reading the
    // source lines (few, close together) from L1. Measured on 64³ float32 crops: 6 GB/s
    // against 4 GB/s in scalar tiles. With register tiles every transpose is tiled
    // (docs/design/volume-crops.md; the figures: docs/measurements/w3-volumes.md).
    nest.move(dst_unit, nest.rank - 1);
  } else if (transpose) {
    const int64_t d_unit = nest.dst_stride[dst_unit], s_unit = nest.src_stride[src_unit];
    nest.move(src_unit, nest.rank - 1);
    nest.move(nest.unit_dimension(nest.dst_stride, item_size), nest.rank - 1);
    // Now: [..., source unit dimension (b), destination unit dimension (a)].
    Tile tile{nest.extent[nest.rank - 1],     nest.extent[nest.rank - 2],     d_unit,
              nest.src_stride[nest.rank - 1], nest.dst_stride[nest.rank - 2], s_unit};
    nest.rank -= 2;
    const int64_t row_bytes = tile.nb * item_size;
    const int64_t stage_rows_max = stage_row_count(row_bytes);
    if (tile.src_a < kTileMinStride || stage_rows_max == 0) {
      walk(nest, dst.data, src + offset,
           [&](std::byte* d, const std::byte* s, int64_t n, int64_t ds, int64_t ss) {
             for (int64_t i = 0; i < n; ++i) copy_tiled(d + i * ds, s + i * ss, tile, item_size);
           });
      return;
    }
    // Staged: the tile's source rows (one per step of a), stage by stage, then the tile from
    // the stage (whole destination lines streamed where they line up).
    alignas(64) std::byte stage[kStageBytes];
    const bool stream = streams_destination(dst.shape, item_size);
    bool streamed = false;
    walk(nest, dst.data, src + offset,
         [&](std::byte* d, const std::byte* s, int64_t n, int64_t ds, int64_t ss) {
           for (int64_t i = 0; i < n; ++i) {
             const std::byte* from = s + i * ss;
             for (int64_t a = 0; a < tile.na; a += stage_rows_max) {
               Tile part = tile;
               part.na = std::min(stage_rows_max, tile.na - a);
               part.src_a = row_bytes;
               const std::byte* next = a + part.na < tile.na ? from + (a + part.na) * tile.src_a
                                       : i + 1 < n           ? from + ss
                                                             : nullptr;
               stage_rows(stage, from + a * tile.src_a, part.na, tile.src_a, row_bytes, next);
               std::byte* to = d + i * ds + a * tile.dst_a;
#if defined(CHUTE_AVX2_TILES)
               if (stream && streams_whole_lines(to, part, item_size)) {
                 copy_tiled_float_avx2_lines(to, stage, part);
                 streamed = true;
                 continue;
               }
#endif
               copy_tiled(to, stage, part, item_size);
             }
           }
         });
    if (streamed) stream_fence();
    return;
  }
  // Reversed runs, or elements to a destination without a unit stride (channels-last): staged
  // slice by slice of the two innermost dimensions when the source rows are far apart. Float32
  // rows reversed into whole destination lines are streamed.
  const size_t r = nest.rank;
  const int64_t row_bytes = r >= 2 ? nest.extent[r - 1] * item_size : 0;
  const int64_t stage_rows_max = r >= 2 ? stage_row_count(row_bytes) : 0;
  if (r < 2 || nest.src_stride[r - 1] != item_size || nest.src_stride[r - 2] < kTileMinStride ||
      stage_rows_max == 0) {
    walk(nest, dst.data, src + offset,
         [item_size](std::byte* d, const std::byte* s, int64_t n, int64_t ds, int64_t ss) {
           copy_elements(d, s, n, ds, ss, item_size);
         });
    return;
  }
  const int64_t elements = nest.extent[r - 1], dst_step = nest.dst_stride[r - 1];
  const int64_t rows = nest.extent[r - 2];
  const int64_t src_row = nest.src_stride[r - 2], dst_row = nest.dst_stride[r - 2];
  // Walk the outer dimensions with the row dimension as the line: each call is one slice.
  nest.rank -= 1;
  const bool stream_rows = item_size == 4 && dst_step == -4 && elements % 16 == 0 &&
                           has_register_tiles(4) && streams_destination(dst.shape, item_size);
  bool streamed = false;
  alignas(64) std::byte stage[kStageBytes];
  walk(nest, dst.data, src + offset,
       [&](std::byte* d, const std::byte* s, int64_t, int64_t, int64_t) {
         for (int64_t at = 0; at < rows; at += stage_rows_max) {
           const int64_t count = std::min(stage_rows_max, rows - at);
           const std::byte* from = s + at * src_row;
           stage_rows(stage, from, count, src_row, row_bytes,
                      at + count < rows ? from + count * src_row : nullptr);
           for (int64_t k = 0; k < count; ++k) {
             std::byte* to = d + (at + k) * dst_row;
#if defined(CHUTE_AVX2_TILES)
             if (stream_rows && (reinterpret_cast<uintptr_t>(to) + 4) % 64 == 0) {
               copy_reversed_float_avx2_lines(to, stage + k * row_bytes, elements);
               streamed = true;
               continue;
             }
#endif
             copy_elements(to, stage + k * row_bytes, elements, dst_step, item_size, item_size);
           }
         }
       });
  if (streamed) stream_fence();
}

void interleaved_copy(std::span<const InterleavedRun> runs, std::span<const int64_t> outer_shape,
                      std::span<const int64_t> dst_strides, std::span<const int64_t> src_strides) {
  const size_t rank = outer_shape.size();
  check_rank(rank);
  if (dst_strides.size() != rank || src_strides.size() != rank) {
    fail(ErrorCode::kInternal, "interleaved_copy: ranks differ (shape {}, strides {} and {})", rank,
         dst_strides.size(), src_strides.size());
  }
  if (runs.empty() ||
      std::any_of(outer_shape.begin(), outer_shape.end(), [](int64_t n) { return n <= 0; })) {
    return;
  }
  LoopNest nest;
  for (size_t d = 0; d < rank; ++d) nest.push(outer_shape[d], dst_strides[d], src_strides[d]);
  // The walk moves the first run's pointers; every run applies the same offsets to its own.
  std::byte* dst0 = runs.front().dst;
  const std::byte* src0 = runs.front().src;
  const int64_t step = nest.rank > 0 ? nest.dst_stride[nest.rank - 1] : 0;
  int64_t steps = 1;
  for (size_t d = 0; d < nest.rank; ++d) steps *= nest.extent[d];
  const InterleaveLine line = choose_interleave(runs);
  if (step <= 0 || step > kStreamBounceBytes || steps * step < kStreamMinBytes ||
      !runs_tile_steps(runs, step)) {
    walk(nest, dst0, src0,
         [&](std::byte* d, const std::byte* s, int64_t n, int64_t ds, int64_t ss) {
           line(runs, d - dst0, s - src0, n, ds, ss);
         });
    return;
  }
  // Each line is contiguous: assemble a bounce buffer's worth of steps, run by run, then
  // stream it out.
  alignas(64) std::byte bounce[kStreamBounceBytes];
  const int64_t per_bounce = kStreamBounceBytes / step;
  walk(nest, dst0, src0, [&](std::byte* d, const std::byte* s, int64_t n, int64_t, int64_t ss) {
    for (int64_t i = 0; i < n; i += per_bounce) {
      const int64_t k = std::min(per_bounce, n - i);
      const std::ptrdiff_t src_offset = s - src0 + i * ss;
      for (const InterleavedRun& run : runs) {
        copy_line(bounce + (run.dst - dst0), run.src + src_offset, k, step, ss, run.bytes);
      }
      stream_bytes(d + i * step, bounce, static_cast<size_t>(k * step));
    }
  });
  stream_fence();
}

void strided_fill(const StridedView& dst, std::span<const std::byte> value) {
  const size_t rank = dst.shape.size();
  check_rank(rank);
  if (dst.byte_strides.size() != rank) {
    fail(ErrorCode::kInternal, "strided_fill: {} strides for rank {}", dst.byte_strides.size(),
         rank);
  }
  if (has_zero_extent(dst.shape) || value.empty()) return;
  const auto item_size = static_cast<int64_t>(value.size());

  LoopNest nest;
  for (size_t d = 0; d < rank; ++d) nest.push(dst.shape[d], dst.byte_strides[d], 0);
  const int64_t run = nest.pop_contiguous_run(item_size, /*src_contiguous=*/false);
  const auto run_bytes = static_cast<size_t>(run);

  const bool one_byte_pattern =
      std::all_of(value.begin(), value.end(), [&](std::byte b) { return b == value[0]; });
  if (one_byte_pattern) {  // zeros, or any one-byte element: memset each run
    const int c = std::to_integer<int>(value[0]);
    walk(nest, dst.data, nullptr,
         [&](std::byte* d, const std::byte*, int64_t n, int64_t ds, int64_t) {
           for (int64_t i = 0; i < n; ++i, d += ds) std::memset(d, c, run_bytes);
         });
    return;
  }
  if (run == item_size) {  // element by element, from the value itself
    walk(nest, dst.data, value.data(),
         [&](std::byte* d, const std::byte* s, int64_t n, int64_t ds, int64_t) {
           copy_line(d, s, n, ds, 0, run);
         });
    return;
  }
  // Contiguous runs: fill the first run by doubling, then copy it to every other run.
  std::byte* pattern = dst.data;
  std::memcpy(pattern, value.data(), value.size());
  for (size_t filled = value.size(); filled < run_bytes;) {
    const size_t count = std::min(filled, run_bytes - filled);
    std::memcpy(pattern + filled, pattern, count);
    filled += count;
  }
  walk(nest, dst.data, nullptr,
       [&](std::byte* d, const std::byte*, int64_t n, int64_t ds, int64_t) {
         for (int64_t i = 0; i < n; ++i, d += ds) {
           if (d != pattern) std::memcpy(d, pattern, run_bytes);
         }
       });
}

}  // namespace chute
