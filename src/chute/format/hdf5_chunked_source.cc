#include "chute/format/hdf5_chunked_source.h"

#include <fmt/ranges.h>

#include "chute/array/chunk_grid.h"
#include "chute/util/error.h"

namespace chute {

Hdf5ChunkedSource::Hdf5ChunkedSource(std::shared_ptr<const SingleFileStore> file,
                                     std::vector<int64_t> chunk_shape,
                                     std::vector<int64_t> grid_shape,
                                     std::vector<CodecChainPtr> chains,
                                     std::vector<Hdf5ChunkEntry> entries, const std::string& name)
    : file_(std::move(file)),
      chunk_shape_(std::move(chunk_shape)),
      grid_shape_(std::move(grid_shape)),
      chains_(std::move(chains)),
      entries_(std::move(entries)) {
  int64_t count = 1;
  for (int64_t n : grid_shape_) count *= n;
  if (chains_.empty() || static_cast<int64_t>(entries_.size()) != count) {
    fail(ErrorCode::kInternal, "'{}': a chunk table of {} entries for a grid of {} chunks", name,
         entries_.size(), count);
  }
  const uint64_t file_size = file_->file_size();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Hdf5ChunkEntry& e = entries_[i];
    if (e.offset == Hdf5ChunkEntry::kMissing) continue;
    if (e.offset > file_size || file_size - e.offset < e.nbytes || e.chain >= chains_.size()) {
      fail(ErrorCode::kCorruptData,
           "'{}': chunk {} ({} bytes at byte {}) lies past the end of the file ({} bytes): the "
           "file is truncated",
           name, i, e.nbytes, e.offset, file_size);
    }
  }
}

const Hdf5ChunkEntry& Hdf5ChunkedSource::entry(std::span<const int64_t> coords) const {
  return entries_[static_cast<size_t>(linear_chunk_index(coords, grid_shape_))];
}

ChunkLocation Hdf5ChunkedSource::locate(std::span<const int64_t> coords, ReadScratch& scratch,
                                        ReadStats* stats) const {
  scratch.key.clear();
  for (size_t d = 0; d < coords.size(); ++d) {
    if (d) scratch.key += '/';
    scratch.key += std::to_string(coords[d]);
  }
  const Hdf5ChunkEntry& e = entry(coords);
  if (e.offset == Hdf5ChunkEntry::kMissing) return {};
  return {.found = true,
          .store = file_.get(),
          .offset = e.offset,
          .nbytes = e.nbytes,
          .chain = chains_[e.chain].get()};
}

std::string Hdf5ChunkedSource::describe_chunk(std::span<const int64_t> coords) const {
  const Hdf5ChunkEntry& e = entry(coords);
  if (e.offset == Hdf5ChunkEntry::kMissing) return " (not stored)";
  return fmt::format(" ({} bytes at byte {} of '{}')", e.nbytes, e.offset, file_->path());
}

std::optional<uint64_t> Hdf5ChunkedSource::stored_nbytes(std::span<const int64_t> coords) const {
  const Hdf5ChunkEntry& e = entry(coords);
  if (e.offset == Hdf5ChunkEntry::kMissing) return std::nullopt;
  return e.nbytes;
}

size_t Hdf5ChunkedSource::stored_chunks() const {
  size_t n = 0;
  for (const auto& e : entries_) n += e.offset != Hdf5ChunkEntry::kMissing;
  return n;
}

}  // namespace chute
