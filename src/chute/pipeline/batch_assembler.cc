#include "chute/pipeline/batch_assembler.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "chute/store/caching_store.h"
#include "chute/util/error.h"

namespace chute {

namespace {
constexpr size_t kAlignment = 64;
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
      layout_(BatchLayout::of(*dataset_, batch_size)),
      pool_(threads),
      scratch_(pool_.size()) {
  if (batch_size < 1)
    fail(ErrorCode::kInvalidArgument, "batch_size must be >= 1, got {}", batch_size);
  for (const OutputSpec& spec : dataset_->staging()) {
    staging_.emplace_back(
        static_cast<size_t>(std::max<int64_t>(1, batch_size * spec.sample_nbytes())));
  }
  for (ByteBuffer& buffer : staging_) memory_.staging.push_back(buffer.data());
  memory_.outputs.resize(layout_.offsets.size());
}

BatchAssembler::~BatchAssembler() = default;

void BatchAssembler::assemble(std::span<const int64_t> samples, std::byte* buffer, ReadStats* stats,
                              uint64_t seed, int64_t epoch) {
  if (static_cast<int64_t>(samples.size()) > layout_.batch_size) {
    fail(ErrorCode::kInvalidArgument, "{} samples do not fit a batch of {}", samples.size(),
         layout_.batch_size);
  }
  memory_.batch_size = static_cast<int64_t>(samples.size());
  memory_.seed = seed;
  memory_.epoch = epoch;
  for (size_t k = 0; k < layout_.offsets.size(); ++k) {
    memory_.outputs[k] = buffer + layout_.offsets[k];
  }
  plan_.clear();
  for (size_t slot = 0; slot < samples.size(); ++slot) {
    const int64_t sample = samples[slot];
    if (sample < 0 || sample >= dataset_->num_samples()) {
      fail(ErrorCode::kOutOfRange, "sample {} outside [0, {})", sample, dataset_->num_samples());
    }
    dataset_->plan(sample, static_cast<int64_t>(slot), memory_, plan_);
  }
  plan_.execute(&pool_, scratch_, stats, io_concurrency_);
  const auto finish_start = std::chrono::steady_clock::now();
  dataset_->finish(memory_, &pool_);
  last_finish_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - finish_start)
                        .count();
}

void BatchAssembler::add_caches_to(std::vector<const Store*>& caches) const {
  const Store* last = nullptr;
  for (const ChunkTask& task : plan_.tasks()) {
    const Store* store = &task.array->store();
    if (store == last) continue;
    last = store;
    if (std::find(caches.begin(), caches.end(), store) == caches.end() && cache_stats_of(*store)) {
      caches.push_back(store);
    }
  }
}

}  // namespace chute
