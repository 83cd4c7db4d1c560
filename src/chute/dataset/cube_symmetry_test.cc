// The cube's symmetries: the table's group properties, and every id placed through
// transform_view + the strided copy kernels (and a ReadPlan over chunks, with missing ones)
// against the NumPy composition np.flip(np.transpose(x, axes), flips) computed here index by
// index. The Python tests check the same ids against NumPy itself.

#include "chute/dataset/cube_symmetry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "chute/array/chunk_grid.h"
#include "chute/array/read_plan.h"
#include "chute/array/strided_copy.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using Matrix = std::array<std::array<int, 3>, 3>;

/// y = np.flip(np.transpose(x, axes), flips) for a C-order x of `shape`, element by element.
template <typename T>
std::vector<T> numpy_reference(const std::vector<T>& x, const std::array<int64_t, 3>& shape,
                               const CubeSymmetry& s) {
  std::array<int64_t, 3> out_shape{};
  for (size_t k = 0; k < 3; ++k) out_shape[k] = shape[static_cast<size_t>(s.axes[k])];
  std::vector<T> y(x.size());
  size_t linear = 0;
  for (int64_t o0 = 0; o0 < out_shape[0]; ++o0) {
    for (int64_t o1 = 0; o1 < out_shape[1]; ++o1) {
      for (int64_t o2 = 0; o2 < out_shape[2]; ++o2) {
        const std::array<int64_t, 3> o{o0, o1, o2};
        std::array<int64_t, 3> i{};
        for (size_t k = 0; k < 3; ++k) {
          // transpose: t[o] = x[o_{axes^-1}]; flip k: t index o_k -> n_k - 1 - o_k
          const int64_t t = s.flips[k] ? out_shape[k] - 1 - o[k] : o[k];
          i[static_cast<size_t>(s.axes[k])] = t;
        }
        y[linear++] = x[static_cast<size_t>((i[0] * shape[1] + i[1]) * shape[2] + i[2])];
      }
    }
  }
  return y;
}

/// Places all of x (C order, `shape`) through transform_view into a C-contiguous output.
template <typename T>
std::vector<T> placed(const std::vector<T>& x, const std::array<int64_t, 3>& shape,
                      const CubeSymmetry& s) {
  std::vector<int64_t> out_shape(3);
  for (size_t k = 0; k < 3; ++k) out_shape[k] = shape[static_cast<size_t>(s.axes[k])];
  std::vector<T> y(x.size());
  const StridedView out =
      StridedView::contiguous(reinterpret_cast<std::byte*>(y.data()), out_shape, sizeof(T));
  const std::vector<int64_t> src_shape(shape.begin(), shape.end()), start(3, 0);
  strided_copy(reinterpret_cast<const std::byte*>(x.data()), src_shape, start,
               transform_view(s, out), sizeof(T));
  return y;
}

