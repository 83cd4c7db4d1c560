#include "chute/array/strided_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "chute/util/element_count.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using Coords = std::vector<int64_t>;

bool next_index(Coords& index, const Coords& shape) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

TEST(StridedView, ContiguousStridesAreCOrder) {
  std::byte* base = nullptr;
  auto view = StridedView::contiguous(base, {2, 3, 4}, 8);
  EXPECT_EQ(view.byte_strides, (Coords{96, 32, 8}));
  EXPECT_TRUE(view.is_contiguous(8));
  EXPECT_FALSE(view.is_contiguous(4));
  auto scalar = StridedView::contiguous(base, {}, 4);
  EXPECT_TRUE(scalar.byte_strides.empty());
  EXPECT_TRUE(scalar.is_contiguous(4));
}

TEST(StridedView, UnitDimensionsIgnoreTheirStride) {
  StridedView view{nullptr, {1, 5, 1, 2}, {12345, 8, -7, 4}};
  EXPECT_TRUE(view.is_contiguous(4));
  StridedView channel{nullptr, {4, 5}, {60, 12}};  // every 3rd float
  EXPECT_FALSE(channel.is_contiguous(4));
}

/// The box [start, start+dst_shape) of a C-order source, copied element by element into a
/// destination buffer laid out with `dst_strides`: the naive reference.
void naive_copy(const std::byte* src, const Coords& src_shape, const Coords& start, std::byte* dst,
                const Coords& dst_shape, const Coords& dst_strides, int64_t item) {
  if (element_count(dst_shape) == 0) return;
  Coords index(dst_shape.size(), 0);
  do {
    int64_t s = 0, t = 0, stride = item;
    for (size_t d = dst_shape.size(); d-- > 0;) {
      s += (start[d] + index[d]) * stride;
      stride *= src_shape[d];
      t += index[d] * dst_strides[d];
    }
    std::memcpy(dst + t, src + s, static_cast<size_t>(item));
  } while (!dst_shape.empty() && next_index(index, dst_shape));
}

struct Layout {
  Coords strides;
  int64_t nbytes;
};

/// A destination layout for `shape`: C order with each dimension's extent padded by `pad[d]`
/// and the innermost spaced by `spacing` elements (e.g. every 3rd channel).
Layout padded_layout(const Coords& shape, const Coords& pad, int64_t spacing, int64_t item) {
  Layout layout{Coords(shape.size()), 0};
  int64_t stride = item * spacing;
  for (size_t d = shape.size(); d-- > 0;) {
    layout.strides[d] = stride;
    stride *= shape[d] + pad[d];
  }
  layout.nbytes = stride;
  return layout;
}

TEST(StridedCopy, RandomBoxesMatchElementwiseCopy) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t rank = static_cast<size_t>(trial % 6);
    const int64_t items[] = {1, 2, 3, 4, 8, 16};
    const int64_t item = items[rng() % 6];
    Coords src_shape(rank), start(rank), shape(rank), pad(rank);
    for (size_t d = 0; d < rank; ++d) {
      src_shape[d] = 1 + static_cast<int64_t>(rng() % 6);
      start[d] = static_cast<int64_t>(rng() % static_cast<uint64_t>(src_shape[d]));
      shape[d] = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(src_shape[d] - start[d]));
      pad[d] = (rng() % 3 == 0) ? static_cast<int64_t>(rng() % 3) : 0;
    }
    const int64_t spacing = (rng() % 4 == 0) ? 3 : 1;
    std::vector<std::byte> src(static_cast<size_t>(element_count(src_shape) * item));
    for (auto& b : src) b = static_cast<std::byte>(rng());
    Layout layout = padded_layout(shape, pad, spacing, item);
    std::vector<std::byte> actual(static_cast<size_t>(layout.nbytes), std::byte{0xEE});
    std::vector<std::byte> expected = actual;

    naive_copy(src.data(), src_shape, start, expected.data(), shape, layout.strides, item);
    StridedView dst{actual.data(), shape, layout.strides};
    strided_copy(src.data(), src_shape, start, dst, item);
    ASSERT_EQ(expected, actual) << "trial " << trial << " rank " << rank << " item " << item;
  }
}

