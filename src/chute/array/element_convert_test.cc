// Converting reads (CF decoding while placing): convert_run and strided_transform against the
// formula, element by element, and Array::read_converted / ReadPlan through every placement
// path (staged copy, would-be direct chunk, missing chunks, gather groups, threads).

#include "chute/array/element_convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "chute/array/array_test_support.h"
#include "chute/array/read_plan.h"

namespace chute {
namespace {

using testing::Coords;

/// xarray's decoding of one value, written out: NaN when missing, else × scale and + offset
/// with a rounding after each (volatile keeps the compiler from fusing them).
double reference(double v, const ElementConvert& c) {
  for (double m : c.missing) {
    if (v == m) return std::numeric_limits<double>::quiet_NaN();
  }
  volatile double x = v;
  if (c.scale) x = x * *c.scale;
  if (c.offset) x = x + *c.offset;
  return x;
}

template <typename Out>
::testing::AssertionResult same(Out expected, Out actual, int64_t i) {
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (std::memcmp(&expected, &actual, sizeof(Out)) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "element " << i << ": expected " << expected << ", got " << actual;
}

template <typename Out>
Out reference_as(double widened, const ElementConvert& c) {
  return static_cast<Out>(reference(widened, c));
}

/// Converts `values` (stored as In) into a contiguous destination and into one with a stride
/// of 3 elements (the vectorized and the general loop) and compares each with the formula;
/// `widen` gives the stored value as float64.
template <typename In, typename Out>
void check_run(
    const std::vector<In>& values, ElementConvert c,
    double (*widen)(In) = [](In v) { return static_cast<double>(v); }) {
  c.decoded = {DTypeKind::kFloat, sizeof(Out)};
  ASSERT_NO_THROW(check_convert(c, "test"));
  const auto n = static_cast<int64_t>(values.size());
  for (int64_t step : {1, 3}) {
    std::vector<Out> out(static_cast<size_t>(step * n), Out{-7});
    convert_run(c, reinterpret_cast<const std::byte*>(values.data()), n,
                reinterpret_cast<std::byte*>(out.data()), step * sizeof(Out));
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(same(reference_as<Out>(widen(values[i]), c), out[step * i], i)) << step;
      if (step > 1) {
        ASSERT_EQ(out[step * i + 1], Out{-7});  // between the elements: untouched
      }
    }
  }
}

ElementConvert packed(DataType stored, double scale, double offset, std::vector<double> missing) {
  return {stored, {DTypeKind::kFloat, 8}, scale, offset, std::move(missing)};
}

TEST(ElementConvert, PackedIntegersDecodeLikeTheFormula) {
  check_run<int8_t, double>({-128, -127, -1, 0, 1, 5, 126, 127},
                            packed({DTypeKind::kInt, 1}, 0.5, -3.25, {-128}));
  check_run<int16_t, double>({-32768, -32767, -1, 0, 1, 12345, 32767},
                             packed({DTypeKind::kInt, 2}, 0.0017385, 273.15, {-32767}));
  check_run<int32_t, double>({INT32_MIN, -2, 0, 3, 7777777, INT32_MAX},
                             packed({DTypeKind::kInt, 4}, 1e-5, -12.5, {-2, 3}));
  check_run<uint8_t, double>({0, 1, 254, 255}, packed({DTypeKind::kUInt, 1}, 0.1, 0.3, {255}));
  check_run<uint16_t, double>({0, 1, 65534, 65535},
                              packed({DTypeKind::kUInt, 2}, 0.001, 200.0, {65535}));
  check_run<int64_t, double>({INT64_MIN, -5, 0, int64_t{1} << 60},
                             packed({DTypeKind::kInt, 8}, 3.0, 0.5, {-5}));
  check_run<uint64_t, double>({0, 9, UINT64_MAX}, packed({DTypeKind::kUInt, 8}, 2.0, 1.0, {}));
}

TEST(ElementConvert, ScaleOrOffsetAloneAppliesOnlyThatStep) {
  // -0.0 + 0.0 is +0.0: an absent add_offset must not be added as 0.
  ElementConvert scale_only{{DTypeKind::kFloat, 8}, {DTypeKind::kFloat, 8}, 2.5, {}, {}};
  check_run<double, double>({-0.0, 0.0, 1.5, -3.0}, scale_only);
  std::vector<double> out(1);
  const double minus_zero = -0.0;
  convert_run(scale_only, reinterpret_cast<const std::byte*>(&minus_zero), 1,
              reinterpret_cast<std::byte*>(out.data()), 8);
  EXPECT_TRUE(std::signbit(out[0]));
  ElementConvert offset_only{{DTypeKind::kFloat, 4}, {DTypeKind::kFloat, 8}, {}, 0.1, {}};
  check_run<float, double>({-0.0f, 1.0f / 3.0f, 1e30f}, offset_only);
}

TEST(ElementConvert, FillValuesBecomeNaNInXarraysFloatType) {
  const float nan32 = std::numeric_limits<float>::quiet_NaN();
  // float32 with _FillValue -> float32; float64 -> float64; int16/uint8 missing only -> float32
  check_run<float, float>({-9999.0f, 1.5f, nan32, 3e38f, -0.0f},
                          {{DTypeKind::kFloat, 4}, {}, {}, {}, {-9999.0}});
  check_run<double, double>({1e20, 1.0, -1e300, 0.1}, {{DTypeKind::kFloat, 8}, {}, {}, {}, {1e20}});
  check_run<int16_t, float>({-32767, -1, 0, 32767}, {{DTypeKind::kInt, 2}, {}, {}, {}, {-32767}});
  check_run<uint8_t, float>({0, 255, 7}, {{DTypeKind::kUInt, 1}, {}, {}, {}, {0, 7}});
  check_run<int32_t, double>({-1, INT32_MAX, 4}, {{DTypeKind::kInt, 4}, {}, {}, {}, {-1}});
  // float16: 0x3c00 is 1.0, 0xc000 is -2.0, 0x7bff the largest (65504), 0x0001 the smallest
  // subnormal (2^-24)
  auto half = [](uint16_t bits) {
    static const double values[] = {1.0, -2.0, 65504.0, std::ldexp(1.0, -24)};
    switch (bits) {
      case 0x3c00:
        return values[0];
      case 0xc000:
        return values[1];
      case 0x7bff:
        return values[2];
      default:
        return values[3];
    }
  };
  check_run<uint16_t, float>({0x3c00, 0xc000, 0x7bff, 0x0001},
                             {{DTypeKind::kFloat, 2}, {}, {}, {}, {-2.0}}, +half);
}

TEST(ElementConvert, RefusesConversionsItDoesNotDo) {
  ElementConvert to_float32_scaled{{DTypeKind::kInt, 2}, {DTypeKind::kFloat, 4}, 0.5, {}, {}};
  EXPECT_THROW(check_convert(to_float32_scaled, "a"), Error);
  ElementConvert from_bool{{DTypeKind::kBool, 1}, {DTypeKind::kFloat, 8}, {}, {}, {1.0}};
  EXPECT_THROW(check_convert(from_bool, "a"), Error);
  ElementConvert to_int{{DTypeKind::kInt, 2}, {DTypeKind::kInt, 4}, {}, {}, {1.0}};
  EXPECT_THROW(check_convert(to_int, "a"), Error);
}

TEST(ElementConvert, StridedTransformFillsAPermutedReversedDestination) {
  const Coords chunk{4, 5, 6};
  std::vector<int16_t> src(4 * 5 * 6);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<int16_t>(i * 37 % 101 - 50);
  const ElementConvert c = packed({DTypeKind::kInt, 2}, 0.25, 10.0, {-50});
  const Coords start{1, 0, 2}, box{2, 5, 3};
  // The destination holds the box transposed (axis 2 outermost) with axis 1 reversed.
  std::vector<double> out(2 * 5 * 3, -7.0);
  StridedView dst;
  dst.shape = box;
  dst.byte_strides = {8, -2 * 8, 2 * 5 * 8};
  dst.data = reinterpret_cast<std::byte*>(out.data()) + 4 * 2 * 8;  // element (0, 0, 0)
  strided_transform(reinterpret_cast<const std::byte*>(src.data()), chunk, start, dst, c);
  for (int64_t i = 0; i < box[0]; ++i) {
    for (int64_t j = 0; j < box[1]; ++j) {
      for (int64_t k = 0; k < box[2]; ++k) {
        const int16_t v = src[((start[0] + i) * 5 + start[1] + j) * 6 + start[2] + k];
        const double got = out[k * 10 + (4 - j) * 2 + i];
        ASSERT_TRUE(same(reference(v, c), got, (i * 5 + j) * 3 + k));
      }
    }
  }
}

TEST(ElementConvert, StridedTransformMatchesTheFormulaOnRandomBoxesAndLayouts) {
  std::mt19937_64 rng(11);
  const ElementConvert c = packed({DTypeKind::kInt, 2}, 0.75, -2.0, {3});
  for (int trial = 0; trial < 300; ++trial) {
    const auto rank = static_cast<size_t>(rng() % 5);
    Coords src_shape(rank), start(rank), box(rank);
    for (size_t d = 0; d < rank; ++d) {
      src_shape[d] = 1 + static_cast<int64_t>(rng() % 5);
      start[d] = static_cast<int64_t>(rng() % static_cast<uint64_t>(src_shape[d]));
      box[d] = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(src_shape[d] - start[d]));
    }
    std::vector<int16_t> src(static_cast<size_t>(element_count(src_shape)));
    for (auto& v : src) v = static_cast<int16_t>(rng() % 9);  // 3 (missing) comes up often
    // The destination: the box's axes in a random order, every other element when `gap`, the
    // first axis reversed when `flip`.
    std::vector<size_t> order(rank);
    for (size_t d = 0; d < rank; ++d) order[d] = d;
    std::shuffle(order.begin(), order.end(), rng);
    const int64_t gap = 1 + static_cast<int64_t>(rng() % 2);
    Coords strides(rank);
    int64_t stride = 8 * gap;
    for (size_t k = rank; k-- > 0;) {
      strides[order[k]] = stride;
      stride *= box[order[k]];
    }
    std::vector<double> out(static_cast<size_t>(stride / 8), -7.0);
    StridedView dst{reinterpret_cast<std::byte*>(out.data()), box, strides};
    if (rank > 0 && rng() % 2) {
      dst.data += (box[0] - 1) * strides[0];
      dst.byte_strides[0] = -strides[0];
    }
    strided_transform(reinterpret_cast<const std::byte*>(src.data()), src_shape, start, dst, c);
    if (rank == 0) {
      ASSERT_TRUE(same(reference(src[0], c), out[0], 0));
      continue;
    }
    Coords index(rank, 0);
    do {
      int64_t s = 0, t = 0, src_stride = 1;
      for (size_t d = rank; d-- > 0;) {
        s += (start[d] + index[d]) * src_stride;
        src_stride *= src_shape[d];
        t += index[d] * dst.byte_strides[d];
      }
      double got;
      std::memcpy(&got, dst.data + t, 8);
      ASSERT_TRUE(same(reference(src[static_cast<size_t>(s)], c), got, s)) << "trial " << trial;
    } while (testing::next_index(index, box));
  }
}

// Arrays: int16 values 1..250 from array_test_support's generate(), 17 of them missing.

std::vector<double> converted_box(const std::vector<int16_t>& raw, const ElementConvert& c) {
  std::vector<double> out;
  for (int16_t v : raw) out.push_back(reference(v, c));
  return out;
}

::testing::AssertionResult same_doubles(const std::vector<double>& e,
                                        const std::vector<double>& a) {
  if (e.size() != a.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < e.size(); ++i) {
    auto r = same(e[i], a[i], static_cast<int64_t>(i));
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

std::vector<double> read_converted_box(const Array& array, const Coords& start, Coords shape,
                                       const ElementConvert& c, ThreadPool* pool = nullptr) {
  std::vector<double> out(static_cast<size_t>(element_count(shape)), -5.0);
  auto view = StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), std::move(shape),
                                      sizeof(double));
  array.read_converted(start, view, c, pool);
  return out;
}

TEST(ElementConvert, ArrayReadsConvertWhilePlacingEveryChunk) {
  const Coords shape{6, 7, 10}, chunks{2, 3, 4};
  testing::Present present = [](std::span<const int64_t> c) { return (c[0] + c[2]) % 3 != 1; };
  for (int16_t fill : {int16_t{-32767}, int16_t{9}}) {  // a missing fill value, and a plain one
    auto m = testing::make_metadata<int16_t>(shape, chunks, {}, fill);
    auto store = std::make_shared<MemoryStore>();
    testing::write_chunks<int16_t>(*store, "", m, present);
    Array array(store, "", m, "test/packed");
    const ElementConvert c = packed(m.data_type, 0.0017385, 273.15, {-32767, 17});
    ThreadPool pool(3);
    std::mt19937_64 rng(5);
    for (int i = 0; i < 30; ++i) {
      auto [start, box] = testing::random_box(rng, shape);
      auto expected =
          converted_box(testing::expected_box<int16_t>(start, box, chunks, fill, present), c);
      ASSERT_TRUE(same_doubles(expected, read_converted_box(array, start, box, c)));
      ASSERT_TRUE(same_doubles(expected, read_converted_box(array, start, box, c, &pool)));
    }
    // One whole chunk into a contiguous destination (a plain read decodes into it directly),
    // the whole array, and one missing chunk.
    for (auto [start, box] : {std::pair{Coords{2, 3, 4}, chunks}, std::pair{Coords{0, 0, 0}, shape},
                              std::pair{Coords{0, 0, 4}, chunks}}) {
      auto expected =
          converted_box(testing::expected_box<int16_t>(start, box, chunks, fill, present), c);
      ASSERT_TRUE(same_doubles(expected, read_converted_box(array, start, box, c)));
      ASSERT_TRUE(same_doubles(expected, read_converted_box(array, start, box, c, &pool)));
    }
  }
}

TEST(ElementConvert, GatherGroupsPlaceConvertedDuplicateTargets) {
  // Chunks of 2 elements along the innermost axis: a plain read of a row gathers them.
  const Coords shape{8, 12}, chunks{8, 2};
  auto m = testing::make_metadata<int16_t>(shape, chunks, {}, int16_t{0});
  auto store = std::make_shared<MemoryStore>();
  testing::write_chunks<int16_t>(*store, "", m);
  Array array(store, "", m, "test/gather");
  const ElementConvert c = packed(m.data_type, 0.5, -1.0, {17});
  const Coords start{0, 0};
  auto expected_raw = testing::expected_box<int16_t>(start, shape, chunks, int16_t{0});

  ReadPlan converted_only;
  std::vector<double> out(96, -5.0);
  converted_only.add(array, start,
                     StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), shape, 8),
                     {}, &c);
  EXPECT_EQ(converted_only.gathered_task_count(), 0u);

  ReadPlan both;  // a plain box first (gathered), the converted one shares its chunks
  std::vector<int16_t> raw(96, -5);
  both.add(array, start,
           StridedView::contiguous(reinterpret_cast<std::byte*>(raw.data()), shape, 2));
  both.add(array, start,
           StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), shape, 8), {}, &c);
  EXPECT_EQ(both.gathered_task_count(), 6u);
  std::vector<ReadScratch> scratch(1);
  both.execute(nullptr, scratch);
  EXPECT_TRUE(testing::same_elements(expected_raw, raw));
  EXPECT_TRUE(same_doubles(converted_box(expected_raw, c), out));

  ElementConvert wrong = c;
  wrong.stored = {DTypeKind::kInt, 4};
  ReadPlan refused;
  EXPECT_THROW(
      refused.add(array, start,
                  StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), shape, 8), {},
                  &wrong),
      Error);
}

}  // namespace
}  // namespace chute
