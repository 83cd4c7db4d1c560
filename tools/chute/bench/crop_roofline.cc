#include "chute/bench/crop_roofline.h"

#include <algorithm>
#include <cstring>

#include "chute/bench/roofline.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/util/byte_buffer.h"
#include "chute/util/clock.h"
#include "chute/util/thread_pool.h"

namespace chute::bench {
namespace {

/// Builds the plan of `batch` (its crops) into `plan` with destinations in `memory`.
void plan_batch(const CropDataset& dataset, const std::vector<int64_t>& batch, BatchMemory& memory,
                ReadPlan& plan) {
  plan.clear();
  memory.batch_size = static_cast<int64_t>(batch.size());
  for (size_t slot = 0; slot < batch.size(); ++slot) {
    dataset.plan(batch[slot], static_cast<int64_t>(slot), memory, plan);
  }
}

double rate(int64_t samples, int64_t ns) { return ns > 0 ? samples / (ns * 1e-9) : 0; }

}  // namespace

std::vector<std::vector<std::vector<int64_t>>> crops_of_batches(
    const CropDataset& dataset, const std::vector<std::vector<int64_t>>& batches, uint64_t seed,
    int64_t batches_per_epoch) {
  std::vector<std::vector<std::vector<int64_t>>> out;
  for (size_t b = 0; b < batches.size(); ++b) {
    const int64_t epoch = static_cast<int64_t>(b) / std::max<int64_t>(1, batches_per_epoch);
    auto& rows = out.emplace_back();
    for (int64_t sample : batches[b]) {
      const CropDataset::Crop crop = dataset.crop(seed, epoch, sample);
      std::vector<int64_t> row = crop.corner;
      row.push_back(crop.transform);
      rows.push_back(std::move(row));
    }
  }
  return out;
}

CropRooflineResult measure_crop_roofline(const CropDataset& dataset,
                                         const std::vector<std::vector<int64_t>>& batches,
                                         uint64_t seed, int64_t batches_per_epoch, int threads,
                                         const std::function<void()>& before_reads) {
  CropRooflineResult result;
  result.threads = std::max(1, threads);
  size_t max_batch = 1;
  for (const auto& batch : batches) max_batch = std::max(max_batch, batch.size());
  for (const OutputSpec& output : dataset.outputs()) result.sample_bytes += output.sample_nbytes();
  // The crop bytes only (not the corners and ids).
  result.sample_bytes -= dataset.outputs()[dataset.outputs().size() - 2].sample_nbytes() +
                         dataset.outputs().back().sample_nbytes();

  const BatchLayout layout = BatchLayout::of(dataset, static_cast<int64_t>(max_batch));
  ByteBuffer buffer(layout.total_bytes);
  std::memset(buffer.data(), 0, layout.total_bytes);  // fault the pages in before timing
  BatchMemory memory;
  memory.seed = seed;
  for (size_t offset : layout.offsets) memory.outputs.push_back(buffer.data() + offset);

  ThreadPool pool(static_cast<size_t>(result.threads));
  std::vector<ReadScratch> scratch(pool.size());
  int64_t max_chunk = 0;
  for (const auto& [name, array] : dataset.arrays()) {
    // A mapped source's tasks are pieces of at most kMappedPieceBytes, or of one index of the
    // box's outermost axis when that is larger.
    int64_t piece = kMappedPieceBytes;
    if (array->source().mapped() != nullptr) {
      for (const OutputSpec& output : dataset.outputs())
        piece = std::max(piece, output.sample_nbytes());
    }
    max_chunk = std::max(max_chunk, array->source().mapped() ? piece : array->read_chunk_nbytes());
  }
  std::vector<ByteBuffer> decoded;
  for (size_t w = 0; w < pool.size(); ++w) {
    decoded.emplace_back(static_cast<size_t>(max_chunk));
    std::memset(decoded.back().data(), 0, static_cast<size_t>(max_chunk));
  }

  ReadPlan plan;
  int64_t loop_ns = 0, place_ns = 0;
  ReadStats stats;
  ReadStats loop_stats;  // the one-loop pass: which chunks the engine read in flight
  for (size_t b = 0; b < batches.size(); ++b) {
    memory.epoch = static_cast<int64_t>(b) / std::max<int64_t>(1, batches_per_epoch);
    plan_batch(dataset, batches[b], memory, plan);
    result.samples += static_cast<int64_t>(batches[b].size());
    result.chunk_reads += static_cast<int64_t>(plan.task_count());
    const auto& tasks = plan.tasks();

    // The three steps as one loop: what the loader's workers do, without the pipeline.
    if (before_reads) before_reads();
    auto start = Clock::now();
    plan.execute(&pool, scratch, &loop_stats);
    loop_ns += elapsed_ns(start);

    // Read + decode of every touched chunk, timed apart by the read path's own clocks. A mapped
    // source (.npy, contiguous HDF5) has no chunk to decode: its read is the plain copy of each
    // target's box out of the mapping, into a contiguous box placed from below.
    if (before_reads) before_reads();
    pool.parallel_for(tasks.size(), [&](size_t i, size_t worker) {
      const ChunkTask& task = tasks[i];
      if (task.array->source().mapped() == nullptr) {
        task.array->load(task, scratch[worker], decoded[worker].data(), &stats);
        return;
      }
      ChunkTask plain = task;
      plain.targets.resize(1);
      plain.targets[0].dst = StridedView::contiguous(
          decoded[worker].data(), task.targets[0].dst.shape, task.array->metadata().data_type.size);
      plain.targets[0].convert = nullptr;
      task.array->execute(plain, scratch[worker], &stats);
    });

    // Placement with the transforms alone, from a cache-resident decoded chunk (box).
    start = Clock::now();
    pool.parallel_for(tasks.size(), [&](size_t i, size_t worker) {
      const ChunkTask& task = tasks[i];
      const int64_t item = task.array->metadata().data_type.size;
      if (task.array->source().mapped() != nullptr) {
        const ChunkTarget& target = task.targets[0];
        const std::vector<int64_t> zeros(target.dst.shape.size(), 0);
        strided_copy(decoded[worker].data(), target.dst.shape, zeros, target.dst, item);
        return;
      }
      for (const ChunkTarget& target : task.targets) {
        strided_copy(decoded[worker].data(), task.array->read_chunk_shape(), target.chunk_start,
                     target.dst, item);
      }
    });
    place_ns += elapsed_ns(start);
  }
  const int64_t workers = result.threads;
  result.read_samples_per_s = rate(result.samples, stats.read_ns.load() / workers);
  result.decode_samples_per_s = rate(result.samples, stats.decode_ns.load() / workers);
  result.place_samples_per_s = rate(result.samples, place_ns);
  result.loop_samples_per_s = rate(result.samples, loop_ns);
  // Cold reads come from storage. They overlap the workers only when the read engine kept
  // every one in flight (chunks read whole from a store that takes several reads at once);
  // chunks read in part (blosc blocks, byte ranges) and mapped sources are read by the worker
  // that decodes or copies them, so there the times add.
  const int64_t chunks = loop_stats.chunks.load();
  result.read_overlaps = before_reads && chunks > 0 && loop_stats.chunks_in_flight.load() == chunks;
  // A mapped source (.npy, contiguous HDF5) has no decode step: its decode time is 0 and it
  // does not bound the limit.
  const double read = result.read_samples_per_s, decode = result.decode_samples_per_s,
               place = result.place_samples_per_s;
  result.fused_mapped_copy = !before_reads && !dataset.arrays().empty() &&
                             std::ranges::all_of(dataset.arrays(), [](const auto& named) {
                               return named.second->source().mapped() != nullptr;
                             });
  // Either way the read runs beside the other steps, and the slower side bounds the loader.
  const bool overlaps = result.read_overlaps || result.fused_mapped_copy;
  result.combined_samples_per_s = decode > 0 ? loader_limit(read, {decode, place}, overlaps)
                                             : loader_limit(read, {place}, overlaps);
  result.bytes_read_per_sample =
      result.samples > 0 ? static_cast<double>(stats.bytes_read.load()) / result.samples : 0;
  result.bytes_decoded_per_sample =
      result.samples > 0 ? static_cast<double>(stats.bytes_decoded.load()) / result.samples : 0;
  return result;
}

nlohmann::json to_json(const CropRooflineResult& r) {
  auto gbps = [&](double samples_per_s) { return samples_per_s * r.sample_bytes / 1e9; };
  return {{"threads", r.threads},
          {"samples", r.samples},
          {"sample_bytes", r.sample_bytes},
          {"chunk_reads", r.chunk_reads},
          {"bytes_read_per_sample", r.bytes_read_per_sample},
          {"bytes_decoded_per_sample", r.bytes_decoded_per_sample},
          {"read_samples_per_s", r.read_samples_per_s},
          {"decode_samples_per_s", r.decode_samples_per_s},
          {"place_samples_per_s", r.place_samples_per_s},
          {"combined_samples_per_s", r.combined_samples_per_s},
          {"read_overlaps", r.read_overlaps},
          {"fused_mapped_copy", r.fused_mapped_copy},
          {"loop_samples_per_s", r.loop_samples_per_s},
          {"combined_gb_per_s", gbps(r.combined_samples_per_s)},
          {"loop_gb_per_s", gbps(r.loop_samples_per_s)}};
}

}  // namespace chute::bench