/// Copies box [start, start + box) of a random C-order source into a destination whose axes
/// are permuted by `order` (output axis k is source axis order[k]), reversed where `flips` says
/// and spaced by `spacing` elements, and compares with the element-by-element reference. The
/// destination starts `misalign` bytes past a 64-byte boundary.
void check_permuted_box(const std::vector<std::byte>& src, const Coords& src_shape,
                        const Coords& start, const Coords& box, const std::vector<size_t>& order,
                        const std::vector<bool>& flips, int64_t spacing, int64_t item,
                        int64_t misalign = 0) {
  const size_t rank = box.size();
  Coords out_shape(rank);
  for (size_t k = 0; k < rank; ++k) out_shape[k] = box[order[k]];
  const Layout layout = padded_layout(out_shape, Coords(rank, 0), spacing, item);
  std::vector<std::byte> buffer(static_cast<size_t>(layout.nbytes + 128), std::byte{0xEE});
  std::vector<std::byte> expected = buffer;
  const auto lead =
      static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64 +
                           static_cast<uint64_t>(misalign));
  std::byte* actual = buffer.data() + lead;
  // The destination indexed by the source's axes: permuted, negative strides where reversed.
  StridedView dst{actual, box, Coords(rank)};
  int64_t origin = 0;
  for (size_t k = 0; k < rank; ++k) {
    const int64_t stride = layout.strides[k];
    dst.byte_strides[order[k]] = flips[k] ? -stride : stride;
    if (flips[k]) origin += (out_shape[k] - 1) * stride;
  }
  dst.data += origin;
  naive_copy(src.data(), src_shape, start, expected.data() + lead + origin, box, dst.byte_strides,
             item);
  strided_copy(src.data(), src_shape, start, dst, item);
  ASSERT_EQ(expected, buffer) << "item " << item << " spacing " << spacing << " misalign "
                              << misalign;
}

/// Random bytes for a source of `shape`.
std::vector<std::byte> random_source(const Coords& shape, int64_t item, std::mt19937_64& rng) {
  std::vector<std::byte> src(static_cast<size_t>(element_count(shape) * item));
  for (size_t i = 0; i + 8 <= src.size(); i += 8) {
    const uint64_t bits = rng();
    std::memcpy(src.data() + i, &bits, 8);
  }
  return src;
}

// Source rows at least 1 KiB apart (a crop straight out of a mapped volume) go through a
// cache-resident stage before they are transposed, reversed or scattered: every element size,
// both kernels, boxes whose rows fill one stage, several, or do not fit one (rows over 16 KiB,
// copied unstaged).
TEST(StridedCopy, FarApartSourceRowsMatchElementwiseCopy) {
  std::mt19937_64 rng(13);
  for (CopyKernels kernels : {CopyKernels::kBest, CopyKernels::kPortable}) {
    SCOPED_TRACE(kernels == CopyKernels::kBest ? "register kernels" : "portable kernels");
    set_copy_kernels(kernels);
    for (int trial = 0; trial < 24; ++trial) {
      const int64_t items[] = {1, 2, 4, 8};
      const int64_t item = items[trial % 4];
      // Rows of 1 KiB and more; boxes of 1 to 130 rows per slice.
      Coords src_shape{1 + static_cast<int64_t>(rng() % 5), 2 + static_cast<int64_t>(rng() % 70),
                       1024 / item + static_cast<int64_t>(rng() % 600)};
      Coords start(3), box(3);
      for (size_t d = 0; d < 3; ++d) {
        start[d] = static_cast<int64_t>(rng() % static_cast<uint64_t>(src_shape[d]));
        box[d] = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(src_shape[d] - start[d]));
      }
      std::vector<size_t> order{0, 1, 2};
      std::shuffle(order.begin(), order.end(), rng);
      const std::vector<bool> flips{rng() % 2 == 0, rng() % 2 == 0, rng() % 2 == 0};
      const int64_t spacing = trial % 5 == 0 ? 3 : 1;  // channels-last: no unit stride
      SCOPED_TRACE(::testing::Message()
                   << "trial " << trial << " order " << order[0] << order[1] << order[2]
                   << " flips " << flips[0] << flips[1] << flips[2]);
      check_permuted_box(random_source(src_shape, item, rng), src_shape, start, box, order, flips,
                         spacing, item);
    }
    // A 64³ float32 crop of a 512-wide volume (rows of 2 KiB, 64 rows per slice: one stage each)
    // in every permutation and reversal, into a destination on a 64-byte boundary (copies of
    // 256 KiB and more stream whole lines there: transposed, reversed or plain runs) and off
    // one; then 64 x 48 x 32 (lines 128 and 192 bytes long) and 56 x 64 x 24 (partial blocks).
    const Coords volume{64, 70, 512}, corner{0, 3, 101};
    const std::vector<std::byte> x = random_source(volume, 4, rng);
    for (const auto& order : std::vector<std::vector<size_t>>{
             {0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}) {
      for (int flips = 0; flips < 8; ++flips) {
        const std::vector<bool> flip{(flips & 1) != 0, (flips & 2) != 0, (flips & 4) != 0};
        check_permuted_box(x, volume, corner, {64, 64, 64}, order, flip, 1, 4);
        check_permuted_box(x, volume, corner, {64, 64, 64}, order, flip, 1, 4, 4);
        check_permuted_box(x, volume, corner, {64, 48, 32}, order, flip, 1, 4);
        check_permuted_box(x, volume, corner, {56, 64, 24}, order, flip, 1, 4);
      }
    }
    // Rows of exactly one stage (16 KiB), and rows that do not fit one.
    const Coords wide{3, 9, 4100};
    const std::vector<std::byte> w = random_source(wide, 4, rng);
    check_permuted_box(w, wide, {0, 0, 2}, {3, 5, 4096}, {2, 0, 1}, {false, true, false}, 1, 4);
    check_permuted_box(w, wide, {0, 0, 1}, {3, 5, 4097}, {2, 1, 0}, {true, false, true}, 1, 4);
    check_permuted_box(w, wide, {0, 0, 1}, {2, 9, 4097}, {0, 1, 2}, {false, false, true}, 1, 4);
  }
  set_copy_kernels(CopyKernels::kBest);
}

