#include "chute/bench/loader_source.h"

#include <set>
#include <utility>

#include "chute/util/error.h"

namespace chute::bench {

LoaderSource::LoaderSource(DatasetPtr dataset, const LoaderOptions& options)
    : loader_(std::move(dataset), options) {
  if (loader_.batches_per_epoch() == 0) {
    fail(ErrorCode::kInvalidArgument,
         "bench: an epoch has no batches ({} samples, batch size {}, world size {}, drop_last "
         "{}); use a smaller --batch-size",
         loader_.dataset().num_samples(), options.batch_size, options.world_size,
         options.drop_last);
  }
  loader_.begin_epoch(0);
}

LoaderSource::~LoaderSource() {
  current_.reset();
  loader_.stop();
}

BatchView LoaderSource::next() {
  current_.reset();  // the previous batch's buffers go back to the pool first
  current_ = loader_.next();
  if (!current_) {
    loader_.begin_epoch();
    current_ = loader_.next();
    if (!current_) fail(ErrorCode::kInternal, "bench: a new epoch gave no batch");
  }
  BatchView view;
  view.queued = static_cast<int>(loader_.last_queued());
  buffers_.clear();
  for (const BatchArray& array : current_->arrays) {
    buffers_.emplace_back(array.data, static_cast<size_t>(array.nbytes()));
    view.bytes += array.nbytes();
  }
  view.buffers = buffers_;
  view.indices = current_->indices;
  view.samples = current_->size();
  return view;
}

void LoaderSource::restart_around(const std::function<void()>& between) {
  current_.reset();
  const SamplerState position = loader_.state();
  loader_.stop();  // the producer and its queue go; begin_epoch starts a fresh one there
  between();
  loader_.begin_epoch(position.epoch, position.next_batch);
}

int LoaderSource::queue_capacity() const { return static_cast<int>(loader_.options().prefetch); }

WorkerTimes LoaderSource::worker_times() const {
  const LoaderStats stats = loader_.stats();
  return {stats.read_ns,       stats.decode_ns, stats.assemble_ns, stats.bytes_read,
          stats.bytes_decoded, stats.chunks,    stats.cache,       stats.finish_ns};
}

SourceFactory loader_factory(DatasetPtr dataset, const LoaderOptions& base) {
  return [dataset, base](const LoaderSetting& setting) -> std::unique_ptr<BatchSource> {
    LoaderOptions options = base;
    options.threads = static_cast<size_t>(setting.threads);
    options.prefetch = static_cast<size_t>(setting.prefetch);
    options.batch_size = setting.batch_size;
    options.io_concurrency = static_cast<size_t>(setting.io_concurrency);
    return std::make_unique<LoaderSource>(dataset, options);
  };
}

std::vector<ChunkRef> chunks_of_batches(const Dataset& dataset,
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
  std::vector<ChunkRef> refs;
  std::set<std::pair<const Array*, std::string>> seen;
  ReadPlan plan;
  for (const auto& batch : batches) {
    for (int64_t sample : batch) {
      plan.clear();
      dataset.plan(sample, 0, memory, plan);
      for (ChunkRef& ref : unique_chunks(plan.tasks())) {
        if (seen.emplace(ref.array, ref.key).second) refs.push_back(std::move(ref));
      }
    }
  }
  return refs;
}

}  // namespace chute::bench
