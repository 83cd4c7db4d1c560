#include "chute/sampler/sampler.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "chute/util/error.h"

namespace chute {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t bound) {
  // Lemire, "Fast random integer generation in an interval" (2019): multiply-shift with a
  // rejection step that removes the bias of the low word.
  unsigned __int128 product = static_cast<unsigned __int128>(next()) * bound;
  uint64_t low = static_cast<uint64_t>(product);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = static_cast<unsigned __int128>(next()) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

void epoch_permutation(int64_t n, uint64_t seed, int64_t epoch, std::vector<int64_t>& out) {
  out.resize(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), int64_t{0});
  // One stream per (seed, epoch): hash the seed, then mix the epoch in with an odd constant so
  // neighbouring epochs land far apart in splitmix's sequence.
  SplitMix64 seeder(seed);
  const uint64_t stream = seeder.next() ^ (static_cast<uint64_t>(epoch) * 0xd1b54a32d192ed03ULL);
  SplitMix64 rng(SplitMix64(stream).next());
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(out[static_cast<size_t>(i)], out[static_cast<size_t>(j)]);
  }
}

void chunk_aware_permutation(int64_t n, const ChunkShuffle& shuffle, uint64_t seed, int64_t epoch,
                             std::vector<int64_t>& out) {
  if (shuffle.block < 1 || shuffle.window < 1) {
    fail(ErrorCode::kInvalidArgument, "chunk shuffle: block and window must be >= 1, got {}, {}",
         shuffle.block, shuffle.window);
  }
  const int64_t groups = (n + shuffle.block - 1) / shuffle.block;
  std::vector<int64_t> group_order;
  epoch_permutation(groups, seed, epoch, group_order);
  // The samples within a window get their own stream (another odd constant), so the order is
  // a pure function of (seed, epoch, block, window).
  SplitMix64 seeder(seed ^ 0x6a09e667f3bcc909ULL);
  const uint64_t stream = seeder.next() ^ (static_cast<uint64_t>(epoch) * 0x9fb21c651e98df25ULL);
  SplitMix64 rng(SplitMix64(stream).next());
  out.clear();
  out.reserve(static_cast<size_t>(n));
  for (int64_t w = 0; w < groups; w += shuffle.window) {
    const size_t begin = out.size();
    for (int64_t g = w; g < std::min(groups, w + shuffle.window); ++g) {
      const int64_t first = group_order[static_cast<size_t>(g)] * shuffle.block;
      for (int64_t s = first; s < std::min(n, first + shuffle.block); ++s) out.push_back(s);
    }
    for (size_t i = out.size() - 1; i > begin; --i) {
      const size_t j = begin + static_cast<size_t>(rng.below(i - begin + 1));
      std::swap(out[i], out[j]);
    }
  }
}

Sampler::Sampler(int64_t num_samples, int64_t batch_size, bool shuffle, uint64_t seed,
                 bool drop_last, int64_t rank, int64_t world_size)
    : num_samples_(num_samples),
      batch_size_(batch_size),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last),
      rank_(rank),
      world_size_(world_size) {
  if (num_samples < 0)
    fail(ErrorCode::kInvalidArgument, "num_samples must be >= 0, got {}", num_samples);
  if (batch_size < 1)
    fail(ErrorCode::kInvalidArgument, "batch_size must be >= 1, got {}", batch_size);
  if (world_size < 1)
    fail(ErrorCode::kInvalidArgument, "world_size must be >= 1, got {}", world_size);
  if (rank < 0 || rank >= world_size) {
    fail(ErrorCode::kInvalidArgument, "rank must be in [0, {}), got {}", world_size, rank);
  }
}

int64_t Sampler::batches_per_epoch() const {
  const int64_t global = global_batch_size();
  return drop_last_ ? num_samples_ / global : (num_samples_ + global - 1) / global;
}

std::shared_ptr<const std::vector<int64_t>> Sampler::cached_permutation(int64_t epoch) const {
  std::lock_guard lock(cache_mutex_);
  if (!cache_ || cache_epoch_ != epoch) {
    auto permutation = std::make_shared<std::vector<int64_t>>();
    if (chunk_shuffle_.enabled()) {
      chunk_aware_permutation(num_samples_, chunk_shuffle_, seed_, epoch, *permutation);
    } else {
      epoch_permutation(num_samples_, seed_, epoch, *permutation);
    }
    cache_ = std::move(permutation);
    cache_epoch_ = epoch;
  }
  return cache_;
}

void Sampler::batch(int64_t epoch, int64_t batch, std::vector<int64_t>& out) const {
  if (batch < 0 || batch >= batches_per_epoch()) {
    fail(ErrorCode::kOutOfRange,
         "batch {} outside [0, {}) for {} samples, batch size {} x {} ranks", batch,
         batches_per_epoch(), num_samples_, batch_size_, world_size_);
  }
  const int64_t first = batch * global_batch_size() + rank_ * batch_size_;
  out.resize(static_cast<size_t>(batch_size_));
  if (!shuffle_) {
    for (int64_t k = 0; k < batch_size_; ++k) out[k] = (first + k) % num_samples_;
    return;
  }
  const auto permutation = cached_permutation(epoch);
  for (int64_t k = 0; k < batch_size_; ++k) {
    out[static_cast<size_t>(k)] = (*permutation)[static_cast<size_t>((first + k) % num_samples_)];
  }
}

std::vector<int64_t> Sampler::batch(int64_t epoch, int64_t batch) const {
  std::vector<int64_t> out;
  this->batch(epoch, batch, out);
  return out;
}

int64_t Sampler::batch_padding(int64_t batch) const {
  const int64_t first = batch * global_batch_size() + rank_ * batch_size_;
  const int64_t end = first + batch_size_;
  return std::max<int64_t>(0, end - std::max(first, num_samples_));
}

std::vector<int64_t> Sampler::permutation(int64_t epoch) const {
  if (!shuffle_) {
    std::vector<int64_t> identity(static_cast<size_t>(num_samples_));
    std::iota(identity.begin(), identity.end(), int64_t{0});
    return identity;
  }
  return *cached_permutation(epoch);
}

void Sampler::begin_epoch(int64_t epoch, int64_t start_batch) {
  if (start_batch < 0 || start_batch > batches_per_epoch()) {
    fail(ErrorCode::kInvalidArgument, "start batch {} outside [0, {}]", start_batch,
         batches_per_epoch());
  }
  epoch_ = epoch;
  next_batch_ = start_batch;
}

bool Sampler::next(std::vector<int64_t>& out) {
  if (next_batch_ >= batches_per_epoch()) return false;
  batch(epoch_, next_batch_, out);
  ++next_batch_;
  return true;
}

void Sampler::set_chunk_shuffle(const ChunkShuffle& shuffle) {
  if (shuffle.block < 0 || shuffle.window < 1) {
    fail(ErrorCode::kInvalidArgument,
         "chunk shuffle: block must be >= 0 and window >= 1, got {}, {}", shuffle.block,
         shuffle.window);
  }
  std::lock_guard lock(cache_mutex_);
  chunk_shuffle_ = shuffle;
  cache_.reset();
  cache_epoch_ = -1;
}

void Sampler::restore(const SamplerState& state) {
  if (state.seed != seed_) {
    fail(ErrorCode::kInvalidArgument, "saved state has seed {}, this sampler seed {}", state.seed,
         seed_);
  }
  begin_epoch(state.epoch, state.next_batch);
}

}  // namespace chute
