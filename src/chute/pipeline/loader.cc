#include "chute/pipeline/loader.h"

#include <fmt/format.h>

#include <chrono>
#include <utility>

#include "chute/pipeline/batch_assembler.h"
#include "chute/pipeline/buffer_pool.h"
#include "chute/pipeline/prefetch_queue.h"
#include "chute/util/error.h"

namespace chute {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const DatasetPtr& checked(const DatasetPtr& dataset) {
  if (!dataset) fail(ErrorCode::kInvalidArgument, "loader: dataset is null");
  if (dataset->outputs().empty())
    fail(ErrorCode::kInvalidArgument, "loader: dataset has no outputs");
  return dataset;
}

constexpr size_t kMaxOccupancySamples = size_t{1} << 20;

}  // namespace

Loader::Loader(DatasetPtr dataset, LoaderOptions options)
    : dataset_(checked(dataset)),
      options_(options),
      sampler_(dataset_->num_samples(), options.batch_size, options.shuffle, options.seed,
               options.drop_last, options.rank, options.world_size) {
  if (options_.prefetch < 1) {
    fail(ErrorCode::kInvalidArgument, "prefetch must be >= 1, got {}", options_.prefetch);
  }
  assembler_ = std::make_unique<BatchAssembler>(dataset_, options_.batch_size, options_.threads);
  // Enough idle buffers for the queue, the batch being assembled and a few held by the consumer.
  pool_ = std::make_unique<BufferPool>(assembler_->layout().total_bytes, options_.prefetch + 8);
  // What a consumer slower than the loader holds in the steady state: the queue, the batch
  // waiting to enter it and the consumer's own. Allocated and faulted in now: growing the pool
  // over the first tens of batches made them slower than the step (bench full mode).
  pool_->reserve(static_cast<size_t>(options_.prefetch) + 2, &assembler_->workers());
}

Loader::~Loader() { stop(); }

size_t Loader::threads() const { return assembler_->threads(); }

void Loader::begin_epoch(int64_t epoch, int64_t start_batch) {
  if (start_batch < 0 || start_batch > batches_per_epoch()) {
    fail(ErrorCode::kInvalidArgument, "start batch {} outside [0, {}]", start_batch,
         batches_per_epoch());
  }
  pending_restore_.reset();
  const bool producer_is_there = queue_ && epoch_done_ && epoch == epoch_ + 1 && start_batch == 0;
  if (!producer_is_there) {
    stop();
    queue_ = std::make_shared<PrefetchQueue>(options_.prefetch);
    producer_ = std::thread(&Loader::produce, this, epoch, start_batch, queue_);
  }
  epoch_ = epoch;
  consumed_ = start_batch;
  epoch_done_ = false;
  epoch_begin_ns_ = now_ns();
  first_batch_seen_ = false;
}

void Loader::begin_epoch() {
  if (pending_restore_) {
    const SamplerState state = *pending_restore_;
    begin_epoch(state.epoch, state.next_batch);
  } else {
    begin_epoch(epoch_ + 1, 0);
  }
}

void Loader::stop() {
  if (queue_) queue_->close();
  if (producer_.joinable()) producer_.join();
  queue_.reset();
  epoch_done_ = false;
}

std::optional<Batch> Loader::next() {
  if (!queue_ || epoch_done_) return std::nullopt;
  const auto queued = static_cast<int64_t>(queue_->size());
  last_queued_ = queued;
  int64_t wait_ns = 0;
  std::optional<Batch> batch;
  try {
    batch = queue_->pop(&wait_ns);
  } catch (...) {
    stop();
    std::lock_guard lock(stats_mutex_);
    stats_.wait_ns += wait_ns;
    throw;
  }
  if (!batch) {
    // The end of the epoch. The producer goes on with the next one unless production ended.
    if (queue_->done()) {
      stop();
    } else {
      epoch_done_ = true;
    }
    return std::nullopt;
  }
  ++consumed_;
  const int64_t now = now_ns();
  std::lock_guard lock(stats_mutex_);
  stats_.wait_ns += wait_ns;
  stats_.batches += 1;
  stats_.samples += batch->size();
  if (stats_.occupancy.size() < kMaxOccupancySamples) {
    stats_.occupancy.push_back({now - epoch_begin_ns_, queued});
  }
  if (!first_batch_seen_) {
    first_batch_seen_ = true;
    stats_.first_batch_ns = now - epoch_begin_ns_;
  }
  return batch;
}

