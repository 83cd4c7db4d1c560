// rows_to_columns: the AVX2/SSE2 kernels write exactly what the scalar loop writes, for every
// row count and length around their block sizes, with and without the affine map, and leave
// the destination's other columns alone.

#include "chute/dataset/rows_to_columns.h"

#include <gtest/gtest.h>

#include <vector>

namespace chute::detail {
namespace {

std::vector<float> columns(int64_t count, int64_t n, int64_t stride, bool map, bool portable) {
  std::vector<std::vector<float>> data(static_cast<size_t>(count));
  std::vector<const float*> rows;
  std::vector<float> mul, add;
  for (int64_t q = 0; q < count; ++q) {
    for (int64_t i = 0; i < n; ++i) data[q].push_back(static_cast<float>(q * 1000 + i) * 0.5f);
    rows.push_back(data[q].data());
    mul.push_back(1.0f + 0.25f * static_cast<float>(q));
    add.push_back(-3.0f * static_cast<float>(q));
  }
  std::vector<float> out(static_cast<size_t>(n * stride), -7.0f);
  set_portable_rows_to_columns(portable);
  rows_to_columns(rows.data(), map ? mul.data() : nullptr, map ? add.data() : nullptr, count, n,
                  out.data(), stride);
  set_portable_rows_to_columns(false);
  return out;
}

TEST(RowsToColumns, PortableLoopWritesEachRowAsAColumn) {
  const std::vector<float> out = columns(3, 5, 4, /*map=*/true, /*portable=*/true);
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t q = 0; q < 3; ++q) {
      const float x = static_cast<float>(q * 1000 + i) * 0.5f;
      EXPECT_EQ(out[i * 4 + q], x * (1.0f + 0.25f * q) - 3.0f * q) << i << "," << q;
    }
    EXPECT_EQ(out[i * 4 + 3], -7.0f);  // the column past count is untouched
  }
}

TEST(RowsToColumns, SimdKernelsEqualThePortableLoop) {
  for (int64_t count : {1, 3, 4, 5, 8, 9, 12, 17, 100}) {
    for (int64_t n : {1, 4, 7, 8, 9, 16, 33, 256}) {
      for (bool map : {false, true}) {
        const int64_t stride = count + 3;
        EXPECT_EQ(columns(count, n, stride, map, false), columns(count, n, stride, map, true))
            << "count " << count << ", n " << n << ", map " << map;
      }
    }
  }
}

}  // namespace
}  // namespace chute::detail
