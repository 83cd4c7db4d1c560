#include "chute/pipeline/batch_assembler.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "chute/pipeline/buffer_pool.h"
#include "chute/store/caching_store.h"
#include "chute/util/error.h"

namespace chute {

namespace {
constexpr size_t kAlignment = BufferPool::kAlignment;
size_t align_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

BatchLayout BatchLayout::of(const Dataset& dataset, int64_t batch_size) {
  BatchLayout layout;
  layout.batch_size = batch_size;
  size_t offset = 0;
  for (const OutputSpec& spec : dataset.outputs()) {
    offset = align_up(offset);
    layout.offsets.push_back(offset);
    offset += static_cast<size_t>(batch_size * spec.sample_nbytes());
  }
  layout.total_bytes = std::max(align_up(offset), kAlignment);
  return layout;
}

BatchAssembler::BatchAssembler(DatasetPtr dataset, int64_t batch_size, size_t threads)
    : dataset_(std::move(dataset)),
      parts_(dataset_->finish_parts()),
      layout_(BatchLayout::of(*dataset_, batch_size)),
      pool_(threads),
      scratch_(pool_.size()) {
  if (batch_size < 1)
    fail(ErrorCode::kInvalidArgument, "batch_size must be >= 1, got {}", batch_size);
  if (parts_ < 1) {
    fail(ErrorCode::kInternal, "{}: finish_parts() must be >= 1, got {}", dataset_->describe(),
         parts_);
  }
  for (Slot& slot : slots_) {
    slot.memory.outputs.resize(layout_.offsets.size());
    slot.plan.set_stored_bytes_pool(stored_pool_);
    if (dataset_->finishes_per_sample()) {
      const auto parts = static_cast<size_t>(batch_size * parts_);
      slot.unplaced = std::make_unique<std::atomic<int64_t>[]>(parts);
      slot.finished = std::make_unique<std::atomic<bool>[]>(parts);
      slot.plan.set_task_done([this, &slot](const ChunkTask& task) { task_done(slot, task); });
    }
  }
}

void BatchAssembler::task_done(Slot& slot, const ChunkTask& task) {
  for (const ChunkTarget& target : task.targets) {
    if (target.tag < 0 || slot.unplaced[static_cast<size_t>(target.tag)].fetch_sub(1) != 1) {
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    dataset_->finish_part(slot.memory, target.tag / parts_, target.tag % parts_);
    slot.finished[static_cast<size_t>(target.tag)] = true;
    slot.sample_finish_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
  }
}

BatchAssembler::~BatchAssembler() { cancel(); }

void BatchAssembler::assemble(std::span<const int64_t> samples, std::byte* buffer, ReadStats* stats,
                              uint64_t seed, int64_t epoch) {
  if (started_ != 0) fail(ErrorCode::kInternal, "assemble() with {} batches started", started_);
  start(samples, buffer, stats, seed, epoch);
  finish();
}

void BatchAssembler::plan_into(Slot& slot, std::span<const int64_t> samples, std::byte* buffer,
                               uint64_t seed, int64_t epoch) {
  if (static_cast<int64_t>(samples.size()) > layout_.batch_size) {
    fail(ErrorCode::kInvalidArgument, "{} samples do not fit a batch of {}", samples.size(),
         layout_.batch_size);
  }
  // Staging is allocated on a slot's first batch: without read-ahead the second never is.
  if (slot.staging.empty()) {
    for (const OutputSpec& spec : dataset_->staging()) {
      slot.staging.emplace_back(
          static_cast<size_t>(std::max<int64_t>(1, layout_.batch_size * spec.sample_nbytes())));
      slot.memory.staging.push_back(slot.staging.back().data());
    }
  }
  BatchMemory& memory = slot.memory;
  memory.batch_size = static_cast<int64_t>(samples.size());
  memory.seed = seed;
  memory.epoch = epoch;
  for (size_t k = 0; k < layout_.offsets.size(); ++k) {
    memory.outputs[k] = buffer + layout_.offsets[k];
  }
  slot.plan.clear();
  for (size_t index = 0; index < samples.size(); ++index) {
    const int64_t sample = samples[index];
    if (sample < 0 || sample >= dataset_->num_samples()) {
      fail(ErrorCode::kOutOfRange, "sample {} outside [0, {})", sample, dataset_->num_samples());
    }
    slot.plan.set_target_tag(static_cast<int64_t>(index) * parts_);
    dataset_->plan(sample, static_cast<int64_t>(index), memory, slot.plan);
  }
  slot.plan.set_target_tag(-1);
  if (slot.unplaced) {  // each part of a slot is finished when its last target is placed
    const auto parts = static_cast<int64_t>(samples.size()) * parts_;
    for (int64_t index = 0; index < parts; ++index) {
      slot.unplaced[static_cast<size_t>(index)] = 0;
      slot.finished[static_cast<size_t>(index)] = false;
    }
    for (const ChunkTask& task : slot.plan.tasks()) {
      for (const ChunkTarget& target : task.targets) {
        if (target.tag >= parts) {  // Dataset::finish_parts: plan() tags within its slot's parts
          fail(ErrorCode::kInternal, "{}: a read tagged {} in a batch of {} finishing parts",
               dataset_->describe(), target.tag, parts);
        }
        if (target.tag >= 0) ++slot.unplaced[static_cast<size_t>(target.tag)];
      }
    }
    slot.sample_finish_ns = 0;
  }
}

void BatchAssembler::start(std::span<const int64_t> samples, std::byte* buffer, ReadStats* stats,
                           uint64_t seed, int64_t epoch) {
  if (started_ == kMaxStarted) {
    fail(ErrorCode::kInternal, "a batch started with {} started already", started_);
  }
  Slot& slot = slots_[(first_ + started_) % kMaxStarted];
  ++started_;
  slot.stats = stats;
  slot.error = nullptr;
  try {
    plan_into(slot, samples, buffer, seed, epoch);
    slot.plan.start(&pool_, scratch_, stats, io_concurrency_, budget_);
  } catch (...) {
    slot.plan.cancel();
    slot.error = std::current_exception();  // the batch's own error, at its finish()
  }
}

void BatchAssembler::finish() {
  if (started_ == 0) fail(ErrorCode::kInternal, "finish() with no batch started");
  Slot& slot = slots_[first_];
  first_ = (first_ + 1) % kMaxStarted;
  --started_;
  if (slot.error) std::rethrow_exception(std::exchange(slot.error, nullptr));
  slot.plan.finish(&pool_, scratch_, slot.stats);
  const auto finish_start = std::chrono::steady_clock::now();
  if (slot.unplaced) {
    // Parts finished while the plan ran (worker time, summed), then those that read nothing.
    for (int64_t index = 0; index < slot.memory.batch_size * parts_; ++index) {
      if (!slot.finished[static_cast<size_t>(index)]) {
        dataset_->finish_part(slot.memory, index / parts_, index % parts_);
      }
    }
  } else {
    dataset_->finish(slot.memory, &pool_);
  }
  slot.finish_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - finish_start)
                       .count() +
                   (slot.unplaced ? slot.sample_finish_ns.load() : 0);
}

void BatchAssembler::cancel() {
  for (; started_ > 0; --started_) {
    Slot& slot = slots_[first_];
    first_ = (first_ + 1) % kMaxStarted;
    slot.plan.cancel();
    slot.error = nullptr;
  }
}

size_t BatchAssembler::reads_submitted_by_next() const {
  return started_ == 0 ? 0 : slots_[first_].plan.reads_submitted();
}

void BatchAssembler::add_caches_to(std::vector<const Store*>& caches) const {
  const Store* last_store = nullptr;
  for (const ChunkTask& task : last().plan.tasks()) {
    const Store* store = &task.array->store();
    if (store == last_store) continue;
    last_store = store;
    if (std::find(caches.begin(), caches.end(), store) == caches.end() && cache_stats_of(*store)) {
      caches.push_back(store);
    }
  }
}

}  // namespace chute
