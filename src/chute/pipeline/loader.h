#pragma once
// The Loader: deterministic, sharded, prefetched training batches decoded into recycled buffers.
//
//   #include "chute/loader.h"
//
//   // Packed samples: arrays sharing the sample axis. Weather windows:
//   // chute::open_window_dataset(path, WindowOptions). Volume crops:
//   // chute::open_crop_dataset({{"inputs", path}, ...}, CropOptions), with batch["crops"]
//   // and batch["transforms"] beside the arrays.
//   auto dataset = chute::open_packed_dataset({{"inputs", "train/inputs.zarr"},
//                                              {"targets", "train/targets.zarr"}});
//   chute::LoaderOptions options;
//   options.batch_size = 16;
//   options.shuffle = true;
//   options.seed = 0;
//   options.drop_last = true;
//   options.prefetch = 2;                           // threads = 0: one per hardware thread
//   chute::Loader loader(dataset, options);
//   for (int epoch = 0; epoch < 2; ++epoch) {
//     for (const chute::Batch& batch : loader) {    // each range-for runs the next epoch
//       const chute::BatchArray& x = batch["inputs"];  // shape (16, lat, lon, C), float32
//       const float* values = x.as<float>();           // C-contiguous; valid while x.owner is
//       use(values, batch.indices);                    // held (copy the shared_ptr to keep it)
//     }
//   }
//
//   // Or explicitly, with a saved position: loader.begin_epoch(3, /*start_batch=*/10);
//   while (std::optional<chute::Batch> batch = loader.next()) { ... }
//   chute::SamplerState saved = loader.state();     // {seed, epoch, next_batch}
//   loader.restore(saved);                          // the next begin_epoch() resumes there
//
// Threads: one producer thread assembles batches (BatchAssembler, on its own pool of `threads`
// workers) into a PrefetchQueue of `prefetch` batches; with read_ahead it plans the next batch
// and submits its chunk reads before the current one decodes. At the end of an epoch it goes
// straight on with the next one (still at most `prefetch` batches ahead), so the consumer's next
// epoch starts from a full queue instead of an empty one; begin_epoch() for exactly that epoch (the
// default begin_epoch(), or epoch + 1 from batch 0) takes those batches, any other start
// restarts the producer. A reader error reaches the consumer as a chute::Error from next(),
// after the batches queued before it, naming the array, chunk key, sample and batch; the
// epoch then ends. begin_epoch() while an epoch runs cancels it (the producer finishes its
// current batch and exits); stop() and the destructor join every thread. Batch content depends only
// on (seed, epoch, rank, world_size, batch), never on `threads` or `prefetch`. Loader methods are
// for one consumer thread; stats() may be called from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "chute/array/array.h"
#include "chute/dataset/dataset.h"
#include "chute/device/device.h"
#include "chute/pipeline/batch.h"
#include "chute/pipeline/buffer_pool.h"
#include "chute/pipeline/device_delivery.h"
#include "chute/sampler/sampler.h"
#include "chute/store/caching_store.h"
#include "chute/util/option_table.h"

namespace chute {

class BatchAssembler;
class PrefetchQueue;

struct LoaderOptions {
  int64_t batch_size = 16;  // per rank
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;  // false: the last batch is padded by wrapping around (see Sampler)
  size_t threads = 0;      // reader/decoder threads; 0 = default_thread_count()
  size_t prefetch = 2;     // batches queued ahead of the consumer, >= 1
  // Chunk reads kept in flight while the threads decode, in [1, 65536]; 0 = the store's
  // preferred_concurrency() (32 for local files). 1: each thread reads its own chunks.
  size_t io_concurrency = 0;
  // true: the next batch is planned and its chunk reads submitted before the current one
  // decodes, so storage stays busy across batch boundaries; its reads share io_concurrency.
  // Costs one more batch buffer and the stored bytes of one batch's chunks.
  bool read_ahead = true;
  int64_t rank = 0;
  int64_t world_size = 1;
  // batch_size × world_size larger than the dataset is an error (a typo, not a wish for batches
  // of mostly padding) unless this is set: then the one batch wraps around (drop_last = false).
  bool pad_to_batch = false;
  // > 0: next() waiting longer than this for a batch (a read stuck on storage) throws kTimeout
  // and cancels the epoch, instead of waiting forever. 0: no limit.
  double timeout_s = 0;
  // shuffle_block > 0 (with shuffle): the chunk-aware shuffle (sampler.h, ChunkShuffle): groups
  // of shuffle_block consecutive samples shuffled, then samples within shuffle_window groups.
  int64_t shuffle_block = 0;
  int64_t shuffle_window = 4;
  // true: batch buffers are page-locked host memory (CUDA's cuMemHostAlloc), so a framework's
  // non-blocking copy to the GPU is one DMA from them. Needs a CUDA driver and GPU (kUnsupported
  // otherwise); with `device` set, the pinned memory is that device's.
  bool pin_memory = false;
  // "cuda:N" (or "cuda"): each batch is copied to that GPU on chute's own stream as soon as it is
  // assembled (from page-locked host buffers, pin_memory or not), and handed out in device
  // memory; `prefetch` then counts device batches. Empty:
  // batches stay in host memory. "standin:N": a host-memory stand-in for a device (tests).
  std::string device;
  // Testing: the device to deliver to, used instead of opening `device` by name.
  DevicePtr device_handle;
  // Non-empty: an epoch draws from these sample numbers (a subset, a stride, an explicit
  // order) instead of every sample; shuffled, sharded and resumed like the samples themselves.
  std::vector<int64_t> indices;

