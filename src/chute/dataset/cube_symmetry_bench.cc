// Per-transform placement rate: a 64³ float32 crop of 4 channels, stored channels-first in
// 64³ chunks (so a random crop is 8 sub-boxes per channel, as in W3's Zarr form), placed into
// its slot of a batch with each of the cube's 48 symmetries through transform_view and the
// strided copy kernels. Bytes/s counts the crop's bytes; the source chunks stay in cache as
// they do after a decode. Id 0 is the plain copy; ids with flip 2 use the reversed-run kernel;
// ids whose axes move the fastest axis (axes[2] != 2) walk the destination in order.

#include <benchmark/benchmark.h>

#include <vector>

#include "chute/array/strided_copy.h"
#include "chute/dataset/cube_symmetry.h"

namespace chute {
namespace {

constexpr int64_t kEdge = 64, kChannels = 4, kItem = 4;

void BM_PlaceCropWithTransform(benchmark::State& state) {
  const int id = static_cast<int>(state.range(0));
  const CubeSymmetry& s = cube_symmetry(id);
  // 8 chunks of one channel, split at (23, 41, 7) inside the crop: the corner of a random box.
  std::vector<float> chunk(static_cast<size_t>(kEdge * kEdge * kEdge), 1.f);
  std::vector<float> slot(static_cast<size_t>(kChannels * kEdge * kEdge * kEdge));
  const std::vector<int64_t> chunk_shape{kEdge, kEdge, kEdge};
  const int64_t split[3] = {23, 41, 7};
  for (auto _ : state) {
    for (int64_t c = 0; c < kChannels; ++c) {
      StridedView out = StridedView::contiguous(
          reinterpret_cast<std::byte*>(slot.data() + c * kEdge * kEdge * kEdge),
          {kEdge, kEdge, kEdge}, kItem);
      const StridedView whole = transform_view(s, out);
      for (int part = 0; part < 8; ++part) {
        StridedView dst = whole;
        std::vector<int64_t> start(3);
        for (size_t d = 0; d < 3; ++d) {
          const bool high = (part >> d) & 1;
          const int64_t lo = high ? split[d] : 0, hi = high ? kEdge : split[d];
          dst.shape[d] = hi - lo;
          dst.data += lo * whole.byte_strides[d];
          start[d] = high ? 0 : kEdge - split[d];  // low part: the chunk's tail
        }
        strided_copy(reinterpret_cast<const std::byte*>(chunk.data()), chunk_shape, start, dst,
                     kItem);
      }
    }
    benchmark::DoNotOptimize(slot.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(slot.size()) * kItem);
  state.SetLabel(s.describe());
}
BENCHMARK(BM_PlaceCropWithTransform)->DenseRange(0, kCubeSymmetries - 1);

}  // namespace
}  // namespace chute
