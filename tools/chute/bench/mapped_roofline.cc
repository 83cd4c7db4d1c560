#include "chute/bench/mapped_roofline.h"

#include <algorithm>
#include <cstring>

#include "chute/array/read_plan.h"
#include "chute/array/strided_copy.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/store/single_file_store.h"
#include "chute/util/byte_buffer.h"
#include "chute/util/clock.h"

namespace chute::bench {

int64_t MappedBox::nbytes() const {
  int64_t n = array->metadata().data_type.size;
  for (int64_t extent : shape) n *= extent;
  return n;
}

std::vector<MappedBox> mapped_boxes_of_batches(const Dataset& dataset,
                                               const std::vector<std::vector<int64_t>>& batches) {
  // One slot of memory per output and staging buffer: plans are built, never executed.
  std::vector<std::vector<std::byte>> storage;
  BatchMemory memory;
  memory.batch_size = 1;
  for (const OutputSpec& output : dataset.outputs()) {
    storage.emplace_back(static_cast<size_t>(output.sample_nbytes()));
    memory.outputs.push_back(storage.back().data());
  }
  for (const OutputSpec& output : dataset.staging()) {
    storage.emplace_back(static_cast<size_t>(output.sample_nbytes()));
    memory.staging.push_back(storage.back().data());
  }
  std::vector<MappedBox> boxes;
  ReadPlan plan;
  for (const auto& batch : batches) {
    for (int64_t sample : batch) {
      plan.clear();
      dataset.plan(sample, 0, memory, plan);
      for (const ChunkTask& task : plan.tasks()) {
        if (task.array->source().mapped() == nullptr) continue;
        const auto& chunk = task.array->read_chunk_shape();
        for (const ChunkTarget& target : task.targets) {
          MappedBox box{task.array, {}, target.dst.shape};
          for (size_t d = 0; d < chunk.size(); ++d) {
            box.start.push_back(task.chunk_coords[d] * chunk[d] + target.chunk_start[d]);
          }
          boxes.push_back(std::move(box));
        }
      }
    }
  }
  return boxes;
}

MappedCopy measure_mapped_copy(std::span<const MappedBox> boxes, ThreadPool& pool, int repeats,
                               const std::function<void()>& before_pass) {
  MappedCopy result;
  result.boxes = boxes.size();
  std::vector<int64_t> offsets;
  for (const MappedBox& box : boxes) {
    offsets.push_back(result.bytes);
    result.bytes += box.nbytes();
  }
  if (boxes.empty()) return result;
  ByteBuffer out(static_cast<size_t>(result.bytes));
  std::memset(out.data(), 0, out.size());
  for (int pass = 0; pass < std::max(1, repeats); ++pass) {
    if (before_pass) before_pass();
    const auto start = Clock::now();
    pool.parallel_for(boxes.size(), [&](size_t i, size_t) {
      const MappedBox& box = boxes[i];
      const MappedElements& mapped = *box.array->source().mapped();
      const int64_t item = box.array->metadata().data_type.size;
      std::vector<int64_t> shape = box.array->metadata().shape;
      std::vector<int64_t> first = box.start;
      std::vector<int64_t> extent = box.shape;
      if (mapped.fortran_order) {  // C order over the reversed axes: copied as stored
        std::reverse(shape.begin(), shape.end());
        std::reverse(first.begin(), first.end());
        std::reverse(extent.begin(), extent.end());
      }
      const StridedView dst = StridedView::contiguous(out.data() + offsets[i], extent, item);
      mapped.file->read_mapped([&] { strided_copy(mapped.data, shape, first, dst, item); });
    });
    const double seconds = static_cast<double>(elapsed_ns(start)) * 1e-9;
    if (pass == 0 || seconds < result.seconds) result.seconds = seconds;
  }
  result.gbps = result.seconds > 0 ? static_cast<double>(result.bytes) / result.seconds / 1e9 : 0;
  return result;
}

}  // namespace chute::bench
