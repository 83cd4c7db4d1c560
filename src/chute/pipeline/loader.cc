#include "chute/pipeline/loader.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "chute/device/cuda_driver.h"
#include "chute/pipeline/batch_assembler.h"
#include "chute/pipeline/buffer_pool.h"
#include "chute/pipeline/prefetch_queue.h"
#include "chute/util/error.h"
#include "chute/util/memory_limit.h"
#include "chute/util/option_check.h"

namespace chute {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr size_t kMaxOccupancySamples = size_t{1} << 16;
constexpr size_t kMaxPrefetch = 4096;
constexpr size_t kMaxIoConcurrency = 65536;

}  // namespace

const std::vector<OptionField<LoaderOptions>>& LoaderOptions::fields() {
  using O = LoaderOptions;
  constexpr long double kInt64Max = static_cast<long double>(INT64_MAX);
  static const std::vector<OptionField<O>> table = {
      {"batch_size", &O::batch_size, "samples per batch, per rank", {.low = 1, .high = kInt64Max}},
      {"shuffle",
       &O::shuffle,
       "shuffle the samples of every epoch (Python also takes \"chunks\": shuffle stored chunks, "
       "then samples within `shuffle_window` of them)",
       {.python_type = "bool | Literal[\"chunks\"]"}},
      {"seed",
       &O::seed,
       "seed of the shuffle; batches are a pure function of (seed, epoch, rank, world_size, batch)",
       {.low = 0,
        .high = static_cast<long double>(UINT64_MAX),
        .none = "a seed drawn from the OS, reported by state_dict()"}},
      {"drop_last", &O::drop_last,
       "drop the incomplete last batch; else it is padded by wrapping around (`batch.padding`)"},
      {"threads",
       &O::threads,
       "reader/decoder threads",
       {.low = 1, .none = "one per CPU this process may run on", .default_none = true}},
      {"prefetch",
       &O::prefetch,
       "batches assembled ahead of the consumer",
       {.low = 1, .high = static_cast<long double>(kMaxPrefetch)}},
      {"io_concurrency",
       &O::io_concurrency,
       "chunk reads kept in flight while the threads decode",
       {.low = 1,
        .high = static_cast<long double>(kMaxIoConcurrency),
        .none = "the store's preference, 32 for local files",
        .default_none = true}},
      {"read_ahead", &O::read_ahead,
       "plan the next batch and submit its chunk reads before this one decodes"},
      {"rank",
       &O::rank,
       "this process's rank",
       {.low = 0,
        .high = kInt64Max,
        .none =
            "from the launcher (chute.distributed: mpi4py, torchrun, Open MPI, PMI, Slurm), else 0",
        .default_none = true}},
      {"world_size",
       &O::world_size,
       "number of ranks sharing each epoch",
       {.low = 1, .high = kInt64Max, .none = "from the launcher, else 1", .default_none = true}},
      {"pad_to_batch", &O::pad_to_batch,
       "allow batch_size x world_size above the sample count (the one batch wraps around)"},
      {"timeout",
       &O::timeout_s,
       "seconds to wait for a batch before raising ReadTimeoutError and cancelling the epoch",
       {.low = 1e-3L, .high = 1e9L, .none = "wait forever", .default_none = true}},
      {"shuffle_block",
       &O::shuffle_block,
       "samples per stored chunk for the chunk-aware shuffle (shuffle=\"chunks\")",
       {.low = 1, .high = kInt64Max, .none = "the dataset's chunk size", .default_none = true}},
      {"shuffle_window",
       &O::shuffle_window,
       "chunk-aware shuffle: chunks whose samples are shuffled together",
       {.low = 1, .high = kInt64Max}},
      {"indices",
       &O::indices,
       "the sample numbers an epoch draws from (a subset, a stride, an order; shuffle=False "
       "keeps it)",
       {.low = 0,
        .high = kInt64Max,
        .non_empty = true,
        .none = "every sample",
        .default_none = true}},
      {"pin_memory", &O::pin_memory,
       "page-locked (CUDA) batch buffers: a framework's non_blocking copy to the GPU is one DMA "
       "from them (an error without a CUDA driver and GPU)"},
      {"device",
       &O::device,
       "copy each batch to this GPU (\"cuda\", \"cuda:N\", a torch.device or a JAX GPU device) "
       "on chute's own stream as soon as it is assembled; `prefetch` then counts device batches",
       {.none = "batches stay in host memory", .default_none = true, .python_type = "str | Any"}},
  };
  return table;
}

