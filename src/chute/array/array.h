#pragma once
// The read engine. An opened array is its metadata plus a chunk source (Zarr, sharded Zarr, HDF5,
// .npy: chunk_source.h) that says where each chunk's bytes are and which chain decodes them;
// everything else is format-neutral here. read() fetches any box into a strided destination.
// ReadPlan (read_plan.h) gathers the chunk work of many boxes of many arrays and runs it at once.
//
// Public header: the engine's types named below (chunk sources, codec chains, plans, per-worker
// scratch, the thread pool) are internal and only declared here; their headers are not
// installed, so the members that take them are for chute's own read engine.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chute/array/metadata.h"
#include "chute/array/strided_view.h"
#include "chute/store/store.h"

namespace chute {

class ChunkSource;
class CodecChain;
class ThreadPool;
struct ChunkLocation;
struct ChunkTask;
struct ArrayJoin;
struct ElementConvert;
struct FetchedChunk;
struct ReadScratch;
struct ReadStats;
using ChunkSourcePtr = std::shared_ptr<const ChunkSource>;
using CodecChainPtr = std::shared_ptr<const CodecChain>;

class Array {
 public:
  /// `prefix` is the array's folder inside `store` ("" when the store root is the array);
  /// `name` is how messages refer to it (usually its path).
  Array(StorePtr store, std::string prefix, ArrayMetadata metadata, std::string name);
  /// An array whose chunks come from `source` (HDF5, .npy); metadata.chunk_shape must equal
  /// source->chunk_shape() and metadata.codecs describe its chain.
  Array(ChunkSourcePtr source, ArrayMetadata metadata, std::string name);
  /// An array made of other arrays (array_join.h: members joined along axis 0, or one index
  /// of another array's axis); reads of it become reads of its members in the same plan.
  /// metadata.shape must be the joined shape.
  Array(std::shared_ptr<const ArrayJoin> join, ArrayMetadata metadata, std::string name);
  /// Non-null for an array made of other arrays.
  const ArrayJoin* join() const { return join_.get(); }

  const ArrayMetadata& metadata() const { return metadata_; }
  const std::string& name() const { return name_; }
  /// Where the stored values are (for an HDF5 dataset or .npy file: a store of that one file).
  const Store& store() const;
  /// The chain of the stored chunks (of a Zarr array: its whole chain, sharding included).
  const CodecChain& codecs() const;
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

  /// read() converting each element as it is placed (element_convert.h: CF decoding to
  /// float32/float64): dst holds convert.decoded elements. Throws kInvalidArgument when the
  /// conversion is not one convert_run() does or convert.stored is not the array's type.
  void read_converted(std::span<const int64_t> start, const StridedView& dst,
                      const ElementConvert& convert, ThreadPool* pool = nullptr,
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
  /// chunk key and the task's context. Not for mapped sources: their tasks (ReadPlan) are
  /// boxes copied straight to their targets by execute(), never a staged chunk.
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
  /// Mapped sources: copies each target's box straight out of the mapping (box start:
  /// chunk_coords · read chunk shape + chunk_start), with the destination's strides.
  /// Converted targets are copied into scratch.staging first, then converted from there.
  void copy_mapped(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats) const;
  /// Runs `body`; an error it throws is rethrown naming the array, chunk key and context.
  template <typename Body>
  void with_chunk_context(const ChunkTask& task, ReadScratch& scratch, Body&& body) const;

  ChunkSourcePtr source_;
  std::shared_ptr<const ArrayJoin> join_;
  ArrayMetadata metadata_;
  std::string name_;
  CodecChainPtr codecs_;                    // a Zarr array's whole chain; null for other sources
  const CodecChain* read_chain_ = nullptr;  // source_->chain()
  std::vector<int64_t> read_chunk_shape_;
  std::vector<int64_t> read_grid_shape_;
};

using ArrayPtr = std::shared_ptr<const Array>;

}  // namespace chute
