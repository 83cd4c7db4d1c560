// The windows' placement pass (WindowDataset::finish) apart from the reads, on a real weather
// store: the windows of docs/guides/weather-windows.md (inputs t-1, t of 6 variables, 3 targets at
// t+1, a forcing, 2 statics) of a `chute make-dataset variables STORE --xarray` store, normalised
// with its `chute stats` group, batch 16, 2 threads. Set CHUTE_BENCH_WINDOWS_STORE (and
// CHUTE_BENCH_WINDOWS_STATS) to run it; without them every case is skipped. Arguments: channels
// last (1/0), bfloat16 (1/0). The "read" cases time the read plan (reads and decoding) of the
// same batch, for comparison. Rates count samples.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chute/array/read_plan.h"
#include "chute/dataset/window_dataset.h"
#include "chute/util/byte_buffer.h"
#include "chute/util/thread_pool.h"

namespace chute {
namespace {

constexpr int64_t kBatch = 16;

struct Setup {
  std::shared_ptr<WindowDataset> dataset;
  std::vector<ByteBuffer> outputs, staging;
  BatchMemory memory;
  ThreadPool pool{2};
  std::vector<ReadScratch> scratch{2};
  ReadPlan plan;
};

/// Null (and the case skipped) when the store is not given.
std::unique_ptr<Setup> open_setup(benchmark::State& state) {
  const char* store = std::getenv("CHUTE_BENCH_WINDOWS_STORE");
  const char* stats = std::getenv("CHUTE_BENCH_WINDOWS_STATS");
  if (store == nullptr) {
    state.SkipWithError("set CHUTE_BENCH_WINDOWS_STORE to a make-dataset variables --xarray store");
    return nullptr;
  }
  WindowOptions o;
  o.variables = {"temperature",  "u_component_of_wind", "v_component_of_wind",
                 "geopotential", "2m_temperature",      "mean_sea_level_pressure"};
  o.target_variables = {"temperature", "geopotential", "2m_temperature"};
  o.forcings = {"mean_sea_level_pressure"};
  o.statics = {"land_sea_mask", "geopotential_at_surface"};
  o.input_offsets = {-1, 0};
  o.target_offsets = {1};
  if (stats != nullptr) o.statistics = stats;
  o.channels_last = state.range(0) != 0;
  if (state.range(1) != 0) o.output_dtype = DataType{DTypeKind::kBFloat, 2};
  auto setup = std::make_unique<Setup>();
  setup->dataset = open_window_dataset(store, o);
  setup->memory.batch_size = kBatch;
  for (const OutputSpec& spec : setup->dataset->outputs()) {
    setup->outputs.emplace_back(static_cast<size_t>(kBatch * spec.sample_nbytes()));
    std::memset(setup->outputs.back().data(), 0, setup->outputs.back().size());
    setup->memory.outputs.push_back(setup->outputs.back().data());
  }
  for (const OutputSpec& spec : setup->dataset->staging()) {
    setup->staging.emplace_back(static_cast<size_t>(kBatch * spec.sample_nbytes()));
    std::memset(setup->staging.back().data(), 0, setup->staging.back().size());
    setup->memory.staging.push_back(setup->staging.back().data());
  }
  return setup;
}

/// Plans kBatch windows spread over the store (batch `round` of them).
void plan_batch(Setup& s, int64_t round) {
  s.plan.clear();
  const int64_t n = s.dataset->num_samples();
  for (int64_t slot = 0; slot < kBatch; ++slot) {
    s.dataset->plan((slot * 7 + round * 3) % n, slot, s.memory, s.plan);
  }
}

void BM_WindowFinish(benchmark::State& state) {
  auto setup = open_setup(state);
  if (!setup) return;
  plan_batch(*setup, 0);
  setup->plan.execute(&setup->pool, setup->scratch, nullptr);
  for (auto _ : state) setup->dataset->finish(setup->memory, &setup->pool);
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_WindowRead(benchmark::State& state) {
  auto setup = open_setup(state);
  if (!setup) return;
  int64_t round = 0;
  for (auto _ : state) {
    state.PauseTiming();
    plan_batch(*setup, round++);
    state.ResumeTiming();
    setup->plan.execute(&setup->pool, setup->scratch, nullptr);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void layouts(benchmark::internal::Benchmark* b) {
  b->ArgNames({"channels_last", "bfloat16"});
  for (int last : {1, 0}) {
    for (int bf16 : {1, 0}) b->Args({last, bf16});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_WindowFinish)->Apply(layouts);
BENCHMARK(BM_WindowRead)->Apply(layouts);

}  // namespace
}  // namespace chute
