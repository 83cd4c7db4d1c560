#pragma once
// The read engine's planner (internal: not installed, see cmake/chute_public_headers.cmake).
// ReadPlan lets a caller (the batch assembler, a Dataset's plan()) gather the chunk work of many
// boxes of many arrays, remove duplicate chunks, and run it all at once on a pool.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/chunk_source.h"
#include "chute/array/element_convert.h"
#include "chute/array/read_scratch.h"
#include "chute/array/stored_bytes_pool.h"
#include "chute/array/strided_copy.h"
#include "chute/array/strided_view.h"
#include "chute/codec/codec_chain.h"
#include "chute/codec/sharding.h"
#include "chute/store/store.h"
#include "chute/util/thread_pool.h"

namespace chute {

/// Part of one chunk that lands in one destination: the region [chunk_start, +shape) of the
/// decoded chunk goes to `dst` (already offset to the region's first element).
/// With `convert`, dst holds convert->decoded elements, converted as they are placed (never
/// decoded into directly); the ElementConvert outlives the plan's execute().
struct ChunkTarget {
  std::vector<int64_t> chunk_start;
  StridedView dst;
  const ElementConvert* convert = nullptr;
  int64_t tag = -1;  // the plan's target tag when it was added (the batch's finishing part)
};

/// Copies the target's region of a decoded chunk (C order, `chunk_shape` elements of
/// `item_size` bytes) into its destination, converting when the target says so.
void place_target(const std::byte* decoded, std::span<const int64_t> chunk_shape,
                  const ChunkTarget& target, int64_t item_size);
/// Fills the target with the stored `fill_value` (converted when the target says so).
void fill_target(const ChunkTarget& target, std::span<const std::byte> fill_value);

/// All targets of one chunk of one array; executing it reads and decodes the chunk once.
struct ChunkTask {
  const Array* array = nullptr;
  std::vector<int64_t> chunk_coords;  // in the array's read grid (inner chunks when sharded)
  std::vector<ChunkTarget> targets;
  std::string context;  // e.g. "sample 17", added to error messages
};

/// Chunks split along the innermost dimension of a box write short runs (5 float32 channels of
/// a channels-last sample: 20 bytes) that each chunk spreads over the whole destination, so a
/// destination cache line is fetched and written back once per chunk. Such neighbours form a
/// gather group: one worker decodes them side by side into staging, then interleaves them
/// into the destination in one front-to-back pass that writes each line once.
inline constexpr int64_t kGatherMaxRunBytes = 256;           // runs shorter than this are gathered
inline constexpr int64_t kGatherMaxStagingBytes = 16 << 20;  // per worker
/// A read of one chunk is decoded in parts on every worker from this many decoded bytes on.
inline constexpr size_t kSplitMinBytes = 256 << 10;

/// Boxes of mapped sources (.npy, contiguous HDF5) are copied straight out of the mapping with
/// their destination's strides (a transform's permuted and reversed ones included): no chunk
/// is staged, so the plan splits a box into pieces of about this many bytes along its
/// outermost axis, whatever the source's virtual read grid, rather than one task per slab of
/// that grid (a plane of a crop each, which left a transform moving the plane axis to the
/// fastest one with nothing to transpose but single elements).
inline constexpr int64_t kMappedPieceBytes = 1 << 20;

/// A chunk's stored bytes read ahead of its decode (ReadPlan keeps reads in flight).
struct FetchedChunk {
  ChunkLocation where;  // located on the planning thread
  std::string key;      // where.store's key of the value holding the chunk
  ByteBuffer bytes;     // the stored bytes once the read completed kOk (from the plan's pool)
  ReadOutcome outcome;  // kMissing reads as the fill value, kFailed rethrows on decode
};

/// Chunks read but not yet decoded, over the plans sharing a budget, as a multiple of its
/// window of reads in flight: a batch read ahead holds at most this many stored chunks (not all
/// of them) while the one before it decodes, so its buffers stay few and warm.
inline constexpr size_t kReadsHeldPerWindow = 4;

/// Reads in flight: 0 asks each plan for its stores' preferred_concurrency().
inline constexpr size_t kAutoIoConcurrency = 0;

class ReadPlan {
  struct InFlight;

