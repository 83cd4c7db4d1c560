#include "chute/dataset/cube_symmetry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "chute/util/error.h"

namespace chute {
namespace {

int permutation_sign(const std::array<int, 3>& axes) {
  int sign = 1;
  for (int i = 0; i < 3; ++i) {
    for (int j = i + 1; j < 3; ++j) {
      if (axes[i] > axes[j]) sign = -sign;
    }
  }
  return sign;
}

/// The table of the header: rotations first, each half in (permutation, flip mask) order.
std::array<CubeSymmetry, kCubeSymmetries> make_table() {
  std::array<CubeSymmetry, kCubeSymmetries> table{};
  int rotations = 0;
  int improper = kCubeRotations;
  std::array<int, 3> axes{0, 1, 2};
  do {  // std::next_permutation from the sorted start: itertools.permutations order
    for (int mask = 0; mask < 8; ++mask) {
      CubeSymmetry s;
      s.axes = axes;
      for (int k = 0; k < 3; ++k) s.flips[static_cast<size_t>(k)] = (mask >> k) & 1;
      table[static_cast<size_t>(s.determinant() > 0 ? rotations++ : improper++)] = s;
    }
  } while (std::next_permutation(axes.begin(), axes.end()));
  return table;
}

const std::array<CubeSymmetry, kCubeSymmetries>& table() {
  static const std::array<CubeSymmetry, kCubeSymmetries> kTable = make_table();
  return kTable;
}

CubeSymmetry from_matrix(const std::array<std::array<int, 3>, 3>& m) {
  CubeSymmetry s;
  for (size_t k = 0; k < 3; ++k) {
    for (size_t j = 0; j < 3; ++j) {
      if (m[k][j] != 0) {
        s.axes[k] = static_cast<int>(j);
        s.flips[k] = m[k][j] < 0;
      }
    }
  }
  return s;
}

}  // namespace

int CubeSymmetry::determinant() const {
  int sign = permutation_sign(axes);
  for (bool flip : flips) sign = flip ? -sign : sign;
  return sign;
}

std::array<std::array<int, 3>, 3> CubeSymmetry::matrix() const {
  std::array<std::array<int, 3>, 3> m{};
  for (size_t k = 0; k < 3; ++k) m[k][static_cast<size_t>(axes[k])] = flips[k] ? -1 : 1;
  return m;
}

std::string CubeSymmetry::describe() const {
  std::vector<int> flipped;
  for (int k = 0; k < 3; ++k) {
    if (flips[static_cast<size_t>(k)]) flipped.push_back(k);
  }
  std::string text = fmt::format("transpose({})", fmt::join(axes, ", "));
  if (!flipped.empty()) text += fmt::format(" flip({})", fmt::join(flipped, ", "));
  return text;
}

const CubeSymmetry& cube_symmetry(int id) {
  if (id < 0 || id >= kCubeSymmetries) {
    fail(ErrorCode::kInvalidArgument, "cube symmetry id {} outside [0, {})", id, kCubeSymmetries);
  }
  return table()[static_cast<size_t>(id)];
}

int cube_symmetry_id(const CubeSymmetry& symmetry) {
  const auto& all = table();
  const auto it = std::find(all.begin(), all.end(), symmetry);
  if (it == all.end()) {
    fail(ErrorCode::kInvalidArgument, "axes ({}) are not a permutation of (0, 1, 2)",
         fmt::join(symmetry.axes, ", "));
  }
  return static_cast<int>(it - all.begin());
}

int compose_cube_symmetries(int first, int second) {
  const auto a = cube_symmetry(first).matrix();
  const auto b = cube_symmetry(second).matrix();
  std::array<std::array<int, 3>, 3> product{};
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      for (size_t k = 0; k < 3; ++k) product[i][j] += b[i][k] * a[k][j];
    }
  }
  return cube_symmetry_id(from_matrix(product));
}

int cube_symmetry_count(const std::string& transforms) {
  if (transforms.empty() || transforms == "none") return 1;
  if (transforms == "rotations") return kCubeRotations;
  if (transforms == "symmetries") return kCubeSymmetries;
  fail(ErrorCode::kInvalidArgument,
       "unknown transforms '{}': expected \"rotations\" (the 24 right-angle rotations of the "
       "cube), \"symmetries\" (all 48, with reflections) or none",
       transforms);
}

StridedView transform_view(const CubeSymmetry& symmetry, const StridedView& output) {
  if (output.shape.size() != 3 || output.byte_strides.size() != 3) {
    fail(ErrorCode::kInternal, "transform_view: expected a 3-D view, got rank {}",
         output.shape.size());
  }
  StridedView input;
  input.data = output.data;
  input.shape.assign(3, 0);
  input.byte_strides.assign(3, 0);
  for (size_t k = 0; k < 3; ++k) {
    const auto j = static_cast<size_t>(symmetry.axes[k]);
    const int64_t stride = output.byte_strides[k];
    input.shape[j] = output.shape[k];
    input.byte_strides[j] = symmetry.flips[k] ? -stride : stride;
    if (symmetry.flips[k]) input.data += (output.shape[k] - 1) * stride;
  }
  return input;
}

}  // namespace chute
