// Per-transform placement rate of a 64³ crop of 4 channels into its slot of a batch, with each
// of the cube's 48 symmetries, through transform_view and the strided copy kernels. Bytes/s
// counts the crop's bytes. Id 0 is the plain copy; ids with flip 2 use the reversed-run kernel;
// ids whose axes move the fastest axis (axes[2] != 2) are transposes. The second argument is
// the kernels: 0 the best this CPU has (register tiles), 1 the portable ones, so one run gives
// before/after under the same load.
//  - BM_PlaceCropFromChunks<float/uint16_t>: each channel from 8 cached 64³ chunks, as after a
//    decode of W3's Zarr form (source rows of 64 elements: 256 B for float32).
//  - BM_PlaceCropFromVolume: each channel from a 64 x 512 x 512 float32 volume (64 MiB, rows of
//    2 KiB), as a crop copied straight out of a mapped HDF5/.npy file. One corner: the crop's
//    lines stay in the last-level cache between iterations.
//  - BM_PlaceRandomCropsFromVolume: one 64³ float32 crop at a random corner of a 192 x 512 x 512
//    volume (192 MiB) per iteration, into the next of 64 line-aligned slots (64 MiB), so source
//    and destination come from and go to memory as in a loader's batch: the staged copy and
//    the streamed destination lines (strided_copy.cc) show here, not in the cached one above.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "chute/array/strided_copy.h"
#include "chute/dataset/cube_symmetry.h"

namespace chute {
namespace {

constexpr int64_t kEdge = 64, kChannels = 4;
/// Where the crop is cut into the 8 parts that come from different chunks: the corner of a
/// random box.
constexpr int64_t kSplit[3] = {23, 41, 7};

/// Places the crop from `source` (one channel of `source_shape`), part by part;
/// part_start(d, high) is where part's box starts on axis d of the source.
template <typename T, typename PartStart>
void place_crops(benchmark::State& state, const std::vector<T>& source,
                 const std::vector<int64_t>& source_shape, PartStart part_start) {
  const CubeSymmetry& s = cube_symmetry(static_cast<int>(state.range(0)));
  const bool portable = state.range(1) != 0;
  const auto item = static_cast<int64_t>(sizeof(T));
  std::vector<T> slot(static_cast<size_t>(kChannels * kEdge * kEdge * kEdge));
  set_copy_kernels(portable ? CopyKernels::kPortable : CopyKernels::kBest);
  for (auto _ : state) {
    for (int64_t c = 0; c < kChannels; ++c) {
      StridedView out = StridedView::contiguous(
          reinterpret_cast<std::byte*>(slot.data() + c * kEdge * kEdge * kEdge),
          {kEdge, kEdge, kEdge}, item);
      const StridedView whole = transform_view(s, out);
      for (int part = 0; part < 8; ++part) {
        StridedView dst = whole;
        std::vector<int64_t> start(3);
        for (size_t d = 0; d < 3; ++d) {
          const bool high = (part >> d) & 1;
          const int64_t lo = high ? kSplit[d] : 0, hi = high ? kEdge : kSplit[d];
          dst.shape[d] = hi - lo;
          dst.data += lo * whole.byte_strides[d];
          start[d] = part_start(d, high);
        }
        strided_copy(reinterpret_cast<const std::byte*>(source.data()), source_shape, start, dst,
                     item);
      }
    }
    benchmark::DoNotOptimize(slot.data());
    benchmark::ClobberMemory();
  }
  set_copy_kernels(CopyKernels::kBest);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(slot.size()) * item);
  state.SetLabel(s.describe() + (portable ? " portable" : ""));
}

template <typename T>
void BM_PlaceCropFromChunks(benchmark::State& state) {
  // One cached chunk stands for all 8: the low part is its tail, the high part its head.
  const std::vector<T> chunk(static_cast<size_t>(kEdge * kEdge * kEdge), T{1});
  place_crops(state, chunk, {kEdge, kEdge, kEdge},
              [](size_t d, bool high) { return high ? 0 : kEdge - kSplit[d]; });
}

void BM_PlaceCropFromVolume(benchmark::State& state) {
  constexpr int64_t kWide = 512;
  const std::vector<float> volume(static_cast<size_t>(kEdge * kWide * kWide), 1.f);
  const int64_t corner[3] = {0, 100, 200};
  place_crops(state, volume, {kEdge, kWide, kWide},
              [&](size_t d, bool high) { return corner[d] + (high ? kSplit[d] : 0); });
}

void BM_PlaceRandomCropsFromVolume(benchmark::State& state) {
  constexpr int64_t kDeep = 192, kWide = 512, kSlots = 64;
  constexpr int64_t kCropBytes = kEdge * kEdge * kEdge * 4;
  const CubeSymmetry& s = cube_symmetry(static_cast<int>(state.range(0)));
  const bool portable = state.range(1) != 0;
  static const std::vector<float> volume(static_cast<size_t>(kDeep * kWide * kWide), 1.f);
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  const std::unique_ptr<std::byte, Free> slots(
      static_cast<std::byte*>(std::aligned_alloc(64, kSlots * kCropBytes)));
  std::fill_n(slots.get(), kSlots * kCropBytes, std::byte{0});
  const std::vector<int64_t> shape{kDeep, kWide, kWide};
  std::mt19937_64 rng(static_cast<uint64_t>(state.range(0)));
  set_copy_kernels(portable ? CopyKernels::kPortable : CopyKernels::kBest);
  int64_t slot = 0;
  for (auto _ : state) {
    const std::vector<int64_t> corner{static_cast<int64_t>(rng() % (kDeep - kEdge + 1)),
                                      static_cast<int64_t>(rng() % (kWide - kEdge + 1)),
                                      static_cast<int64_t>(rng() % (kWide - kEdge + 1))};
    const StridedView out = StridedView::contiguous(slots.get() + (slot++ % kSlots) * kCropBytes,
                                                    {kEdge, kEdge, kEdge}, 4);
    strided_copy(reinterpret_cast<const std::byte*>(volume.data()), shape, corner,
                 transform_view(s, out), 4);
  }
  benchmark::DoNotOptimize(slots.get());
  set_copy_kernels(CopyKernels::kBest);
  state.SetBytesProcessed(state.iterations() * kCropBytes);
  state.SetLabel(s.describe() + (portable ? " portable" : ""));
}

void every_id(benchmark::internal::Benchmark* b) {
  for (int id = 0; id < kCubeSymmetries; ++id) {
    for (int portable : {0, 1}) b->Args({id, portable});
  }
}

BENCHMARK(BM_PlaceCropFromChunks<float>)->Apply(every_id);
BENCHMARK(BM_PlaceCropFromChunks<uint16_t>)->Apply(every_id);
BENCHMARK(BM_PlaceCropFromVolume)->Apply(every_id);
BENCHMARK(BM_PlaceRandomCropsFromVolume)->Apply(every_id);

}  // namespace
}  // namespace chute
