// Arrays made of other arrays: a box spanning members is read from each, in one plan, and a
// slice reads one index of its parent's axis.

#include "chute/array/array_join.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "chute/format/zarr.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

// A float32 array of `shape` (chunks of 1 along axis 0) whose element i (C order) is first + i.
ArrayPtr counting_array(std::vector<int64_t> shape, float first, const std::string& name) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<int64_t> chunks = shape;
  chunks[0] = 1;
  nlohmann::json zarray = {{"shape", shape},        {"chunks", chunks}, {"dtype", "<f4"},
                           {"fill_value", 0},       {"order", "C"},     {"filters", nullptr},
                           {"compressor", nullptr}, {"zarr_format", 2}};
  store->set(".zarray", zarray.dump());
  const int64_t per =
      std::accumulate(shape.begin() + 1, shape.end(), int64_t{1}, std::multiplies<>());
  for (int64_t t = 0; t < shape[0]; ++t) {
    std::vector<float> values(static_cast<size_t>(per));
    std::iota(values.begin(), values.end(), first + static_cast<float>(t * per));
    std::vector<std::byte> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    std::string key = std::to_string(t);
    for (size_t d = 1; d < shape.size(); ++d) key += ".0";
    store->set(key, std::move(bytes));
  }
  return open_zarr_array(store, "", name);
}

std::vector<float> read_floats(const Array& array, std::vector<int64_t> start,
                               std::vector<int64_t> shape) {
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  std::vector<float> out(static_cast<size_t>(n));
  array.read(start, StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), shape, 4));
  return out;
}

TEST(ArrayJoin, ABoxSpanningMembersReadsFromEach) {
  // Three members of 2, 3 and 1 steps of (2, 3): together 6 steps counting from 0.
  ArrayPtr joined =
      concat_arrays({counting_array({2, 2, 3}, 0, "a"), counting_array({3, 2, 3}, 12, "b"),
                     counting_array({1, 2, 3}, 30, "c")},
                    "x");
  EXPECT_EQ(joined->metadata().shape, (std::vector<int64_t>{6, 2, 3}));
  const std::vector<float> all = read_floats(*joined, {0, 0, 0}, {6, 2, 3});
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<float>(i)) << i;
  // Steps 1..4 (members a, b, c), row 1, columns 1..2.
  const std::vector<float> part = read_floats(*joined, {1, 1, 1}, {4, 1, 2});
  EXPECT_EQ(part, (std::vector<float>{10, 11, 16, 17, 22, 23, 28, 29}));
}

TEST(ArrayJoin, SliceReadsOneIndexOfAnAxis) {
  ArrayPtr fields = counting_array({3, 4, 2, 2}, 0, "fields");  // (T, C, H, W)
  ArrayPtr channel = slice_array(fields, 1, 2, "t2m");
  EXPECT_EQ(channel->metadata().shape, (std::vector<int64_t>{3, 2, 2}));
  const std::vector<float> v = read_floats(*channel, {1, 0, 1}, {2, 2, 1});
  // element (t, 2, h, 1) = t*16 + 8 + h*2 + 1
  EXPECT_EQ(v, (std::vector<float>{25, 27, 41, 43}));
  // A slice of a joined array, as a channel of per-year files.
  ArrayPtr joined = concat_arrays(
      {counting_array({2, 4, 2, 2}, 0, "y1"), counting_array({1, 4, 2, 2}, 32, "y2")}, "fields");
  EXPECT_EQ(read_floats(*slice_array(joined, 1, 3, "c3"), {1, 0, 0}, {2, 1, 1}),
            (std::vector<float>{28, 44}));
}

TEST(ArrayJoin, MembersThatDisagreeAreNamed) {
  try {
    concat_arrays({counting_array({2, 2, 3}, 0, "a.nc/t"), counting_array({2, 3, 3}, 0, "b.nc/t")},
                  "t");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("b.nc/t"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
  EXPECT_THROW(slice_array(counting_array({2, 2}, 0, "a"), 1, 5, "s"), Error);
}

}  // namespace
}  // namespace chute
