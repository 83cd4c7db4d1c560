#pragma once
// The order samples come in: a shuffle per epoch that is a pure function of (seed, epoch), cut
// into global batches and sharded by rank, so ranks agree on their shares without talking.
//
// The rule, for N samples, per-rank batch size B, world size W and global batch size G = B × W:
//   - perm = the epoch's permutation of [0, N) (the identity when shuffle is off); it depends on
//     (seed, epoch) only, through chute's own PRNG (splitmix64 + unbiased bounded draws), so it is
//     the same on every platform and for every rank and thread count.
//   - global batch b covers positions [b·G, (b+1)·G) of the epoch; rank r gets positions
//     [b·G + r·B, b·G + (r+1)·B), in that order.
//   - drop_last = true: only complete global batches: batches_per_epoch = floor(N / G).
//   - drop_last = false: batches_per_epoch = ceil(N / G); a position p ≥ N of the last global
//     batch takes perm[p mod N] (it wraps around to the start of the permutation). Every rank gets
//     the same number of full batches; the wrapped entries are "padding": they always sit at the
//     end of a rank's batch, and batch_padding(b) says how many there are.
// So for one (seed, epoch) the ranks' non-padding samples are disjoint and together cover the
// epoch (drop_last = false) or all but the last N mod G samples (drop_last = true).

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace chute {

/// Where a rank is in its epochs: enough to resume mid-epoch exactly.
struct SamplerState {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t next_batch = 0;  // the first batch of `epoch` not yet consumed
  // What the position is a position in, so a state is not restored into another run (the
  // Loader fills and checks them; 0 means "not recorded" and is not checked).
  int64_t batch_size = 0;
  int64_t world_size = 0;
  uint64_t dataset = 0;  // dataset_fingerprint(): sample count, output names, dtypes, shapes

  bool operator==(const SamplerState&) const = default;
};

/// splitmix64: a small, fast, portable 64-bit generator (Steele, Lea, Flood 2014).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  /// A uniform integer in [0, bound), without modulo bias (Lemire's method). bound > 0.
  uint64_t below(uint64_t bound);

 private:
  uint64_t state_;
};

/// Fills `out` with the permutation of [0, n) for (seed, epoch) (Fisher–Yates over SplitMix64).
void epoch_permutation(int64_t n, uint64_t seed, int64_t epoch, std::vector<int64_t>& out);

/// The chunk-aware shuffle (FFCV's quasi-random order, Mosaic streaming's block shuffle):
/// samples [k·block, (k+1)·block) form group k (the samples of one chunk along the sample
/// axis); the groups are shuffled, and then the samples of each run of `window` consecutive
/// groups (in that shuffled order) are shuffled among themselves. Every sample comes once; a
/// stretch of the epoch touches about `window` chunks instead of one chunk per sample.
struct ChunkShuffle {
  int64_t block = 0;   // samples per group; 0: off (the plain shuffle)
  int64_t window = 4;  // groups mixed together, >= 1
  bool enabled() const { return block > 0; }
};

/// Fills `out` with the chunk-aware permutation of [0, n) for (seed, epoch). block >= 1,
/// window >= 1. A pure function of its arguments, like epoch_permutation().
void chunk_aware_permutation(int64_t n, const ChunkShuffle& shuffle, uint64_t seed, int64_t epoch,
                             std::vector<int64_t>& out);

class Sampler {
 public:
  /// Throws kInvalidArgument unless num_samples >= 0, batch_size >= 1, world_size >= 1 and
  /// 0 <= rank < world_size.
  Sampler(int64_t num_samples, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last,
          int64_t rank = 0, int64_t world_size = 1);

  int64_t num_samples() const { return num_samples_; }
  int64_t batch_size() const { return batch_size_; }
  int64_t global_batch_size() const { return batch_size_ * world_size_; }
  bool shuffle() const { return shuffle_; }
  uint64_t seed() const { return seed_; }
  bool drop_last() const { return drop_last_; }
  int64_t rank() const { return rank_; }
  int64_t world_size() const { return world_size_; }

  /// Batches per epoch for this rank (the same for every rank).
  int64_t batches_per_epoch() const;

  /// The sample indices of this rank's batch `batch` of `epoch`, in batch order (batch_size of
  /// them). Throws kOutOfRange unless 0 <= batch < batches_per_epoch(). Thread-safe; the epoch's
  /// permutation is computed once and cached.
  std::vector<int64_t> batch(int64_t epoch, int64_t batch) const;
  void batch(int64_t epoch, int64_t batch, std::vector<int64_t>& out) const;

  /// How many trailing entries of batch(epoch, batch) are wrap-around padding (0 unless
  /// drop_last is off and `batch` is the last of the epoch). The same for every epoch.
  int64_t batch_padding(int64_t batch) const;

  /// The whole permutation of `epoch` (identity when shuffle is off).
  std::vector<int64_t> permutation(int64_t epoch) const;

  // A cursor over batches, for callers that want the sampler to keep the position.
  /// Starts `epoch` at batch `start_batch` (0 <= start_batch <= batches_per_epoch()).
  void begin_epoch(int64_t epoch, int64_t start_batch = 0);
  /// The next batch of the current epoch into `out`; false (and `out` untouched) at its end.
  bool next(std::vector<int64_t>& out);
  SamplerState state() const { return {seed_, epoch_, next_batch_}; }
  /// Continues from `state`; throws kInvalidArgument when its seed differs from this sampler's
  /// or next_batch is outside [0, batches_per_epoch()].
  void restore(const SamplerState& state);

  /// Uses the chunk-aware permutation (when shuffling) instead of the plain one. Throws
  /// kInvalidArgument for block < 0 or window < 1. Call before reading batches.
  void set_chunk_shuffle(const ChunkShuffle& shuffle);
  const ChunkShuffle& chunk_shuffle() const { return chunk_shuffle_; }

 private:
  std::shared_ptr<const std::vector<int64_t>> cached_permutation(int64_t epoch) const;

  int64_t num_samples_;
  int64_t batch_size_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t rank_;
  int64_t world_size_;
  int64_t epoch_ = 0;
  int64_t next_batch_ = 0;
  ChunkShuffle chunk_shuffle_;

  mutable std::mutex cache_mutex_;
  mutable int64_t cache_epoch_ = -1;
  mutable std::shared_ptr<const std::vector<int64_t>> cache_;
};

}  // namespace chute