  /// Name, help and check of every field (option_table.h): the one declaration of each option.
  static const std::vector<OptionField<LoaderOptions>>& fields();
};

/// Checks every field against fields() (no dataset needed), then rank < world_size. Throws
/// kInvalidArgument naming the field as Python spells it, the value and the allowed range. The
/// Loader constructor calls it, then checks what depends on the dataset (batch size against the
/// samples, buffer and shuffle memory against the machine's).
void validate(const LoaderOptions& options);

/// A hash of what a sample is (sample count, output names, dtypes and shapes), stored in saved
/// states so that a state is not restored into a loader over different data.
uint64_t dataset_fingerprint(const Dataset& dataset);

/// The consumer's view of the queue at one next() call.
struct OccupancySample {
  int64_t time_ns = 0;  // since the epoch began
  int64_t queued = 0;   // batches waiting in the queue when next() was called
};

struct LoaderStats {
  int64_t batches = 0;  // handed to the consumer
  int64_t samples = 0;
  int64_t wait_ns = 0;           // consumer time blocked inside next()
  int64_t first_batch_ns = -1;   // begin_epoch() -> first batch returned, for the latest epoch
  int64_t batches_produced = 0;  // assembled and queued (the producer runs `prefetch` ahead)
  int64_t produce_ns = 0;        // producer time assembling batches (plan + read + finish)
  int64_t finish_ns = 0;         // of which post-read transforms
  // ReadStats, summed over reader threads:
  int64_t read_ns = 0;
  int64_t decode_ns = 0;
  int64_t assemble_ns = 0;
  int64_t bytes_read = 0;
  int64_t bytes_decoded = 0;
  int64_t chunks = 0;
  int64_t missing_chunks = 0;
  int64_t buffers_allocated = 0;  // batch buffers the pool has allocated (flat in steady state)
  // Buffers for chunks' stored bytes (reads in flight) handed out without memory, whose read
  // allocated them: flat once the pool shared by the batch slots holds enough.
  int64_t stored_buffers_allocated = 0;
  int64_t prefetch = 0;        // batches queued ahead (the option)
  int64_t io_concurrency = 0;  // chunk reads in flight the latest batch allowed (resolved)
  int64_t read_ahead = 0;      // batches planned ahead of the one decoding (the option: 0, 1)
  // Batches whose chunk reads were submitted before the previous batch was queued, and those
  // reads (counted when the previous batch finished decoding).
  int64_t batches_read_ahead = 0;
  int64_t reads_submitted_ahead = 0;
  // Node-local cache counters summed over the caches the loader's reads went through (counted
  // since each cache was opened, or since reset_stats()); nullopt when no read went through one.
  std::optional<CacheStats> cache;
  // Delivery to a device (LoaderOptions::device); nullopt for host batches.
  std::optional<DeliveryStats> delivery;
  // The consumer's queue view at next() calls since reset: every call while fewer than 65,536
  // are kept, then every 2nd, 4th, ... (the list is halved when full), so it spans the whole run
  // in bounded memory (1 MiB).
  std::vector<OccupancySample> occupancy;
};

class Loader {
 public:
  /// Throws kInvalidArgument, naming the option, its value and the allowed range, for bad
  /// options (batch_size < 1, batch_size × world_size above the sample count without
  /// pad_to_batch, prefetch outside [1, 4096], io_concurrency above 65536, threads above
  /// max_reader_threads(), rank outside [0, world_size), batch buffers larger than the machine's
  /// memory) or a dataset without outputs; kIoError when the OS refuses a thread.
  Loader(DatasetPtr dataset, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const LoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }
  const Sampler& sampler() const { return sampler_; }
  int64_t batches_per_epoch() const { return sampler_.batches_per_epoch(); }
  /// Reader threads actually used.
  size_t threads() const;

