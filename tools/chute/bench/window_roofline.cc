#include "chute/bench/window_roofline.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "chute/array/read_plan.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/util/byte_buffer.h"
#include "chute/util/clock.h"
#include "chute/util/error.h"

namespace chute::bench {

WindowPlacement measure_window_placement(const WindowDataset& dataset,
                                         std::span<const int64_t> batch, ThreadPool& pool,
                                         int repeats) {
  if (!dataset.staged()) {
    fail(ErrorCode::kInvalidArgument,
         "window roofline: these windows are read straight into the output (not staged); "
         "their placement is the read itself");
  }
  if (batch.empty()) fail(ErrorCode::kInvalidArgument, "window roofline: an empty batch");
  const size_t outputs = dataset.outputs().size();
  const auto workers = static_cast<int64_t>(pool.size());
  WindowPlacement result;
  result.samples = static_cast<int64_t>(batch.size());
  result.decoded_bytes = result.samples * dataset.decoded_bytes_per_sample();

  // One staged slot per worker, each read from the batch's first window by the dataset's own
  // plan (untimed): the planes place_sample reads, warm in that worker's caches.
  std::vector<ByteBuffer> staging;
  BatchMemory memory;
  memory.batch_size = workers;
  for (const OutputSpec& spec : dataset.staging()) {
    const auto bytes = static_cast<size_t>(spec.sample_nbytes() * workers);
    staging.emplace_back(bytes);
    std::memset(staging.back().data(), 0, bytes);
    memory.staging.push_back(staging.back().data());
  }
  // The batch's outputs, in memory and touched beforehand, as the crop roofline's.
  const BatchLayout layout = BatchLayout::of(dataset, std::max<int64_t>(result.samples, workers));
  ByteBuffer out(layout.total_bytes);
  std::memset(out.data(), 0, layout.total_bytes);
  for (size_t offset : layout.offsets) memory.outputs.push_back(out.data() + offset);
  ReadPlan plan;
  for (int64_t w = 0; w < workers; ++w) dataset.plan(batch[0], w, memory, plan);
  std::vector<ReadScratch> scratch(pool.size());
  plan.execute(&pool, scratch);

  std::atomic<int64_t> written{0};
  for (int pass = 0; pass < std::max(1, repeats); ++pass) {
    written = 0;
    const auto start = Clock::now();
    pool.parallel_for(batch.size(), [&](size_t slot, size_t worker) {
      std::vector<const std::byte*> in(outputs);
      std::vector<std::byte*> dst(outputs);
      int64_t bytes = 0;
      for (size_t k = 0; k < outputs; ++k) {
        const int64_t out_bytes = dataset.outputs()[k].sample_nbytes();
        in[k] =
            memory.staging[k] + static_cast<int64_t>(worker) * dataset.staging()[k].sample_nbytes();
        dst[k] = memory.outputs[k] + static_cast<int64_t>(slot) * out_bytes;
        bytes += out_bytes;
      }
      dataset.place_sample(in, dst);
      written += bytes;
    });
    const double seconds = static_cast<double>(elapsed_ns(start)) * 1e-9;
    if (pass == 0 || seconds < result.seconds) result.seconds = seconds;
  }
  result.output_bytes = written.load();
  result.gbps =
      result.seconds > 0 ? static_cast<double>(result.decoded_bytes) / result.seconds / 1e9 : 0;
  for (size_t k = 0; k < outputs; ++k) {
    const auto n = static_cast<size_t>(dataset.outputs()[k].sample_nbytes());
    result.first_slot.insert(result.first_slot.end(), memory.outputs[k], memory.outputs[k] + n);
  }
  return result;
}

}  // namespace chute::bench
