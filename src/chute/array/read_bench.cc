// Micro-benchmarks of the read path: strided copies, planning a batch, and reading a whole
// array of bytes-codec chunks from memory (which isolates chute's own overhead from I/O and
// decompression). Reports bytes/s.

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/read_plan.h"
#include "chute/array/strided_copy.h"
#include "chute/store/memory_store.h"

namespace chute {
namespace {

void BM_StridedCopyRows(benchmark::State& state) {
  const int64_t n = state.range(0);  // copy an (n/2, n/2) float box of an (n, n) chunk
  std::vector<float> src(static_cast<size_t>(n * n), 1.f), dst(static_cast<size_t>(n * n / 4));
  const std::vector<int64_t> src_shape{n, n}, start{n / 4, n / 4};
  auto view = StridedView::contiguous(reinterpret_cast<std::byte*>(dst.data()), {n / 2, n / 2}, 4);
  for (auto _ : state) {
    strided_copy(reinterpret_cast<const std::byte*>(src.data()), src_shape, start, view, 4);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(dst.size() * 4));
}
BENCHMARK(BM_StridedCopyRows)->Arg(256)->Arg(2048);

void BM_StridedCopyChannelChunk(benchmark::State& state) {
  // W1: a (lat, lon, 5) channel chunk into its slot of a (lat, lon, 40) channels-last sample;
  // the scatter the loader does for every channel-split chunk (runs of 20 bytes).
  const int64_t lat = 181, lon = 360, c = 5, channels = 40;
  std::vector<float> src(static_cast<size_t>(lat * lon * c), 1.f);
  std::vector<float> dst(static_cast<size_t>(lat * lon * channels));
  const std::vector<int64_t> shape{lat, lon, c}, start{0, 0, 0};
  StridedView view{reinterpret_cast<std::byte*>(dst.data() + state.range(0)),
                   {lat, lon, c},
                   {lon * channels * 4, channels * 4, 4}};
  for (auto _ : state) {
    strided_copy(reinterpret_cast<const std::byte*>(src.data()), shape, start, view, 4);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(state.iterations() * lat * lon * c * 4);
}
BENCHMARK(BM_StridedCopyChannelChunk)->Arg(0)->Arg(15);

void BM_StridedCopyIntoChannel(benchmark::State& state) {
  const int64_t n = state.range(0);  // a whole (n, n) chunk into channel 1 of (n, n, 3)
  std::vector<float> src(static_cast<size_t>(n * n), 1.f), dst(static_cast<size_t>(n * n * 3));
  const std::vector<int64_t> shape{n, n}, start{0, 0};
  StridedView view{reinterpret_cast<std::byte*>(dst.data() + 1), {n, n}, {n * 12, 12}};
  for (auto _ : state) {
    strided_copy(reinterpret_cast<const std::byte*>(src.data()), shape, start, view, 4);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(state.iterations() * n * n * 4);
}
BENCHMARK(BM_StridedCopyIntoChannel)->Arg(256)->Arg(2048);

/// A (chunks*rows, 512) float32 array of (rows, 512) bytes-codec chunks in memory.
std::shared_ptr<Array> make_memory_array(int64_t chunks, int64_t rows) {
  ArrayMetadata m;
  m.shape = {chunks * rows, 512};
  m.chunk_shape = {rows, 512};
  m.data_type = {DTypeKind::kFloat, 4};
  m.fill_value.assign(4, std::byte{0});
  m.codecs = {{"bytes", {{"endian", "little"}}}};
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::byte> chunk(static_cast<size_t>(rows * 512 * 4), std::byte{1});
  for (int64_t c = 0; c < chunks; ++c) store->set(fmt::format("c/{}/0", c), chunk);
  return std::make_shared<Array>(store, "", m, "bench");
}

void BM_ReadWholeArray(benchmark::State& state) {
  const auto threads = static_cast<size_t>(state.range(0));
  auto array = make_memory_array(64, 512);  // 64 chunks of 1 MiB
  std::vector<float> out(static_cast<size_t>(64 * 512 * 512));
  auto view =
      StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), array->metadata().shape, 4);
  ThreadPool pool(threads);
  const std::vector<int64_t> origin{0, 0};
  for (auto _ : state) array->read(origin, view, threads > 1 ? &pool : nullptr);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(out.size() * 4));
}
BENCHMARK(BM_ReadWholeArray)->Arg(1)->Arg(2)->UseRealTime();

void BM_PlanBatch(benchmark::State& state) {
  // 16 samples of 8 rows each from an array of 1-row chunks, half of them shared.
  auto array = make_memory_array(1024, 1);
  std::vector<float> batch(16 * 8 * 512);
  ReadPlan plan;
  for (auto _ : state) {
    plan.clear();
    for (int64_t s = 0; s < 16; ++s) {
      auto slot = StridedView::contiguous(reinterpret_cast<std::byte*>(batch.data() + s * 8 * 512),
                                          {8, 512}, 4);
      const std::vector<int64_t> start{(s * 4) % 1000, 0};
      plan.add(*array, start, slot);
    }
    benchmark::DoNotOptimize(plan.task_count());
  }
}
BENCHMARK(BM_PlanBatch);

}  // namespace
}  // namespace chute

BENCHMARK_MAIN();