  /// Starts `epoch` at batch `start_batch` (0 <= start_batch <= batches_per_epoch()). When the
  /// previous epoch ended and this is the one after it from batch 0, the producer already runs
  /// it; otherwise a running producer is cancelled and joined first.
  void begin_epoch(int64_t epoch, int64_t start_batch = 0);
  /// Starts the next epoch: the restored position after restore(), else the epoch after the
  /// last one begun (0 at first), from its first batch.
  void begin_epoch();
  /// The next batch of the running epoch; nullopt at its end, after stop(), or when no epoch
  /// was begun. Rethrows a producer error once (then the epoch is over). With
  /// options().timeout_s, throws kTimeout after waiting that long (the epoch is cancelled).
  std::optional<Batch> next();
  /// Waits up to `max_wait` for next() to have something to return (a batch, the end or an
  /// error) without taking it; true when next() will not block. For consumers that must stay
  /// responsive (the Python binding polls for Ctrl-C this way).
  bool wait(std::chrono::nanoseconds max_wait);
  /// Cancels the running epoch and joins its producer. Idempotent. May be called from another
  /// thread while the consumer waits in next()/wait(): that call then returns the end.
  void stop();

  /// {seed, epoch, batches of that epoch consumed (counting start_batch)}, with batch_size,
  /// world_size and dataset filled in. After an epoch's last batch, the next epoch at batch 0.
  SamplerState state() const;
  /// Makes the next begin_epoch() (no arguments) resume at `state`. Stops a running epoch.
  /// Throws kInvalidArgument when the seed, batch size, world size or dataset differ from this
  /// loader's (fields recorded as 0 are not checked) or next_batch is out of range.
  void restore(const SamplerState& state);

  LoaderStats stats() const;
  void reset_stats();
  /// Batches that were waiting in the queue at the latest next() (-1 before any); the last
  /// entry of stats().occupancy without copying it. For the consumer thread.
  int64_t last_queued() const { return last_queued_; }

  /// Range-for support: begin() calls begin_epoch() and runs the next epoch.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;

    Iterator() = default;
    const Batch& operator*() const { return *current_; }
    const Batch* operator->() const { return &*current_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return !current_ && !other.current_; }

   private:
    friend class Loader;
    explicit Iterator(Loader* loader);
    Loader* loader_ = nullptr;
    std::optional<Batch> current_;
  };
  Iterator begin();
  Iterator end() { return Iterator(); }

 private:
  void produce(int64_t epoch, int64_t start_batch, std::shared_ptr<PrefetchQueue> queue);
  /// kUnsupported when this process is a fork() child of the one that made the loader.
  void check_process() const;
  std::shared_ptr<PrefetchQueue> current_queue() const;
  void add_read_stats(const ReadStats& stats, int64_t produce_ns, int64_t finish_ns,
                      size_t reads_ahead);

  DatasetPtr dataset_;
  LoaderOptions options_;
  Sampler sampler_;
  std::unique_ptr<BatchAssembler> assembler_;
  std::unique_ptr<BufferPool> pool_;
  DevicePtr device_;                          // LoaderOptions::device or pin_memory's GPU
  std::unique_ptr<DeviceDelivery> delivery_;  // set when batches go to a device

  const int pid_;  // the process that owns the threads
  uint64_t dataset_fingerprint_ = 0;
  mutable std::mutex control_mutex_;  // guards producer_ and queue_ (stop() from any thread)
  std::thread producer_;
  std::shared_ptr<PrefetchQueue> queue_;  // set while a producer runs
  int64_t epoch_ = -1;                    // last epoch begun
  int64_t consumed_ = 0;                  // next batch of epoch_ for the consumer
  std::atomic<bool> epoch_done_{false};   // epoch_ ended; the producer runs ahead into epoch_ + 1
  int64_t waited_ns_ = 0;         // wait() time on the batch next() will return (for timeout_s)
  int64_t occupancy_stride_ = 1;  // stats keep every stride-th next() (bounded)
  int64_t occupancy_calls_ = 0;
  int64_t last_queued_ = -1;  // batches queued at the latest next()
  std::optional<SamplerState> pending_restore_;
  int64_t epoch_begin_ns_ = 0;  // steady clock at begin_epoch
  bool first_batch_seen_ = false;

  mutable std::mutex stats_mutex_;
  LoaderStats stats_;
  // The node-local caches the producer's plans read through and their counters at the latest
  // reset_stats() (stats() reports the difference). Guarded by stats_mutex_.
  std::vector<const Store*> caches_;
  std::vector<CacheStats> cache_baselines_;
};

}  // namespace chute