void Loader::produce(int64_t epoch, int64_t start_batch, std::shared_ptr<PrefetchQueue> queue) {
  const std::vector<OutputSpec>& outputs = dataset_->outputs();
  const BatchLayout& layout = assembler_->layout();
  try {
    // Epochs back to back: the queue's bound keeps the producer at most `prefetch` batches
    // ahead, across the end of an epoch as within one.
    for (int64_t e = epoch;; ++e, start_batch = 0) {
      for (int64_t b = start_batch; b < batches_per_epoch(); ++b) {
        if (queue->closed()) return;
        const int64_t start = now_ns();
        Batch batch;
        batch.epoch = e;
        batch.index = b;
        sampler_.batch(e, b, batch.indices);
        batch.padding = sampler_.batch_padding(b);
        std::shared_ptr<std::byte> buffer = pool_->acquire();
        ReadStats read_stats;
        try {
          assembler_->assemble(batch.indices, buffer.get(), &read_stats, options_.seed, e);
        } catch (const Error& error) {
          throw error.with_context(fmt::format("epoch {}, batch {}", e, b));
        }
        batch.arrays.resize(outputs.size());
        for (size_t k = 0; k < outputs.size(); ++k) {
          BatchArray& array = batch.arrays[k];
          array.name = outputs[k].name;
          array.dtype = outputs[k].dtype;
          array.shape.reserve(outputs[k].sample_shape.size() + 1);
          array.shape.push_back(batch.size());
          array.shape.insert(array.shape.end(), outputs[k].sample_shape.begin(),
                             outputs[k].sample_shape.end());
          array.data = buffer.get() + layout.offsets[k];
          array.owner = buffer;
        }
        add_read_stats(read_stats, now_ns() - start, assembler_->last_finish_ns());
        if (!queue->push(std::move(batch))) return;
      }
      if (batches_per_epoch() == 0) break;  // nothing to run ahead into
      queue->end_epoch();
    }
    queue->finish();
  } catch (...) {
    queue->finish(std::current_exception());
  }
}

void Loader::add_read_stats(const ReadStats& stats, int64_t produce_ns, int64_t finish_ns) {
  std::lock_guard lock(stats_mutex_);
  stats_.batches_produced += 1;
  stats_.produce_ns += produce_ns;
  stats_.finish_ns += finish_ns;
  stats_.read_ns += stats.read_ns.load();
  stats_.decode_ns += stats.decode_ns.load();
  stats_.assemble_ns += stats.assemble_ns.load();
  stats_.bytes_read += stats.bytes_read.load();
  stats_.bytes_decoded += stats.bytes_decoded.load();
  stats_.chunks += stats.chunks.load();
  stats_.missing_chunks += stats.missing_chunks.load();
}

SamplerState Loader::state() const {
  if (pending_restore_) return *pending_restore_;
  if (epoch_ < 0) return {options_.seed, 0, 0};
  // After an epoch's last batch the position is the next epoch's start, so restoring it never
  // runs an empty epoch.
  if (consumed_ >= batches_per_epoch()) return {options_.seed, epoch_ + 1, 0};
  return {options_.seed, epoch_, consumed_};
}

void Loader::restore(const SamplerState& state) {
  stop();
  if (state.seed != options_.seed) {
    fail(ErrorCode::kInvalidArgument, "saved state has seed {}, this loader seed {}", state.seed,
         options_.seed);
  }
  if (state.next_batch < 0 || state.next_batch > batches_per_epoch()) {
    fail(ErrorCode::kInvalidArgument, "saved state's next batch {} outside [0, {}]",
         state.next_batch, batches_per_epoch());
  }
  pending_restore_ = state;
}

LoaderStats Loader::stats() const {
  std::lock_guard lock(stats_mutex_);
  LoaderStats copy = stats_;
  copy.buffers_allocated = static_cast<int64_t>(pool_->allocations());
  return copy;
}

void Loader::reset_stats() {
  std::lock_guard lock(stats_mutex_);
  stats_ = LoaderStats{};
}

Loader::Iterator::Iterator(Loader* loader) : loader_(loader), current_(loader->next()) {}

Loader::Iterator& Loader::Iterator::operator++() {
  current_.reset();  // release the previous batch's buffer before waiting for the next
  current_ = loader_->next();
  return *this;
}

Loader::Iterator Loader::begin() {
  begin_epoch();
  return Iterator(this);
}

}  // namespace chute
