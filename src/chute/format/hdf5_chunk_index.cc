// Two ways to read the index: chute's native reader (hdf5_native/chunk_index.cc) walks every
// index kind in one linear pass and is the default; the older reader of the version 1 B-tree
// (hdf5_btree.cc) stays for comparison (CHUTE_HDF5_INDEX=btree), the native reader reading the
// other kinds.

#include "chute/format/hdf5_chunk_index.h"

#include <fmt/ranges.h>

#include "chute/array/chunk_grid.h"
#include "chute/format/hdf5_btree.h"
#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

std::vector<Hdf5ChunkEntry> native_entries(const h5native::File& file,
                                           const h5native::Object& object,
                                           const h5native::Dataset& dataset,
                                           const std::vector<int64_t>& grid,
                                           const std::vector<int64_t>& chunk_shape,
                                           const std::string& where) {
  const h5native::ChunkIndex index = file.chunk_index(object, dataset);
  const size_t rank = grid.size();
  if (index.rank != rank) {
    fail(ErrorCode::kCorruptData, "{}: a chunk index of rank {} for a dataset of rank {}", where,
         index.rank, rank);
  }
  for (size_t d = 0; d < rank; ++d) {
    if (dataset.layout.chunk.size() <= d ||
        dataset.layout.chunk[d] != static_cast<uint64_t>(chunk_shape[d])) {
      fail(ErrorCode::kCorruptData, "{}: the chunk index disagrees on the chunk shape", where);
    }
  }
  std::vector<Hdf5ChunkEntry> entries;
  entries.reserve(index.count());
  for (size_t i = 0; i < index.count(); ++i) {
    int64_t position = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      const uint64_t c = index.coords[i * rank + d];
      inside = inside && c < static_cast<uint64_t>(grid[d]);
      position = position * grid[d] + static_cast<int64_t>(c);
    }
    if (!inside) continue;  // past the current extent: not part of the dataset now
    const h5native::ChunkRecord& r = index.records[i];
    const uint64_t offset = file.reader().absolute(r.address, r.size, "chunk");
    entries.push_back({position, offset, r.size, r.filter_mask});
  }
  return entries;
}

}  // namespace

std::vector<Hdf5ChunkEntry> read_chunk_index(
    const h5native::File& file, const h5native::Object& object, const h5native::Dataset& dataset,
    const std::vector<int64_t>& grid, const std::vector<int64_t>& chunk_shape,
    const SingleFileStore& store, Hdf5IndexMethod method, const std::string& where) {
  const std::optional<int64_t> count = chunk_count(grid);
  if (!count) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: a grid of [{}] chunks has more than 2^63 chunks and cannot be indexed", where,
         fmt::join(grid, ", "));
  }
  std::vector<Hdf5ChunkEntry> entries;
  if (*count == 0) return entries;
  // The older reader takes addresses as file positions: files without a user block only.
  if (method == Hdf5IndexMethod::kBTree && file.superblock().position == 0 &&
      read_btree_chunk_index(store, object.header.address,
                             {file.reader().offset_size(), file.reader().length_size()}, grid,
                             chunk_shape, entries, where)) {
    return entries;
  }
  return native_entries(file, object, dataset, grid, chunk_shape, where);
}

}  // namespace chute::hdf5