 public:
  /// Reads in flight shared by the plans that run at once (a batch decoding while the next
  /// one's reads were started ahead of it): a plan submits an item's reads while they fit in
  /// the window with every read outstanding in all of them (an item larger than the window
  /// goes alone) and no plan started before it has reads left to submit; each completed read
  /// lets the plans submit again. Plans that share a budget resolve to the same window.
  class Budget {
   private:
    friend class ReadPlan;
    /// Room for `reads` more of `plan` in the window and among the chunks held (a plan
    /// started earlier that has reads left to submit goes first).
    bool try_take(const InFlight& plan, size_t reads);
    /// Returns the reads and the plans to pump now (copied: pumped without the lock).
    std::vector<std::shared_ptr<InFlight>> give_back(size_t reads);
    /// Returns `reads` whose chunks were decoded (or dropped); the plans to pump now.
    std::vector<std::shared_ptr<InFlight>> release_held(size_t reads);
    void join(std::shared_ptr<InFlight> plan);
    void leave(const InFlight* plan);

    std::mutex mutex_;
    size_t used_ = 0;
    size_t window_ = 1;  // the window of the first plan that joined an empty budget
    size_t held_ = 0;    // reads submitted whose chunk is not decoded yet
    size_t held_limit_ = kReadsHeldPerWindow;       // window_ * kReadsHeldPerWindow
    std::vector<std::shared_ptr<InFlight>> plans_;  // in the order they started
  };

  ReadPlan() = default;
  ReadPlan(const ReadPlan&) = delete;
  ReadPlan& operator=(const ReadPlan&) = delete;
  /// Waits for the reads a started plan still has in flight.
  ~ReadPlan();

  /// Adds the chunk work of reading box [start, start+dst.shape) of `array` into `dst`.
  /// Chunks already planned for the same array get another target instead of another read.
  /// With `convert` (check_convert()ed; it outlives execute()), dst holds convert->decoded
  /// elements, converted while they are placed.
  void add(const Array& array, std::span<const int64_t> start, const StridedView& dst,
           std::string context = {}, const ElementConvert* convert = nullptr);
  /// Targets added from now on carry `tag` (ChunkTarget::tag; -1 after clear()).
  void set_target_tag(int64_t tag) { target_tag_ = tag; }
  int64_t target_tag() const { return target_tag_; }
  /// Called on the worker that ran it once every target of a task has its values (decoded,
  /// copied or filled), before execute()/finish() returns; concurrently for different tasks.
  /// An exception it throws fails the plan like a read error. Kept across clear().
  using TaskDone = std::function<void(const ChunkTask&)>;
  void set_task_done(TaskDone done) { task_done_ = std::move(done); }
  /// Where reads in flight take the buffers for stored bytes (taken when a read is submitted,
  /// given back once its chunk is decoded). Plans that run one after another or at once (a
  /// loader's batch slots) share one, so its buffers are reused warm rather than each plan
  /// keeping one per task. Without one a plan makes its own on first use. Kept across clear().
  void set_stored_bytes_pool(std::shared_ptr<StoredBytesPool> pool) {
    stored_pool_ = std::move(pool);
  }
  const std::shared_ptr<StoredBytesPool>& stored_bytes_pool() const { return stored_pool_; }
  /// Runs every task on `pool` (inline when pool is null); scratch must have pool->size()
  /// entries (or 1 without a pool). The first error is rethrown naming array and chunk key.
  void execute(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats = nullptr);
  /// execute() keeping up to `io_concurrency` chunk reads in flight (kAutoIoConcurrency: the
  /// preferred_concurrency() of the plan's store): the chunks are located first, their reads
  /// submitted to the stores as a window, and each is decoded on the pool as its bytes arrive.
  /// 1 (or a store that prefers 1) reads each chunk on the worker that decodes it. Chunks read
  /// in part (blosc blocks of a crop) and mapped sources are read by their workers either way.
  /// The stored bytes of the plan's fetched chunks are held until decoded.
  void execute(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats,
               size_t io_concurrency);
  /// execute() in two steps, so that this plan's reads can be in flight while another plan
  /// decodes: start() locates the chunks read whole (on the calling thread, using scratch[0])
  /// and submits the first window of their reads without waiting for any; finish() decodes on
  /// `pool` as the bytes arrive, keeping the window full, and rethrows the first error. Between
  /// the two the plan must not change, nor its destinations be read. Plans started with one
  /// `budget` share its window (see Budget). A plan that keeps no reads in flight (a window of
  /// 1, one chunk split over the workers) does all its work in finish().
  void start(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats,
             size_t io_concurrency, std::shared_ptr<Budget> budget = nullptr);
  void finish(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats);
  /// Stops submitting a started plan's reads and waits for those in flight (no callback of
  /// this plan runs afterwards); finish() is then not called. No-op when none was started.
  void cancel();
  /// Chunk reads the started (or last finished) plan has submitted so far.
  size_t reads_submitted() const;
  /// The reads in flight the last execute() allowed (1: read by the decoding workers).
  size_t last_io_concurrency() const { return last_io_concurrency_; }
  /// Cancels a started plan, then forgets every task.
  void clear();
  size_t task_count() const { return tasks_.size(); }
  const std::vector<ChunkTask>& tasks() const { return tasks_; }
  /// Units of parallel work: a single chunk task, or a gather group of consecutive tasks.
  size_t work_item_count() const { return items_.size(); }
  /// Tasks executed in gather groups (of two or more).
  size_t gathered_task_count() const;

