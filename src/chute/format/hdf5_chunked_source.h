#pragma once
// The chunk source of a chunked HDF5 dataset: the chunk index is read once when the dataset is
// opened (hdf5_chunk_index.cc) into a sorted table of the stored chunks, so a read finds a chunk
// by binary search and preads its bytes, with no libhdf5 call and no lock. Chunks HDF5 never wrote
// read as the fill value. Chunks whose filter mask skipped a filter get their own chain.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chute/array/chunk_source.h"
#include "chute/store/single_file_store.h"

namespace chute {

struct Hdf5ChunkEntry {
  static constexpr uint64_t kMissing = ~uint64_t{0};
  int64_t chunk = 0;           // row-major position in the chunk grid
  uint64_t offset = kMissing;  // byte address in the file
  uint64_t nbytes = 0;         // stored (filtered) size
  uint32_t chain = 0;          // index into the source's chains (by filter mask)
};

class Hdf5ChunkedSource final : public ChunkSource {
 public:
  /// `entries` holds the chunks the file stores, in any order (never one per chunk of the grid:
  /// memory follows what is stored, so a vast empty grid costs nothing); chains[0] is the chain
  /// of chunks that went through every filter. Throws, naming `where` (file and dataset) and
  /// the chunk: kInvalidMetadata when the grid has more than 2^63 chunks, kCorruptData when an
  /// entry lies outside the grid, twice in the index, or past the end of the file (truncated).
  Hdf5ChunkedSource(std::shared_ptr<const SingleFileStore> file, std::vector<int64_t> chunk_shape,
                    std::vector<int64_t> grid_shape, std::vector<CodecChainPtr> chains,
                    std::vector<Hdf5ChunkEntry> entries, const std::string& where);

  const std::vector<int64_t>& chunk_shape() const override { return chunk_shape_; }
  const CodecChain& chain() const override { return *chains_[0]; }
  ChunkLocation locate(std::span<const int64_t> coords, ReadScratch& scratch,
                       ReadStats* stats) const override;
  std::string describe_chunk(std::span<const int64_t> coords) const override;
  std::string storage_key(std::span<const int64_t> coords) const override { return {}; }
  const Store& store() const override { return *file_; }
  StorePtr store_ptr() const override { return file_; }

  size_t stored_chunks() const { return entries_.size(); }
  /// The stored (filtered) size of the chunk at grid `coords`; nullopt when never written.
  std::optional<uint64_t> stored_nbytes(std::span<const int64_t> coords) const override;

 private:
  /// nullptr when the chunk is not stored.
  const Hdf5ChunkEntry* entry(std::span<const int64_t> coords) const;

  std::shared_ptr<const SingleFileStore> file_;
  std::vector<int64_t> chunk_shape_;
  std::vector<int64_t> grid_shape_;
  std::vector<CodecChainPtr> chains_;
  std::vector<Hdf5ChunkEntry> entries_;  // sorted by chunk
};

}  // namespace chute
