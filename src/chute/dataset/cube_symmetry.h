#pragma once
// The 48 symmetries of the cube (the right-angle rotations and reflections of a 3-D crop) as
// destination views: a symmetry is a permutation of the three spatial axes plus a reversal of
// some of them, so placing a crop already transformed only needs a destination view with
// permuted and negative byte strides. The strided copy kernels then write every element once,
// straight to its transformed place: no temporary, no second pass.
//
// Id -> NumPy, for a crop x whose three spatial axes come in stored order:
//   y = np.flip(np.transpose(x, axes), axis=flips)      (flips may be empty: no flip)
// with `axes` and `flips` from this table. Ids 0..23 are the 24 proper rotations (det +1,
// "rotations"), ids 24..47 the 24 improper ones (a rotation times a reflection); all 48 are
// "symmetries". Within each half the order is: axes in itertools.permutations((0, 1, 2)) order,
// then the flip mask (bit k: output axis k reversed) ascending. With a channel axis the channel
// axis stays where it is and the spatial axes are transformed as above.
//
//   id  axes       flips        id  axes       flips
//    0  (0, 1, 2)  ()           24  (0, 1, 2)  (0,)
//    1  (0, 1, 2)  (0, 1)       25  (0, 1, 2)  (1,)
//    2  (0, 1, 2)  (0, 2)       26  (0, 1, 2)  (2,)
//    3  (0, 1, 2)  (1, 2)       27  (0, 1, 2)  (0, 1, 2)
//    4  (0, 2, 1)  (0,)         28  (0, 2, 1)  ()
//    5  (0, 2, 1)  (1,)         29  (0, 2, 1)  (0, 1)
//    6  (0, 2, 1)  (2,)         30  (0, 2, 1)  (0, 2)
//    7  (0, 2, 1)  (0, 1, 2)    31  (0, 2, 1)  (1, 2)
//    8  (1, 0, 2)  (0,)         32  (1, 0, 2)  ()
//    9  (1, 0, 2)  (1,)         33  (1, 0, 2)  (0, 1)
//   10  (1, 0, 2)  (2,)         34  (1, 0, 2)  (0, 2)
//   11  (1, 0, 2)  (0, 1, 2)    35  (1, 0, 2)  (1, 2)
//   12  (1, 2, 0)  ()           36  (1, 2, 0)  (0,)
//   13  (1, 2, 0)  (0, 1)       37  (1, 2, 0)  (1,)
//   14  (1, 2, 0)  (0, 2)       38  (1, 2, 0)  (2,)
//   15  (1, 2, 0)  (1, 2)       39  (1, 2, 0)  (0, 1, 2)
//   16  (2, 0, 1)  ()           40  (2, 0, 1)  (0,)
//   17  (2, 0, 1)  (0, 1)       41  (2, 0, 1)  (1,)
//   18  (2, 0, 1)  (0, 2)       42  (2, 0, 1)  (2,)
//   19  (2, 0, 1)  (1, 2)       43  (2, 0, 1)  (0, 1, 2)
//   20  (2, 1, 0)  (0,)         44  (2, 1, 0)  ()
//   21  (2, 1, 0)  (1,)         45  (2, 1, 0)  (0, 1)
//   22  (2, 1, 0)  (2,)         46  (2, 1, 0)  (0, 2)
//   23  (2, 1, 0)  (0, 1, 2)    47  (2, 1, 0)  (1, 2)
//
// Half of the 48 reverse the fastest axis (flip 2): their innermost runs are copied element by
// element backwards (a reversed-run kernel), the others with memcpy runs or, when the fastest
// stored axis moves (axes[2] != 2), element-wise in destination order.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "chute/array/strided_view.h"

namespace chute {

inline constexpr int kCubeRotations = 24;   // ids [0, 24): det +1
inline constexpr int kCubeSymmetries = 48;  // ids [0, 48)

struct CubeSymmetry {
  std::array<int, 3> axes{0, 1, 2};  // output axis k is input axis axes[k] (np.transpose)
  std::array<bool, 3> flips{};       // output axis k is reversed after the transpose (np.flip)

  /// +1 for a rotation, -1 for an improper symmetry (sign of the permutation × the flips).
  int determinant() const;
  /// The signed permutation matrix m with (centred) output coordinate k = Σ_j m[k][j] · input j.
  std::array<std::array<int, 3>, 3> matrix() const;
  /// "transpose(0, 2, 1) flip(1, 2)", the NumPy composition in words.
  std::string describe() const;
  bool operator==(const CubeSymmetry&) const = default;
};

/// The symmetry with id `id`; throws kInvalidArgument outside [0, 48).
const CubeSymmetry& cube_symmetry(int id);

/// The id of `symmetry` (every CubeSymmetry with a permutation in `axes` has one).
int cube_symmetry_id(const CubeSymmetry& symmetry);

/// The id of "first `first`, then `second`": y = second(first(x)).
int compose_cube_symmetries(int first, int second);

/// Which ids a transforms option draws from: "rotations" -> 24, "symmetries" -> 48, "none" or
/// "" -> 1 (the identity). Throws kInvalidArgument naming the valid names otherwise.
int cube_symmetry_count(const std::string& transforms);

/// The destination view, indexed by the INPUT's spatial axes, that places a crop so that it
/// reads as `symmetry` applied to it in `output`: `output` is the 3-D spatial view of where the
/// transformed crop goes (output axis order, any byte strides). Element x[i0, i1, i2] of the
/// input lands where y = np.flip(np.transpose(x, axes), flips) has it.
/// Precondition: output.shape has rank 3.
StridedView transform_view(const CubeSymmetry& symmetry, const StridedView& output);

}  // namespace chute