 private:
  struct WorkItem {
    size_t first = 0;  // tasks_[first, first + count)
    size_t count = 1;  // > 1: a gather group, each task's targets[0] interleaved
  };
  /// Adds the tasks of one row of chunks along the innermost dimension (task indices in
  /// `row`, `fresh` when each was created by this row) as work items.
  void add_row(const Array& array, std::span<const size_t> row, bool fresh);
  /// add() for a mapped source: tasks of one target each, whose chunk_coords are zero and
  /// whose chunk_start is the piece's start in the array (see kMappedPieceBytes).
  /// add() for an array made of others (array_join.h): adds the boxes of its members.
  void add_joined(const ArrayJoin& join, std::span<const int64_t> start, const StridedView& dst,
                  std::string context, const ElementConvert* convert);
  void add_mapped(const Array& array, std::span<const int64_t> start, const StridedView& dst,
                  std::string context, const ElementConvert* convert);
  /// A mapped box right after the last task's box along one axis, with a destination that
  /// continues that axis, extends that task (returns true): consecutive channels of a stacked
  /// array into consecutive planes (FourCastNet's fields[t, c]) are one copy, not one a channel.
  bool extend_mapped(const Array& array, std::span<const int64_t> start, const StridedView& dst,
                     const std::string& context, const ElementConvert* convert);
  /// `fetched`: use the chunks read ahead (fetched_) of the tasks marked in fetching_.
  void execute_item(const WorkItem& item, ReadScratch& scratch, ReadStats* stats,
                    bool fetched = false);
  void execute_gathered(const WorkItem& item, ReadScratch& scratch, ReadStats* stats, bool fetched);
  /// The window of reads in flight `io_concurrency` resolves to for this plan.
  size_t resolve_io_concurrency(size_t io_concurrency) const;
  /// start()'s work for a window of reads in flight; finish_in_flight() is finish()'s.
  void start_in_flight(std::vector<ReadScratch>& scratch, ReadStats* stats, size_t window,
                       std::shared_ptr<Budget> budget);
  void finish_in_flight(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats);
  /// Marks the running plan done (pumps no more), waits until none of its reads or callbacks
  /// runs, and leaves its budget.
  void settle();
  struct Batch;
  /// Submits the reads of the next items while fewer than the window are in flight, grouped
  /// per store: one submit() call per store and round.
  void pump(const std::shared_ptr<InFlight>& state);
  /// Pumps the plans sharing `plan`'s budget that started after it (it submitted its last).
  static void pump_later_plans(const InFlight& plan);
  FetchedChunk* fetched_of(size_t task) { return fetching_[task] ? &fetched_[task] : nullptr; }

  struct ChunkId {
    const Array* array;
    int64_t chunk;  // row-major position in the array's read grid
    bool operator==(const ChunkId&) const = default;
  };
  struct ChunkIdHash {
    size_t operator()(const ChunkId& id) const;
  };

  std::vector<ChunkTask> tasks_;
  std::vector<WorkItem> items_;
  std::vector<size_t> row_;                                 // reused by add()
  std::unordered_map<ChunkId, size_t, ChunkIdHash> index_;  // (array, chunk) -> task
  /// Gives the stored-byte buffers of tasks [first, end) back to stored_pool_.
  void give_back_fetched(size_t first, size_t end);

  // Reads in flight (execute_in_flight), per task; their buffers are stored_pool_'s.
  std::vector<FetchedChunk> fetched_;
  std::vector<uint8_t> fetching_;
  std::vector<ReadRequest> requests_;
  size_t last_io_concurrency_ = 1;
  // Between start() and finish(): how finish() runs, and the reads in flight's state.
  enum class Mode { kIdle, kWorkers, kSplit, kInFlight };
  Mode mode_ = Mode::kIdle;
  std::shared_ptr<InFlight> running_;
  int64_t target_tag_ = -1;
  TaskDone task_done_;
  std::shared_ptr<StoredBytesPool> stored_pool_;
};

}  // namespace chute
