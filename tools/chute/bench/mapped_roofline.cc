#include "chute/bench/mapped_roofline.h"

#include <algorithm>
#include <cstring>

#include "chute/pipeline/batch_assembler.h"
#include "chute/util/clock.h"

namespace chute::bench {

MappedCopies plan_mapped_copies(const Dataset& dataset,
                                const std::vector<std::vector<int64_t>>& batches,
                                int64_t max_bytes) {
  MappedCopies copies;
  size_t batch_size = 1;
  for (const auto& batch : batches) batch_size = std::max(batch_size, batch.size());
  const BatchLayout layout = BatchLayout::of(dataset, static_cast<int64_t>(batch_size));
  std::vector<size_t> staging_offsets;
  size_t total = layout.total_bytes;
  for (const OutputSpec& spec : dataset.staging()) {
    staging_offsets.push_back(total);
    total += static_cast<size_t>(spec.sample_nbytes()) * batch_size;
  }
  copies.memory.resize(total);
  std::memset(copies.memory.data(), 0, total);  // touched: pages backed before timing
  BatchMemory memory;
  memory.batch_size = static_cast<int64_t>(batch_size);
  for (size_t offset : layout.offsets) memory.outputs.push_back(copies.memory.data() + offset);
  for (size_t offset : staging_offsets) memory.staging.push_back(copies.memory.data() + offset);
  ReadPlan plan;
  for (const auto& batch : batches) {
    if (copies.bytes >= max_bytes && !copies.batches.empty()) break;
    plan.clear();
    for (size_t slot = 0; slot < batch.size(); ++slot) {
      dataset.plan(batch[slot], static_cast<int64_t>(slot), memory, plan);
    }
    std::vector<ChunkTask> mapped;
    for (const ChunkTask& task : plan.tasks()) {
      if (task.array->source().mapped() == nullptr) continue;
      for (const ChunkTarget& target : task.targets) {
        int64_t bytes = task.array->metadata().data_type.size;
        for (int64_t extent : target.dst.shape) bytes *= extent;
        copies.bytes += bytes;
      }
      mapped.push_back(task);
    }
    copies.boxes += mapped.size();
    if (!mapped.empty()) copies.batches.push_back(std::move(mapped));
  }
  return copies;
}

MappedCopy measure_mapped_copy(MappedCopies& copies, ThreadPool& pool, int repeats,
                               const std::function<void()>& before_pass) {
  MappedCopy result;
  result.boxes = copies.boxes;
  result.bytes = copies.bytes;
  if (copies.boxes == 0) return result;
  std::vector<ReadScratch> scratch(pool.size());
  for (int pass = 0; pass < std::max(1, repeats); ++pass) {
    if (before_pass) before_pass();
    const auto start = Clock::now();
    for (const std::vector<ChunkTask>& batch : copies.batches) {
      pool.parallel_for(batch.size(), [&](size_t i, size_t worker) {
        batch[i].array->execute(batch[i], scratch[worker], nullptr);  // copy_mapped
      });
    }
    const double seconds = static_cast<double>(elapsed_ns(start)) * 1e-9;
    if (pass == 0 || seconds < result.seconds) result.seconds = seconds;
  }
  result.gbps = result.seconds > 0 ? static_cast<double>(result.bytes) / result.seconds / 1e9 : 0;
  return result;
}

}  // namespace chute::bench
