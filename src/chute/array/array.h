#pragma once
// The read engine. An opened array is its metadata plus a chunk source (Zarr, sharded Zarr, HDF5,
// .npy: chunk_source.h) that says where each chunk's bytes are and which chain decodes them;
// everything else is format-neutral here. read() fetches any box into a strided destination;
// ReadPlan lets a caller (the batch assembler) gather the chunk work of many boxes of many
// arrays, remove duplicate chunks, and run it all at once on a pool.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chute/array/chunk_source.h"
#include "chute/array/metadata.h"
#include "chute/array/read_scratch.h"
#include "chute/array/strided_copy.h"
#include "chute/array/strided_view.h"
#include "chute/codec/codec_chain.h"
#include "chute/codec/sharding.h"
#include "chute/store/store.h"
#include "chute/util/thread_pool.h"

namespace chute {

class Array;

/// Part of one chunk that lands in one destination: the region [chunk_start, +shape) of the
/// decoded chunk goes to `dst` (already offset to the region's first element).
struct ChunkTarget {
  std::vector<int64_t> chunk_start;
  StridedView dst;
};

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

/// A chunk's stored bytes read ahead of its decode (ReadPlan keeps reads in flight).
struct FetchedChunk {
  ChunkLocation where;  // located on the planning thread
  std::string key;      // where.store's key of the value holding the chunk
  ByteBuffer bytes;     // the stored bytes once the read completed kOk
  ReadOutcome outcome;  // kMissing reads as the fill value, kFailed rethrows on decode
};

/// Reads in flight: 0 asks each plan for its stores' preferred_concurrency().
inline constexpr size_t kAutoIoConcurrency = 0;

class ReadPlan {
 public:
  /// Adds the chunk work of reading box [start, start+dst.shape) of `array` into `dst`.
  /// Chunks already planned for the same array get another target instead of another read.
  void add(const Array& array, std::span<const int64_t> start, const StridedView& dst,
           std::string context = {});
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
  /// The reads in flight the last execute() allowed (1: read by the decoding workers).
  size_t last_io_concurrency() const { return last_io_concurrency_; }
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
  /// `fetched`: use the chunks read ahead (fetched_) of the tasks marked in fetching_.
  void execute_item(const WorkItem& item, ReadScratch& scratch, ReadStats* stats,
                    bool fetched = false);
  void execute_gathered(const WorkItem& item, ReadScratch& scratch, ReadStats* stats, bool fetched);
  /// The window of reads in flight `io_concurrency` resolves to for this plan.
  size_t resolve_io_concurrency(size_t io_concurrency) const;
  void execute_in_flight(ThreadPool* pool, std::vector<ReadScratch>& scratch, ReadStats* stats,
                         size_t window);
  struct InFlight;
  struct Batch;
  /// Submits the reads of the next items while fewer than the window are in flight, grouped
  /// per store: one submit() call per store and round.
  void pump(const std::shared_ptr<InFlight>& state);
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
  // Reads in flight (execute_in_flight), per task; kept across clear() to reuse the buffers.
  std::vector<FetchedChunk> fetched_;
  std::vector<uint8_t> fetching_;
  std::vector<ReadRequest> requests_;
  size_t last_io_concurrency_ = 1;
};

class Array {
 public:
  /// `prefix` is the array's folder inside `store` ("" when the store root is the array);
  /// `name` is how messages refer to it (usually its path).
  Array(StorePtr store, std::string prefix, ArrayMetadata metadata, std::string name);
  /// An array whose chunks come from `source` (HDF5, .npy); metadata.chunk_shape must equal
  /// source->chunk_shape() and metadata.codecs describe its chain.
  Array(ChunkSourcePtr source, ArrayMetadata metadata, std::string name);

  const ArrayMetadata& metadata() const { return metadata_; }
  const std::string& name() const { return name_; }
  /// Where the stored values are (for an HDF5 dataset or .npy file: a store of that one file).
  const Store& store() const { return source_->store(); }
  /// The chain of the stored chunks (of a Zarr array: its whole chain, sharding included).
  const CodecChain& codecs() const { return codecs_ ? *codecs_ : source_->chain(); }
  const ChunkSource& source() const { return *source_; }
  /// The grid chunks are read in: the chunk shape, or the inner chunk shape when sharded.
  const std::vector<int64_t>& read_chunk_shape() const { return read_chunk_shape_; }
  /// Chunks per dimension of the read grid.
  const std::vector<int64_t>& read_grid_shape() const { return read_grid_shape_; }
  size_t rank() const { return metadata_.shape.size(); }

  /// Throws kInvalidArgument when start or shape is not of the array's rank, kOutOfRange when
  /// the box [start, start + shape) leaves the array; both name the array.
  void check_box(std::span<const int64_t> start, std::span<const int64_t> shape) const;

  /// Reads box [start, start + dst.shape) into dst. Throws kOutOfRange when the box leaves the
  /// array, kInvalidArgument when dst's rank differs. Runs on `pool` when given.
  void read(std::span<const int64_t> start, const StridedView& dst, ThreadPool* pool = nullptr,
            ReadStats* stats = nullptr) const;

  /// Key (relative to the store) of the stored object holding the chunk at read-grid coords:
  /// the chunk's key, or its shard's key when sharded.
  std::string storage_key(std::span<const int64_t> chunk_coords) const;

  /// Bytes of one decoded chunk of the read grid.
  int64_t read_chunk_nbytes() const;

