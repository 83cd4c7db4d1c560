#include "chute/format/hdf5_chunked_source.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "chute/array/chunk_grid.h"
#include "chute/util/error.h"

namespace chute {
namespace {

std::vector<int64_t> coords_of(int64_t chunk, const std::vector<int64_t>& grid) {
  std::vector<int64_t> coords(grid.size());
  for (size_t d = grid.size(); d-- > 0;) {
    coords[d] = chunk % grid[d];
    chunk /= grid[d];
  }
  return coords;
}

}  // namespace

Hdf5ChunkedSource::Hdf5ChunkedSource(std::shared_ptr<const SingleFileStore> file,
                                     std::vector<int64_t> chunk_shape,
                                     std::vector<int64_t> grid_shape,
                                     std::vector<CodecChainPtr> chains,
                                     std::vector<Hdf5ChunkEntry> entries, const std::string& where)
    : file_(std::move(file)),
      chunk_shape_(std::move(chunk_shape)),
      grid_shape_(std::move(grid_shape)),
      chains_(std::move(chains)),
      entries_(std::move(entries)) {
  if (chains_.empty()) fail(ErrorCode::kInternal, "{}: a chunk source without a chain", where);
  const std::optional<int64_t> count = chunk_count(grid_shape_);
  if (!count) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: a grid of [{}] chunks has more than 2^63 chunks and cannot be indexed", where,
         fmt::join(grid_shape_, ", "));
  }
  std::sort(entries_.begin(), entries_.end(),
            [](const Hdf5ChunkEntry& a, const Hdf5ChunkEntry& b) { return a.chunk < b.chunk; });
  const uint64_t file_size = file_->file_size();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Hdf5ChunkEntry& e = entries_[i];
    if (e.chunk < 0 || e.chunk >= *count) {
      fail(ErrorCode::kCorruptData, "{}: the chunk index holds chunk {}, outside the grid [{}]",
           where, e.chunk, fmt::join(grid_shape_, ", "));
    }
    if (i > 0 && entries_[i - 1].chunk == e.chunk) {
      const Hdf5ChunkEntry& first = entries_[i - 1];
      fail(ErrorCode::kCorruptData,
           "{}: the chunk index lists chunk [{}] twice ({} bytes at byte {} and {} bytes at byte "
           "{}): the file is corrupt",
           where, fmt::join(coords_of(e.chunk, grid_shape_), ", "), first.nbytes, first.offset,
           e.nbytes, e.offset);
    }
    if (e.offset > file_size || file_size - e.offset < e.nbytes || e.chain >= chains_.size()) {
      fail(ErrorCode::kCorruptData,
           "{}: chunk [{}] ({} bytes at byte {}) lies past the end of the file ({} bytes): the "
           "file is truncated",
           where, fmt::join(coords_of(e.chunk, grid_shape_), ", "), e.nbytes, e.offset, file_size);
    }
  }
}

const Hdf5ChunkEntry* Hdf5ChunkedSource::entry(std::span<const int64_t> coords) const {
  const int64_t chunk = linear_chunk_index(coords, grid_shape_);
  auto it = std::lower_bound(
      entries_.begin(), entries_.end(), chunk,
      [](const Hdf5ChunkEntry& e, int64_t position) { return e.chunk < position; });
  return it != entries_.end() && it->chunk == chunk ? &*it : nullptr;
}

ChunkLocation Hdf5ChunkedSource::locate(std::span<const int64_t> coords, ReadScratch& scratch,
                                        ReadStats* stats) const {
  scratch.key.clear();
  for (size_t d = 0; d < coords.size(); ++d) {
    if (d) scratch.key += '/';
    scratch.key += std::to_string(coords[d]);
  }
  const Hdf5ChunkEntry* e = entry(coords);
  if (e == nullptr) return {};
  return {.found = true,
          .store = file_.get(),
          .offset = e->offset,
          .nbytes = e->nbytes,
          .chain = chains_[e->chain].get()};
}

std::string Hdf5ChunkedSource::describe_chunk(std::span<const int64_t> coords) const {
  const Hdf5ChunkEntry* e = entry(coords);
  if (e == nullptr) return " (not stored)";
  return fmt::format(" ({} bytes at byte {} of '{}')", e->nbytes, e->offset, file_->path());
}

std::optional<uint64_t> Hdf5ChunkedSource::stored_nbytes(std::span<const int64_t> coords) const {
  const Hdf5ChunkEntry* e = entry(coords);
  if (e == nullptr) return std::nullopt;
  return e->nbytes;
}

}  // namespace chute
