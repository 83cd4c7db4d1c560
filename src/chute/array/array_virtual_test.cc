// Arrays mapped piece by piece from other arrays: boxes read their sources' elements where a
// piece maps them and the fill value elsewhere, in one plan.

#include "chute/array/array_virtual.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "chute/format/zarr.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

// A float32 Zarr array of `shape` in chunks of 2 whose element i (C order) is first + i.
ArrayPtr numbered(std::vector<int64_t> shape, float first, const std::string& name) {
  auto store = std::make_shared<MemoryStore>();
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  nlohmann::json zarray = {{"shape", shape},        {"chunks", shape}, {"dtype", "<f4"},
                           {"fill_value", 0},       {"order", "C"},    {"filters", nullptr},
                           {"compressor", nullptr}, {"zarr_format", 2}};
  store->set(".zarray", zarray.dump());
  std::vector<float> values(static_cast<size_t>(n));
  std::iota(values.begin(), values.end(), first);
  std::vector<std::byte> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  std::string key = "0";
  for (size_t d = 1; d < shape.size(); ++d) key += ".0";
  store->set(key, std::move(bytes));
  return open_zarr_array(store, "", name);
}

ArrayMetadata virtual_metadata(std::vector<int64_t> shape, float fill) {
  ArrayMetadata m;
  m.shape = shape;
  m.chunk_shape = shape;
  m.data_type = kFloat32;
  m.fill_value.resize(4);
  std::memcpy(m.fill_value.data(), &fill, 4);
  return m;
}

std::vector<float> read_all(const Array& array, std::vector<int64_t> start,
                            std::vector<int64_t> shape) {
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  std::vector<float> out(static_cast<size_t>(n), 1234.0f);
  array.read(start, StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), shape, 4));
  return out;
}

TEST(ArrayVirtual, PiecesLandWhereMappedAndTheRestIsFill) {
  // A (2, 3) array: row 0 from source a (3 values), column 2 of row 1 from b[1]; rest fill -1.
  ArrayPtr a = numbered({3}, 10, "a");
  ArrayPtr b = numbered({2}, 20, "b");
  VirtualPiece pa{a, {-1, 0}, {0}, {{{0, 0, 1}}, {{0, 0, 3}}}};
  VirtualPiece pb{b, {-1, -1}, {1}, {{{1, 0, 1}}, {{2, 0, 1}}}};
  ArrayPtr v = virtual_array({pa, pb}, virtual_metadata({2, 3}, -1), "v", nullptr);
  EXPECT_EQ(read_all(*v, {0, 0}, {2, 3}), (std::vector<float>{10, 11, 12, -1, -1, 21}));
  EXPECT_EQ(read_all(*v, {0, 1}, {2, 2}), (std::vector<float>{11, 12, -1, 21}));
  EXPECT_EQ(read_all(*v, {1, 0}, {1, 2}), (std::vector<float>{-1, -1}));
}

TEST(ArrayVirtual, StridedRunsInterleaveTwoSources) {
  // Even indices from a, odd ones from b: runs of one.
  ArrayPtr a = numbered({3}, 0, "a");
  ArrayPtr b = numbered({3}, 100, "b");
  VirtualPiece pa{a, {0}, {0}, {{{0, 0, 1}, {2, 1, 1}, {4, 2, 1}}}};
  VirtualPiece pb{b, {0}, {0}, {{{1, 0, 1}, {3, 1, 1}, {5, 2, 1}}}};
  ArrayPtr v = virtual_array({pa, pb}, virtual_metadata({6}, 0), "v", nullptr);
  EXPECT_EQ(read_all(*v, {0}, {6}), (std::vector<float>{0, 100, 1, 101, 2, 102}));
  EXPECT_EQ(read_all(*v, {3}, {2}), (std::vector<float>{101, 2}));
}

TEST(ArrayVirtual, PiecesGivenInAnyOrderAreFoundByTheBoxesTheyMeet) {
  // Ten one-index pieces given backwards, a long one under them all (axis 1 apart).
  std::vector<VirtualPiece> pieces;
  for (int64_t i = 9; i >= 0; --i) {
    pieces.push_back({numbered({1}, static_cast<float>(100 * i), "p"),
                      {0, -1},
                      {0},
                      {{{i, 0, 1}}, {{0, 0, 1}}}});
  }
  pieces.push_back({numbered({10}, 1000, "long"), {0, -1}, {0}, {{{0, 0, 10}}, {{1, 0, 1}}}});
  ArrayPtr v = virtual_array(pieces, virtual_metadata({10, 2}, -1), "v", nullptr);
  EXPECT_EQ(read_all(*v, {3, 0}, {3, 2}), (std::vector<float>{300, 1003, 400, 1004, 500, 1005}));
  EXPECT_EQ(read_all(*v, {9, 0}, {1, 2}), (std::vector<float>{900, 1009}));
}

TEST(ArrayVirtual, OverlappingPiecesAndPiecesOutsideTheirArraysAreErrors) {
  ArrayPtr a = numbered({4}, 0, "a");
  VirtualPiece p1{a, {0}, {0}, {{{0, 0, 3}}}};
  VirtualPiece p2{a, {0}, {0}, {{{2, 0, 2}}}};
  EXPECT_THROW(virtual_array({p1, p2}, virtual_metadata({6}, 0), "v", nullptr), Error);
  VirtualPiece past{a, {0}, {0}, {{{4, 0, 3}}}};  // past the virtual array's end
  EXPECT_THROW(virtual_array({past}, virtual_metadata({6}, 0), "v", nullptr), Error);
  VirtualPiece source_past{a, {0}, {0}, {{{0, 2, 3}}}};  // past the source's end
  EXPECT_THROW(virtual_array({source_past}, virtual_metadata({6}, 0), "v", nullptr), Error);
}

}  // namespace
}  // namespace chute