  /// Reads, decodes and scatters one chunk task. Used by ReadPlan::execute.
  void execute(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats) const;
  /// execute() with the chunk's stored bytes already read (`fetched`, its bytes taken; null:
  /// read them here).
  void execute(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats,
               FetchedChunk* fetched) const;
  /// Whether the task's chunk should be read ahead whole (a chunk this task decodes whole, or
  /// whose chain cannot decode a part): then locates it into `out` (key, location; counts the
  /// chunk) and returns true. False for mapped sources and for chunks read in part (blosc
  /// blocks of a crop), which their worker reads. `gathered`: the task is decoded by load().
  bool plan_fetch(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats,
                  FetchedChunk& out) const;
  /// execute() for a plan of one chunk: the workers of `pool` decode parts of it side by side
  /// where the chain allows (blosc blocks), e.g. one sample of whole-sample chunks. `scratch`
  /// is the plan's per-worker scratch (resized to pool.size()); the calling thread reads.
  void execute_parallel(const ChunkTask& task, ThreadPool& pool, std::vector<ReadScratch>& scratch,
                        ReadStats* stats) const;
  /// Reads and decodes the task's chunk into `decoded` (read_chunk_nbytes() bytes, C order),
  /// or fills it with the fill value when the chunk is missing; places nothing. Only the bytes
  /// its targets read are guaranteed (see CodecChain::decode_part). Errors name the array, the
  /// chunk key and the task's context.
  void load(const ChunkTask& task, ReadScratch& scratch, std::byte* decoded, ReadStats* stats,
            FetchedChunk* fetched = nullptr) const;

 private:
  /// Checks shape, chunk shape and fill value (zeros when empty); throws naming the array.
  void validate_metadata();
  /// Sets up the read grid from the source, checking it against the metadata.
  void init_read_grid();
  /// Says where the task's chunk is (its key in scratch.key), counting the time as read time.
  ChunkLocation locate_timed(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats) const;
  /// Reads the located chunk's stored bytes whole into scratch.encoded, counting them in stats;
  /// false when they are not there (a Zarr chunk that was never written).
  bool read_located(const ChunkLocation& where, ReadScratch& scratch, ReadStats* stats) const;
  /// Finds where the task's chunk is decoded (straight into a target that is the whole chunk,
  /// else staging), calls fetch(decoded, begin, end) -> found, then places or fills targets.
  template <typename Fetch>
  void execute_with(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats,
                    Fetch&& fetch) const;
  /// Decodes bytes [begin, end) of scratch[0].encoded into `decoded` on the pool's workers, in
  /// parts split at the chain's part_alignment (whole when it has none).
  void decode_split(const CodecChain& chain, std::vector<ReadScratch>& scratch, std::byte* decoded,
                    size_t begin, size_t end, ThreadPool& pool, ReadStats* stats) const;
  /// Reads the task's chunk and decodes at least bytes [begin, end) of it into `decoded`
  /// (read_chunk_nbytes() bytes); false when the chunk is missing.
  bool fetch_and_decode(const ChunkTask& task, ReadScratch& scratch, std::byte* decoded,
                        size_t begin, size_t end, ReadStats* stats) const;
  /// fetch_and_decode for a chunk read ahead: rethrows its read error, false when missing.
  bool decode_fetched(FetchedChunk& fetched, ReadScratch& scratch, std::byte* decoded, size_t begin,
                      size_t end, ReadStats* stats) const;
  /// fetch_and_decode for chains that decode parts: reads only the parts of the stored chunk
  /// that [begin, end) needs (all of it when the stream cannot be split); false when missing.
  bool read_part(const ChunkLocation& where, ReadScratch& scratch, std::byte* decoded, size_t begin,
                 size_t end, ReadStats* stats) const;
  /// Decodes scratch.encoded (one chunk of the read grid) into `decoded`, counting the time:
  /// at least bytes [begin, end) of it, the whole chunk when the chain cannot decode part.
  void decode_timed(const CodecChain& chain, ReadScratch& scratch, std::byte* decoded, size_t begin,
                    size_t end, ReadStats* stats) const;
  /// The bytes [begin, end) of the decoded chunk (C order) that the task's targets read: a box
  /// of a few rows of a large chunk needs only those rows decoded.
  std::pair<size_t, size_t> bytes_read_by(const ChunkTask& task) const;
  void fill_targets(const ChunkTask& task) const;
  /// Mapped sources: copies each target's box straight out of the mapping.
  void copy_mapped(const ChunkTask& task, ReadStats* stats) const;
  /// Mapped sources: the task's chunk into `decoded` (C order, chunk shape; past the array's
  /// end unspecified).
  void load_mapped(const ChunkTask& task, std::byte* decoded, ReadStats* stats) const;
  /// Runs `body`; an error it throws is rethrown naming the array, chunk key and context.
  template <typename Body>
  void with_chunk_context(const ChunkTask& task, ReadScratch& scratch, Body&& body) const;

  ChunkSourcePtr source_;
  ArrayMetadata metadata_;
  std::string name_;
  CodecChainPtr codecs_;                    // a Zarr array's whole chain; null for other sources
  const CodecChain* read_chain_ = nullptr;  // source_->chain()
  std::vector<int64_t> read_chunk_shape_;
  std::vector<int64_t> read_grid_shape_;
};

using ArrayPtr = std::shared_ptr<const Array>;

}  // namespace chute