template <typename T>
void check_every_id(const std::array<int64_t, 3>& shape) {
  std::vector<T> x(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(i + 1);
  for (int id = 0; id < kCubeSymmetries; ++id) {
    const CubeSymmetry& s = cube_symmetry(id);
    EXPECT_EQ(placed(x, shape, s), numpy_reference(x, shape, s))
        << "id " << id << " " << s.describe() << ", " << sizeof(T) << "-byte elements";
  }
}

TEST(CubeSymmetry, EveryIdPlacesLikeItsNumpyComposition) {
  check_every_id<float>({5, 6, 7});      // not a cube: axes must land on the right extents
  check_every_id<float>({9, 9, 9});      // the reversed-run kernel's blocks and tails
  check_every_id<float>({17, 18, 35});   // transposes in 8 x 8 tiles, partial tiles too
  check_every_id<double>({4, 11, 13});   // 8-byte reversed runs
  check_every_id<uint16_t>({3, 4, 21});  // 2-byte
  check_every_id<uint8_t>({3, 5, 2});    // 1-byte
}

/// Places the box [start, start + box) of a C-order source of `shape` through transform_view
/// and checks it against the NumPy composition of the box cut out first, for every id.
template <typename T>
void check_every_id_in_box(const std::array<int64_t, 3>& shape, const std::array<int64_t, 3>& start,
                           const std::array<int64_t, 3>& box) {
  std::vector<T> x(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>((i * 2654435761u) >> 7);
  std::vector<T> cut;
  for (int64_t i = 0; i < box[0]; ++i) {
    for (int64_t j = 0; j < box[1]; ++j) {
      for (int64_t k = 0; k < box[2]; ++k) {
        cut.push_back(x[static_cast<size_t>(((start[0] + i) * shape[1] + start[1] + j) * shape[2] +
                                            start[2] + k)]);
      }
    }
  }
  const std::vector<int64_t> src_shape(shape.begin(), shape.end());
  const std::vector<int64_t> src_start(start.begin(), start.end());
  for (int id = 0; id < kCubeSymmetries; ++id) {
    const CubeSymmetry& s = cube_symmetry(id);
    std::vector<int64_t> out_shape(3);
    for (size_t k = 0; k < 3; ++k) out_shape[k] = box[static_cast<size_t>(s.axes[k])];
    std::vector<T> y(cut.size());
    const StridedView out =
        StridedView::contiguous(reinterpret_cast<std::byte*>(y.data()), out_shape, sizeof(T));
    strided_copy(reinterpret_cast<const std::byte*>(x.data()), src_shape, src_start,
                 transform_view(s, out), sizeof(T));
    EXPECT_EQ(y, numpy_reference(cut, box, s))
        << "id " << id << " " << s.describe() << ", " << sizeof(T) << "-byte elements";
  }
}

/// Runs `check` with the register kernels (the default) and with the portable ones.
template <typename Check>
void with_both_kernels(Check check) {
  for (CopyKernels kernels : {CopyKernels::kBest, CopyKernels::kPortable}) {
    SCOPED_TRACE(kernels == CopyKernels::kBest ? "register kernels" : "portable kernels");
    set_copy_kernels(kernels);
    check();
  }
  set_copy_kernels(CopyKernels::kBest);
}

// Short source strides (a decoded chunk, rows under 1 KiB) and long ones (a crop straight out
// of a mapped volume, rows of 1 KiB or more) take different transpose paths; both element
// sizes with register tiles (4 and 2 bytes), whole 8 x 8 blocks and partial ones.
TEST(CubeSymmetry, EveryIdPlacesLikeNumpyWithRegisterAndPortableKernels) {
  with_both_kernels([] {
    check_every_id<float>({16, 24, 40});    // whole 8 x 8 blocks only
    check_every_id<float>({17, 18, 35});    // partial blocks on every side
    check_every_id<uint16_t>({16, 8, 24});  // 2-byte, whole blocks
    check_every_id<uint16_t>({9, 17, 31});  // 2-byte, partial blocks
    check_every_id<uint16_t>({1, 19, 23});  // a unit axis: a 2-D transpose
    check_every_id_in_box<float>({20, 30, 300}, {3, 5, 101}, {17, 18, 19});
    check_every_id_in_box<float>({12, 20, 512}, {1, 2, 64}, {8, 16, 8});
    check_every_id_in_box<uint16_t>({20, 30, 600}, {2, 7, 333}, {13, 19, 21});
    check_every_id_in_box<uint16_t>({10, 18, 520}, {0, 1, 16}, {8, 16, 8});
  });
}

TEST(CubeSymmetry, TableOrderIsTheDocumentedOne) {
  EXPECT_EQ(cube_symmetry(0), CubeSymmetry{});
  EXPECT_EQ(cube_symmetry(0).describe(), "transpose(0, 1, 2)");
  EXPECT_EQ(cube_symmetry(7).describe(), "transpose(0, 2, 1) flip(0, 1, 2)");
  EXPECT_EQ(cube_symmetry(12).describe(), "transpose(1, 2, 0)");
  EXPECT_EQ(cube_symmetry(24).describe(), "transpose(0, 1, 2) flip(0)");
  EXPECT_EQ(cube_symmetry(47).describe(), "transpose(2, 1, 0) flip(1, 2)");
  for (int id = 0; id < kCubeSymmetries; ++id) EXPECT_EQ(cube_symmetry_id(cube_symmetry(id)), id);
  EXPECT_THROW(cube_symmetry(48), Error);
  EXPECT_THROW(cube_symmetry(-1), Error);
}

TEST(CubeSymmetry, RotationsAreDistinctProperAndAGroup) {
  std::set<Matrix> rotations;
  for (int id = 0; id < kCubeRotations; ++id) {
    EXPECT_EQ(cube_symmetry(id).determinant(), 1) << id;
    rotations.insert(cube_symmetry(id).matrix());
  }
  EXPECT_EQ(rotations.size(), 24u);
  for (int id = kCubeRotations; id < kCubeSymmetries; ++id) {
    EXPECT_EQ(cube_symmetry(id).determinant(), -1) << id;
    EXPECT_FALSE(rotations.contains(cube_symmetry(id).matrix())) << id;
  }
  // Closed under composition, with inverses: a group (the identity is id 0).
  for (int a = 0; a < kCubeRotations; ++a) {
    bool has_inverse = false;
    for (int b = 0; b < kCubeRotations; ++b) {
      const int c = compose_cube_symmetries(a, b);
      EXPECT_LT(c, kCubeRotations) << a << " then " << b;
      has_inverse = has_inverse || c == 0;
    }
    EXPECT_TRUE(has_inverse) << a;
  }
}

TEST(CubeSymmetry, CompositionIsApplyingOneAfterTheOther) {
  const std::array<int64_t, 3> shape{4, 4, 4};
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  for (int a = 0; a < kCubeSymmetries; a += 5) {
    for (int b = 0; b < kCubeSymmetries; b += 3) {
      const auto twice = placed(placed(x, shape, cube_symmetry(a)), shape, cube_symmetry(b));
      EXPECT_EQ(twice, placed(x, shape, cube_symmetry(compose_cube_symmetries(a, b))))
          << a << " then " << b;
    }
  }
}

TEST(CubeSymmetry, TransformNames) {
  EXPECT_EQ(cube_symmetry_count("rotations"), 24);
  EXPECT_EQ(cube_symmetry_count("symmetries"), 48);
  EXPECT_EQ(cube_symmetry_count("none"), 1);
  EXPECT_EQ(cube_symmetry_count(""), 1);
  try {
    cube_symmetry_count("rotate");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown transforms 'rotate'"), std::string::npos);
  }
}

/// Through a ReadPlan: a box spanning chunks (some missing: the fill value goes through the
/// same negative strides), read transformed, equals the reference of the box.
TEST(CubeSymmetry, ReadPlanPlacesChunkedBoxesTransformedWithMissingChunks) {
  using namespace loader_testing;
  auto store = std::make_shared<MemoryStore>();
  const std::vector<int64_t> shape{10, 9, 11}, chunks{4, 3, 5};
  ArrayPtr array = make_float_array(store, "v", shape, chunks, 3);
  const std::vector<int64_t> start{2, 1, 3};
  const std::array<int64_t, 3> box{6, 6, 6};
  const std::vector<float> whole = read_floats(*array, start, {6, 6, 6});
  const auto zeros_before = std::count(whole.begin(), whole.end(), 0.f);
  store->erase(join_key(
      "v", chunk_key(array->metadata().chunk_key_encoding, std::vector<int64_t>{1, 1, 1})));
  std::vector<float> x = read_floats(*array, start, {box.begin(), box.end()});
  ASSERT_GT(std::count(x.begin(), x.end(), 0.f), zeros_before);  // chunk is missing
  for (int id = 0; id < kCubeSymmetries; ++id) {
    const CubeSymmetry& s = cube_symmetry(id);
    std::vector<float> y(x.size(), -1.f);
    const StridedView out =
        StridedView::contiguous(reinterpret_cast<std::byte*>(y.data()), {6, 6, 6}, 4);
    ReadPlan plan;
    plan.add(*array, start, transform_view(s, out));
    std::vector<ReadScratch> scratch;
    plan.execute(nullptr, scratch);
    EXPECT_EQ(y, numpy_reference(x, box, s)) << "id " << id;
  }
}

}  // namespace
}  // namespace chute