TEST(StridedCopy, ZeroExtentCopiesNothing) {
  std::vector<std::byte> src(16, std::byte{1}), dst(16, std::byte{0});
  StridedView view{dst.data(), {0, 4}, {16, 4}};
  strided_copy(src.data(), Coords{4, 4}, Coords{0, 0}, view, 1);
  EXPECT_EQ(dst, std::vector<std::byte>(16, std::byte{0}));
}

TEST(StridedCopy, RankAboveTheLimitIsUnsupported) {
  Coords shape(kMaxCopyRank + 1, 1), start(kMaxCopyRank + 1, 0);
  std::byte one{};
  auto view = StridedView::contiguous(&one, shape, 1);
  try {
    strided_copy(&one, shape, start, view, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
}

/// Chunks of one shape (outer extents, then an innermost extent wide enough for every width)
/// that fill `widths` columns each of a padded destination's innermost dimension, interleaved
/// in one call, against one naive copy per chunk. Edge chunks give narrower widths.
void check_interleave(const Coords& outer, const std::vector<int64_t>& widths, int64_t item,
                      std::mt19937_64& rng) {
  int64_t total = 0, widest = 0;
  for (int64_t w : widths) {
    total += w;
    widest = std::max(widest, w);
  }
  Coords shape = outer;
  shape.push_back(total);
  Coords pad(shape.size(), 0);
  if (!outer.empty()) pad[0] = 1;
  Layout layout = padded_layout(shape, pad, 1, item);
  std::vector<std::byte> actual(static_cast<size_t>(layout.nbytes), std::byte{0xEE});
  std::vector<std::byte> expected = actual;

  // One extra innermost element in front: each part starts inside its chunk, as a box that
  // starts mid-chunk does.
  Coords chunk_shape = outer;
  chunk_shape.push_back(widest + 1);
  Coords src_strides(outer.size());
  int64_t stride = (widest + 1) * item;
  for (size_t d = outer.size(); d-- > 0;) {
    src_strides[d] = stride;
    stride *= outer[d];
  }
  Coords start(chunk_shape.size(), 0);
  start.back() = 1;
  std::vector<std::vector<std::byte>> chunks;
  std::vector<InterleavedRun> runs;
  int64_t column = 0;
  for (int64_t w : widths) {
    auto& chunk = chunks.emplace_back(static_cast<size_t>(element_count(chunk_shape) * item));
    for (auto& b : chunk) b = static_cast<std::byte>(rng());
    Coords box = outer;
    box.push_back(w);
    naive_copy(chunk.data(), chunk_shape, start, expected.data() + column * item, box,
               layout.strides, item);
    runs.push_back({chunk.data() + item, actual.data() + column * item, w * item});
    column += w;
  }
  interleaved_copy(runs, outer, Coords(layout.strides.begin(), layout.strides.end() - 1),
                   src_strides);
  EXPECT_EQ(expected, actual) << "outer rank " << outer.size() << " item " << item;
}

TEST(InterleavedCopy, MatchesOneCopyPerChunk) {
  std::mt19937_64 rng(11);
  // Equal widths: the fixed-size kernels (20-byte runs are the W1 case), and a long run.
  check_interleave({4, 9}, {5, 5, 5, 5}, 4, rng);
  check_interleave({3, 2, 7}, {1, 1, 1}, 2, rng);
  check_interleave({6}, {3, 3}, 8, rng);
  check_interleave({2, 3}, {40, 40}, 4, rng);  // 160-byte runs: the generic loop
  check_interleave({}, {7, 7, 7}, 4, rng);     // no outer dimension: one step
  check_interleave({5, 1, 3}, {2, 2}, 1, rng);
  check_interleave({4, 6}, {5, 5, 3}, 4, rng);  // an edge chunk: unequal runs
}

TEST(InterleavedCopy, LargeCopiesStreamedThroughABounceBufferMatch) {
  // Over 1 MiB with runs that tile each line: assembled in a bounce buffer and streamed out,
  // lines starting at every 4-byte alignment (60-byte steps), the last bounce part-filled.
  std::mt19937_64 rng(12);
  check_interleave({300, 217}, {5, 5, 5}, 4, rng);
  check_interleave({2, 3000}, {5, 5, 5, 5, 5, 5, 5, 5}, 4, rng);  // W1: 160-byte steps
  check_interleave({1100, 3}, {100, 57}, 4, rng);                 // 628-byte steps, mixed runs
}

TEST(InterleavedCopy, ZeroExtentCopiesNothing) {
  std::vector<std::byte> src(16, std::byte{1}), dst(16, std::byte{0});
  const InterleavedRun run{src.data(), dst.data(), 4};
  interleaved_copy({&run, 1}, Coords{0, 4}, Coords{16, 4}, Coords{16, 4});
  EXPECT_EQ(dst, std::vector<std::byte>(16, std::byte{0}));
}

template <typename T>
void check_fill(T value, const Coords& shape, const Coords& pad, int64_t spacing) {
  const auto item = static_cast<int64_t>(sizeof(T));
  Layout layout = padded_layout(shape, pad, spacing, item);
  std::vector<std::byte> buffer(static_cast<size_t>(layout.nbytes), std::byte{0xEE});
  std::vector<std::byte> expected = buffer;
  std::vector<std::byte> value_bytes(sizeof(T));
  std::memcpy(value_bytes.data(), &value, sizeof(T));
  // The reference: copy from a source whose every element is `value`.
  std::vector<std::byte> src(static_cast<size_t>(element_count(shape)) * sizeof(T));
  for (size_t i = 0; i < src.size(); i += sizeof(T)) std::memcpy(&src[i], &value, sizeof(T));
  naive_copy(src.data(), shape, Coords(shape.size(), 0), expected.data(), shape, layout.strides,
             item);
  strided_fill(StridedView{buffer.data(), shape, layout.strides}, value_bytes);
  EXPECT_EQ(expected, buffer) << "rank " << shape.size() << " spacing " << spacing;
}

TEST(StridedFill, FillsEveryElementAndNothingElse) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t spacing : {1, 3}) {
    check_fill<float>(nan, {}, {}, spacing);
    check_fill<float>(nan, {7}, {0}, spacing);
    check_fill<float>(nan, {3, 5, 7}, {0, 0, 0}, spacing);
    check_fill<float>(-1.5f, {3, 5, 7}, {1, 0, 2}, spacing);
    check_fill<double>(0.0, {2, 3, 4, 5}, {0, 1, 0, 0}, spacing);
    check_fill<uint8_t>(42, {4, 1, 9}, {0, 0, 3}, spacing);
    check_fill<int16_t>(0x0102, {2, 2, 2, 2, 33}, {0, 0, 0, 0, 0}, spacing);
    check_fill<uint64_t>(0x0102030405060708ULL, {5, 1000}, {0, 0}, spacing);
  }
}

}  // namespace
}  // namespace chute