void validate(const LoaderOptions& o) {
  constexpr std::string_view kOwner = "loader";
  check_fields(kOwner, o);
  detail::check_option_range<size_t>(
      kOwner, "threads", o.threads, 0, max_reader_threads(),
      fmt::format(": more than this machine can run (16 per hardware thread, {} here); "
                  "threads=None uses one per hardware thread",
                  default_thread_count()));
  detail::check_option_range<int64_t>(kOwner, "rank", o.rank, 0, o.world_size - 1,
                                      fmt::format(" (world_size = {})", o.world_size));
}

namespace {

// The samples an epoch draws from: the dataset's, or options.indices.
int64_t sample_count(const Dataset& dataset, const LoaderOptions& o) {
  return o.indices.empty() ? dataset.num_samples() : static_cast<int64_t>(o.indices.size());
}

// Every option checked before anything is allocated or started, each error naming the option,
// the value and what is allowed.
const DatasetPtr& checked(const DatasetPtr& dataset, const LoaderOptions& o) {
  if (!dataset) fail(ErrorCode::kInvalidArgument, "loader: dataset is null");
  if (dataset->outputs().empty())
    fail(ErrorCode::kInvalidArgument, "loader: dataset has no outputs");
  validate(o);
  for (size_t i = 0; i < o.indices.size(); ++i) {
    detail::check_option_range<int64_t>("loader", fmt::format("indices[{}]", i), o.indices[i], 0,
                                        dataset->num_samples() - 1, " (the dataset's samples)");
  }
  const int64_t samples = sample_count(*dataset, o);
  const auto global = static_cast<unsigned __int128>(o.batch_size) * o.world_size;
  if (global > static_cast<unsigned __int128>(samples)) {
    const std::string what =
        o.world_size == 1
            ? fmt::format("batch_size={} is larger than the dataset's {} samples", o.batch_size,
                          samples)
            : fmt::format("batch_size={} × world_size={} is larger than the dataset's {} samples",
                          o.batch_size, o.world_size, samples);
    if (o.drop_last) {
      fail(ErrorCode::kInvalidArgument, "{}: with drop_last no batch would ever be produced", what);
    }
    if (!o.pad_to_batch) {
      fail(ErrorCode::kInvalidArgument,
           "{}: each rank would get at most {} real samples per batch, the rest padding; use a "
           "batch_size of at most {}, or pad_to_batch=true to pad on purpose",
           what, samples / o.world_size + (samples % o.world_size != 0), samples / o.world_size);
    }
  }
  unsigned __int128 sample_bytes = 0;
  for (const OutputSpec& spec : dataset->outputs()) sample_bytes += spec.sample_nbytes();
  const unsigned __int128 buffers = static_cast<unsigned __int128>(o.prefetch) + 2 + o.read_ahead;
  const unsigned __int128 needed = sample_bytes * o.batch_size * buffers;
  const MemoryLimit limit = memory_limit();
  const uint64_t memory = limit.bytes;
  if (needed > memory) {
    fail(ErrorCode::kInvalidArgument,
         "batch_size={} with prefetch={} needs {} batch buffers of {} bytes, more than the {} "
         "bytes of memory this process may use ({})",
         o.batch_size, o.prefetch, static_cast<uint64_t>(buffers),
         sample_bytes * o.batch_size > UINT64_MAX
             ? std::string("more than 2^64")
             : std::to_string(static_cast<uint64_t>(sample_bytes * o.batch_size)),
         memory, limit.source);
  }
  // The shuffle keeps one epoch's permutation (8 bytes a sample): 2^40 crops per epoch would
  // otherwise fail at the first batch with a bare allocation error.
  const auto permutation = static_cast<unsigned __int128>(samples) * sizeof(int64_t);
  if (o.shuffle && permutation > memory) {
    fail(ErrorCode::kInvalidArgument,
         "shuffle = true over the dataset's {} samples needs a permutation of 8 bytes a sample, "
         "more than the {} bytes of memory this process may use ({}): use fewer samples per "
         "epoch or shuffle = false",
         samples, memory, limit.source);
  }
  return dataset;
}

// FNV-1a, enough to tell datasets apart in a saved state.
class Fnv1a {
 public:
  void add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash_ = (hash_ ^ bytes[i]) * 0x100000001b3ULL;
  }
  void add(int64_t value) { add(&value, sizeof value); }
  void add(const std::string& text) {
    add(static_cast<int64_t>(text.size()));
    add(text.data(), text.size());
  }
  uint64_t value() const { return hash_ == 0 ? 1 : hash_; }  // 0 means "not recorded"

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

uint64_t dataset_fingerprint(const Dataset& dataset) {
  Fnv1a hash;
  hash.add(dataset.num_samples());
  for (const OutputSpec& spec : dataset.outputs()) {
    hash.add(spec.name);
    hash.add(spec.dtype.name());
    hash.add(static_cast<int64_t>(spec.sample_shape.size()));
    for (int64_t extent : spec.sample_shape) hash.add(extent);
  }
  return hash.value();
}

Loader::Loader(DatasetPtr dataset, LoaderOptions options)
    : dataset_(checked(dataset, options)),
      options_(options),
      sampler_(sample_count(*dataset_, options), options.batch_size, options.shuffle, options.seed,
               options.drop_last, options.rank, options.world_size),
      pid_(::getpid()),
      dataset_fingerprint_(dataset_fingerprint(*dataset_)) {
  if (!options_.indices.empty()) {  // a state is for these samples, in this order
    Fnv1a hash;
    hash.add(static_cast<int64_t>(dataset_fingerprint_));
    hash.add(options_.indices.data(), options_.indices.size() * sizeof(int64_t));
    dataset_fingerprint_ = hash.value();
  }
  sampler_.set_chunk_shuffle({options_.shuffle_block, options_.shuffle_window});
  assembler_ = std::make_unique<BatchAssembler>(dataset_, options_.batch_size, options_.threads);
  assembler_->set_io_concurrency(options_.io_concurrency);
  std::shared_ptr<BufferAllocator> host_memory;
  if (options_.device_handle) {
    device_ = options_.device_handle;
  } else if (!options_.device.empty()) {
    device_ = open_device(options_.device);
  } else if (options_.pin_memory) {
    cuda::driver("pin_memory=true");  // names the option in the error when there is no GPU
    device_ = open_device("cuda:0");
  }
  const bool delivers = !options_.device.empty() || options_.device_handle != nullptr;
  // Host batches are copied by the consumer, delivered ones only by chute (which waits for it).
  // Delivered batches are always assembled in page-locked memory: a copy from pageable memory
  // is staged by the driver on the calling thread at a fraction of the link's rate, so the
  // producer would assemble and copy in turn (on an H100, 2.7x slower than the host loader).
  if (options_.pin_memory || delivers) {
    host_memory = device_->pinned_memory(/*consumer_copies=*/!delivers);
  }
  // Enough idle buffers for the queue, the batch being assembled and a few held by the consumer.
  pool_ = std::make_unique<BufferPool>(assembler_->layout().total_bytes, options_.prefetch + 8,
                                       host_memory);
  if (delivers) {
    delivery_ = std::make_unique<DeviceDelivery>(device_, assembler_->layout().total_bytes,
                                                 options_.prefetch + 8);
    // The queue's device batches, the consumer's and the one being copied.
    delivery_->reserve(static_cast<size_t>(options_.prefetch) + 2);
  }
  // What a consumer slower than the loader holds in the steady state: the queue, the batch
  // waiting to enter it and the consumer's own. Allocated and faulted in now: growing the pool
  // over the first tens of batches made them slower than the step (bench full mode).
  // The batch read ahead is one more.
  // Delivering, host buffers are held only while assembled and until their copy completes
  // (the queue holds device batches): page-locked memory is not spent on the queue's depth.
  const size_t started = options_.read_ahead ? 2 : 1;
  const size_t host_buffers =
      delivers ? started + DeviceDelivery::kMaxCopiesInFlight + 1
               : static_cast<size_t>(options_.prefetch) + 2 + options_.read_ahead;
  pool_->reserve(host_buffers, &assembler_->workers());
}

Loader::~Loader() {
  if (::getpid() != pid_) {
    // A fork() child: the threads these objects would join do not exist here, and their locks
    // may have been held at the fork. Leave them be (the memory goes with the process).
    if (producer_.joinable()) new std::thread(std::move(producer_));
    (void)assembler_.release();
    (void)delivery_.release();
    (void)pool_.release();
    (void)new DevicePtr(std::move(device_));
    (void)new std::shared_ptr<PrefetchQueue>(std::move(queue_));
    return;
  }
  stop();
}

void Loader::check_process() const {
  if (::getpid() != pid_) {
    fail(ErrorCode::kUnsupported,
         "this Loader was made in process {} and used after fork() in process {}: its threads "
         "do not exist here; make the Loader in the child process (chute.Loader in Python does "
         "this itself)",
         pid_, ::getpid());
  }
}

size_t Loader::threads() const { return assembler_->threads(); }

std::shared_ptr<PrefetchQueue> Loader::current_queue() const {
  std::lock_guard lock(control_mutex_);
  return queue_;
}

void Loader::begin_epoch(int64_t epoch, int64_t start_batch) {
  check_process();
  if (start_batch < 0 || start_batch > batches_per_epoch()) {
    fail(ErrorCode::kInvalidArgument, "start batch {} outside [0, {}]", start_batch,
         batches_per_epoch());
  }
  pending_restore_.reset();
  const bool producer_is_there =
      current_queue() && epoch_done_ && epoch == epoch_ + 1 && start_batch == 0;
  if (!producer_is_there) {
    stop();
    auto queue = std::make_shared<PrefetchQueue>(options_.prefetch);
    std::lock_guard lock(control_mutex_);
    try {
      producer_ = std::thread(&Loader::produce, this, epoch, start_batch, queue);
    } catch (const std::system_error& e) {
      fail(ErrorCode::kIoError,
           "cannot start the loader's producer thread: {} (the OS refused a thread: see ulimit "
           "-u and the address-space limit)",
           e.what());
    }
    queue_ = std::move(queue);
  }
  epoch_ = epoch;
  consumed_ = start_batch;
  waited_ns_ = 0;
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
  std::shared_ptr<PrefetchQueue> queue;
  std::thread producer;
  {
    std::lock_guard lock(control_mutex_);
    queue = std::move(queue_);
    producer = std::move(producer_);
  }
  if (queue) queue->close();
  if (producer.joinable()) producer.join();
  if (delivery_) {
    try {
      delivery_->drain();
    } catch (const Error&) {
      // A lost device: the next batch reports it.
    }
  }
  epoch_done_ = false;
}

bool Loader::wait(std::chrono::nanoseconds max_wait) {
  check_process();
  std::shared_ptr<PrefetchQueue> queue = current_queue();
  if (!queue || epoch_done_) return true;
  const int64_t start = now_ns();
  const bool ready = queue->wait_ready(max_wait);
  const int64_t waited = now_ns() - start;
  if (!ready) waited_ns_ += waited;  // counts against options().timeout_s in next()
  std::lock_guard lock(stats_mutex_);
  stats_.wait_ns += waited;  // the consumer's blocked time, as next() counts it
  return ready;
}

std::optional<Batch> Loader::next() {
  check_process();
  std::shared_ptr<PrefetchQueue> queue = current_queue();
  if (!queue || epoch_done_) return std::nullopt;
  const auto queued = static_cast<int64_t>(queue->size());
  last_queued_ = queued;
  int64_t wait_ns = 0;
  std::optional<Batch> batch;
  try {
    if (options_.timeout_s > 0) {
      // What wait() already spent on this batch counts too.
      const auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::duration<double>(options_.timeout_s)) -
                         std::chrono::nanoseconds(waited_ns_);
      if (!queue->wait_ready(std::max(limit, std::chrono::nanoseconds(0)))) {
        fail(ErrorCode::kTimeout,
             "no batch within timeout={}s (epoch {}, batch {}): a read is stuck or storage is "
             "this slow; the epoch was cancelled",
             options_.timeout_s, epoch_, consumed_);
      }
    }
    batch = queue->pop(&wait_ns);
    waited_ns_ = 0;
  } catch (const Error& error) {
    if (error.code() == ErrorCode::kTimeout) {
      queue->close();  // the producer leaves as soon as its read returns; joined later
    } else {
      stop();
    }
    std::lock_guard lock(stats_mutex_);
    stats_.wait_ns += wait_ns;
    throw;
  } catch (...) {
    stop();
    std::lock_guard lock(stats_mutex_);
    stats_.wait_ns += wait_ns;
    throw;
  }
  if (!batch) {
    // The end of the epoch. The producer goes on with the next one unless production ended.
    if (queue->done()) {
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
  if (occupancy_calls_++ % occupancy_stride_ == 0) {
    if (stats_.occupancy.size() >= kMaxOccupancySamples) {
      // Full: keep every other sample and record half as often from now on.
      size_t kept = 0;
      for (size_t i = 0; i < stats_.occupancy.size(); i += 2) {
        stats_.occupancy[kept++] = stats_.occupancy[i];
      }
      stats_.occupancy.resize(kept);
      occupancy_stride_ *= 2;
    }
    stats_.occupancy.push_back({now - epoch_begin_ns_, queued});
  }
  if (!first_batch_seen_) {
    first_batch_seen_ = true;
    stats_.first_batch_ns = now - epoch_begin_ns_;
  }
  return batch;
}

namespace {

// A batch between the assembler's start() and its place in the queue.
struct Assembly {
  Batch batch;
  std::shared_ptr<std::byte> buffer;
  ReadStats stats;
  int64_t start_ns = 0;  // producer time in start()
};

// The batches started and not queued: on any way out of the producer, their reads in flight
// are stopped and waited for before their buffers go.
class StartedBatches {
 public:
  explicit StartedBatches(BatchAssembler& assembler) : assembler_(assembler) {}
  ~StartedBatches() { assembler_.cancel(); }
  std::deque<std::unique_ptr<Assembly>> batches;

 private:
  BatchAssembler& assembler_;
};

}  // namespace

void Loader::produce(int64_t epoch, int64_t start_batch, std::shared_ptr<PrefetchQueue> queue) {
  const std::vector<OutputSpec>& outputs = dataset_->outputs();
  const BatchLayout& layout = assembler_->layout();
  const int64_t per_epoch = batches_per_epoch();
  const size_t depth = options_.read_ahead ? 2 : 1;  // batches started at once
  try {
    // Epochs back to back: the queue's bound keeps the producer at most `prefetch` batches
    // ahead (and one more started), across the end of an epoch as within one.
    if (start_batch >= per_epoch) {  // resumed at an epoch's end: it is empty
      if (per_epoch == 0) {
        queue->finish();
        return;
      }
      queue->end_epoch();
      ++epoch;
      start_batch = 0;
    }
    int64_t e = epoch;  // the next batch to start
    int64_t b = start_batch;
    StartedBatches started(*assembler_);
    const auto start_next = [&] {
      auto a = std::make_unique<Assembly>();
      const int64_t start = now_ns();
      a->batch.epoch = e;
      a->batch.index = b;
      try {
        sampler_.batch(e, b, a->batch.indices);
        if (!options_.indices.empty()) {
          for (int64_t& i : a->batch.indices) i = options_.indices[static_cast<size_t>(i)];
        }
        a->batch.padding = sampler_.batch_padding(b);
        a->buffer = pool_->acquire();
        assembler_->start(a->batch.indices, a->buffer.get(), &a->stats, options_.seed, e);
      } catch (const Error& error) {  // a batch's planning errors wait for its finish()
        throw error.with_context(fmt::format("epoch {}, batch {} (starting it)", e, b));
      }
      a->start_ns = now_ns() - start;
      started.batches.push_back(std::move(a));
      if (++b == per_epoch) {
        ++e;
        b = 0;
      }
    };
    start_next();
    for (;;) {
      if (queue->closed()) return;
      // The next batch's reads go out before this one decodes.
      if (started.batches.size() < depth) start_next();
      Assembly& a = *started.batches.front();
      Batch& batch = a.batch;
      const int64_t finish_start = now_ns();
      try {
        assembler_->finish();
      } catch (const Error& error) {
        throw error.with_context(fmt::format("epoch {}, batch {}", batch.epoch, batch.index));
      }
      const size_t reads_ahead = depth > 1 ? assembler_->reads_submitted_by_next() : 0;
      batch.arrays.resize(outputs.size());
      for (size_t k = 0; k < outputs.size(); ++k) {
        BatchArray& array = batch.arrays[k];
        array.name = outputs[k].name;
        array.dtype = outputs[k].dtype;
        array.shape.reserve(outputs[k].sample_shape.size() + 1);
        array.shape.push_back(batch.size());
        array.shape.insert(array.shape.end(), outputs[k].sample_shape.begin(),
                           outputs[k].sample_shape.end());
        array.data = a.buffer.get() + layout.offsets[k];
        array.owner = a.buffer;
      }
      // Counted once in the queue, so a batch counted as produced can be taken at once.
      const int64_t produce_ns = a.start_ns + (now_ns() - finish_start);
      const bool ends_epoch = batch.index == per_epoch - 1;
      if (delivery_) {
        try {
          batch = delivery_->deliver(std::move(batch), a.buffer);
        } catch (const Error& error) {
          throw error.with_context(fmt::format("epoch {}, batch {} (copying it to {})", batch.epoch,
                                               batch.index, device_->name()));
        }
      }
      if (!queue->push(std::move(batch))) return;
      add_read_stats(a.stats, produce_ns, assembler_->last_finish_ns(), reads_ahead);
      started.batches.pop_front();
      if (ends_epoch) queue->end_epoch();
    }
  } catch (...) {
    queue->finish(std::current_exception());
  }
}

void Loader::add_read_stats(const ReadStats& stats, int64_t produce_ns, int64_t finish_ns,
                            size_t reads_ahead) {
  std::lock_guard lock(stats_mutex_);
  stats_.batches_read_ahead += reads_ahead > 0;
  stats_.reads_submitted_ahead += static_cast<int64_t>(reads_ahead);
  assembler_->add_caches_to(caches_);
  cache_baselines_.resize(caches_.size());
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
  stats_.io_concurrency = static_cast<int64_t>(assembler_->last_io_concurrency());
}

SamplerState Loader::state() const {
  SamplerState state{options_.seed, 0, 0};
  if (pending_restore_) {
    state = *pending_restore_;
  } else if (epoch_ >= 0) {
    state.epoch = epoch_;
    state.next_batch = consumed_;
  }
  // At an epoch's end the next position is the following epoch's first batch: a resumed
  // `for epoch in range(start, E)` loop must not get an empty epoch.
  if (batches_per_epoch() > 0 && state.next_batch >= batches_per_epoch()) {
    state.epoch += 1;
    state.next_batch = 0;
  }
  state.batch_size = options_.batch_size;
  state.world_size = options_.world_size;
  state.dataset = dataset_fingerprint_;
  return state;
}

void Loader::restore(const SamplerState& state) {
  check_process();
  stop();
  if (state.seed != options_.seed) {
    fail(ErrorCode::kInvalidArgument, "saved state has seed {}, this loader seed {}", state.seed,
         options_.seed);
  }
  if (state.batch_size != 0 && state.batch_size != options_.batch_size) {
    fail(ErrorCode::kInvalidArgument,
         "saved state is for batch_size {}, this loader has batch_size {}: its batch numbers "
         "would point at other samples",
         state.batch_size, options_.batch_size);
  }
  if (state.world_size != 0 && state.world_size != options_.world_size) {
    fail(ErrorCode::kInvalidArgument,
         "saved state is for world_size {}, this loader has world_size {}: its batch numbers "
         "would point at other samples",
         state.world_size, options_.world_size);
  }
  if (state.dataset != 0 && state.dataset != dataset_fingerprint_) {
    fail(ErrorCode::kInvalidArgument,
         "saved state is for another dataset (fingerprint {:016x}, this loader's {:016x}: the "
         "sample count, output names, dtypes or shapes differ)",
         state.dataset, dataset_fingerprint_);
  }
  if (state.next_batch < 0 || state.next_batch > batches_per_epoch()) {
    fail(ErrorCode::kInvalidArgument, "saved state's next batch {} outside [0, {}]",
         state.next_batch, batches_per_epoch());
  }
  SamplerState resume = state;
  if (batches_per_epoch() > 0 && resume.next_batch == batches_per_epoch()) {
    resume.epoch += 1;  // a state saved at an epoch's end (by older code) resumes the next one
    resume.next_batch = 0;
  }
  pending_restore_ = resume;
}

LoaderStats Loader::stats() const {
  std::lock_guard lock(stats_mutex_);
  LoaderStats copy = stats_;
  copy.buffers_allocated = static_cast<int64_t>(pool_->allocations());
  copy.stored_buffers_allocated = static_cast<int64_t>(assembler_->stored_bytes_pool().fresh());
  copy.prefetch = static_cast<int64_t>(options_.prefetch);
  copy.read_ahead = options_.read_ahead ? 1 : 0;
  if (delivery_) copy.delivery = delivery_->stats();
  for (size_t k = 0; k < caches_.size(); ++k) {
    const CacheStats now = *cache_stats_of(*caches_[k]);
    const CacheStats& base = cache_baselines_[k];
    CacheStats& sum = copy.cache ? *copy.cache : copy.cache.emplace();
    sum.hits += now.hits - base.hits;
    sum.misses += now.misses - base.misses;
    sum.bytes_from_cache += now.bytes_from_cache - base.bytes_from_cache;
    sum.bytes_fetched += now.bytes_fetched - base.bytes_fetched;
    sum.bytes_written += now.bytes_written - base.bytes_written;
    sum.evicted += now.evicted - base.evicted;
    sum.discarded += now.discarded - base.discarded;
  }
  return copy;
}

void Loader::reset_stats() {
  std::lock_guard lock(stats_mutex_);
  stats_ = LoaderStats{};
  for (size_t k = 0; k < caches_.size(); ++k) cache_baselines_[k] = *cache_stats_of(*caches_[k]);
  occupancy_stride_ = 1;
  occupancy_calls_ = 0;
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
