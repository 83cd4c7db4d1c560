#pragma once
// Where an array's chunks come from: the one thing that differs between Zarr, sharded Zarr,
// HDF5 and .npy. The read engine (Array, ReadPlan) plans boxes on the source's chunk grid, asks
// the source where each chunk's stored bytes are and which codec chain decodes them, and does
// everything else itself: deduplication, gathering, partial and split decodes, fill of missing
// chunks. A source is immutable after construction and answers from many threads at once.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chute/array/read_scratch.h"
#include "chute/codec/codec_chain.h"
#include "chute/store/store.h"

namespace chute {

class SingleFileStore;

/// Where one chunk's stored bytes are.
struct ChunkLocation {
  bool found = false;  // false: the chunk was never written and reads as the fill value
  /// The stored value holding the chunk (its key is in ReadScratch::key).
  const Store* store = nullptr;
  uint64_t offset = 0;                // where the chunk starts in that value
  std::optional<uint64_t> nbytes;     // its stored size; unknown: the whole value from offset 0
  const CodecChain* chain = nullptr;  // decodes it into one chunk of the source's chunk_shape()
};

/// A source whose stored bytes are the array itself, uncompressed and mapped into memory
/// (a contiguous HDF5 dataset, an .npy file): boxes are copied straight out of the mapping.
struct MappedElements {
  const std::byte* data = nullptr;        // element [0, ..., 0]
  const SingleFileStore* file = nullptr;  // the mapped file: copies go through its read_mapped
  bool fortran_order = false;             // axes stored last-fastest (NumPy order 'F')
  /// Stored in the other byte order: each element's components (item size, or half of it for
  /// complex types) are swapped after the copy.
  size_t swap_unit = 0;  // 0: native order
};

class ChunkSource {
 public:
  virtual ~ChunkSource() = default;

  /// The grid reads are planned on (for sharded Zarr: the inner chunks). Every chunk decodes to
  /// this full shape; edge chunks hold padding past the array's end.
  virtual const std::vector<int64_t>& chunk_shape() const = 0;
  /// The chain that decodes the chunks (a location may name another one).
  virtual const CodecChain& chain() const = 0;

  /// Says where the chunk at `coords` (in the grid of chunk_shape()) is stored, writing its key
  /// into scratch.key first, so that errors name it. May read (a shard's index), counting bytes
  /// in `stats`. Throws for corrupt metadata of the chunk (kCorruptData).
  virtual ChunkLocation locate(std::span<const int64_t> coords, ReadScratch& scratch,
                               ReadStats* stats) const = 0;

  /// Non-null for mapped sources; then locate() is never called.
  virtual const MappedElements* mapped() const { return nullptr; }

  /// Words added to an error about the chunk at `coords` after its key, e.g. " (inner chunk
  /// [1, 2])"; empty by default.
  virtual std::string describe_chunk(std::span<const int64_t> coords) const { return {}; }

  /// The key (in store()) of the stored value holding the chunk at `coords`.
  virtual std::string storage_key(std::span<const int64_t> coords) const = 0;
  /// The stored size of the value holding the chunk at `coords` (its object, or shard), for
  /// reports; nullopt when it was never written. Default: the size of storage_key's value.
  virtual std::optional<uint64_t> stored_nbytes(std::span<const int64_t> coords) const {
    return store().size(storage_key(coords));
  }
  virtual const Store& store() const = 0;
  virtual StorePtr store_ptr() const = 0;
};

using ChunkSourcePtr = std::shared_ptr<const ChunkSource>;

}  // namespace chute
