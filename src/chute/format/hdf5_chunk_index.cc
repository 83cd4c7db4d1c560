// Three ways to read the index (docs/design/reading.md): libhdf5 1.10.8 has no H5Dchunk_iter, and
// both H5Dget_chunk_info(i) and H5Dget_chunk_info_by_coord walk the index from its start on
// every call, so both are quadratic in the chunk count (32k chunks: about 40 s either way).
// chute's native reader (hdf5_native/chunk_index.cc) walks every index kind in one linear pass
// and is the default; the older reader of the version 1 B-tree (hdf5_btree.cc) stays for
// comparison, falling back to lookups by coordinate for the other kinds.

#include "chute/format/hdf5_chunk_index.h"

#include <fmt/ranges.h>

#include "chute/array/chunk_grid.h"
#include "chute/format/hdf5_btree.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

void by_coordinate(hid_t dataset, const std::vector<int64_t>& grid,
                   const std::vector<int64_t>& chunk_shape, int64_t count,
                   std::vector<Hdf5ChunkEntry>& entries, const std::string& where) {
  const size_t n = grid.size();
  std::vector<hsize_t> offset(n, 0);
  std::vector<int64_t> coords(n, 0);
  for (int64_t i = 0; i < count; ++i) {
    for (size_t d = 0; d < n; ++d) offset[d] = static_cast<hsize_t>(coords[d] * chunk_shape[d]);
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    check_status(H5Dget_chunk_info_by_coord(dataset, offset.data(), &mask, &address, &size),
                 static_cast<int>(ErrorCode::kCorruptData),
                 fmt::format("{}: reading the chunk index (chunk {})", where, i));
    if (address != HADDR_UNDEF) entries.push_back({i, address, size, mask});
    for (size_t d = n; d-- > 0;) {
      if (++coords[d] < grid[d]) break;
      coords[d] = 0;
    }
  }
}

hsize_t stored_count(hid_t dataset, const std::string& where) {
  Handle space = check(H5Dget_space(dataset), static_cast<int>(ErrorCode::kCorruptData), where);
  hsize_t stored = 0;
  check_status(H5Dget_num_chunks(dataset, space.get(), &stored),
               static_cast<int>(ErrorCode::kCorruptData), where + ": counting chunks");
  return stored;
}

void by_index(hid_t dataset, const std::vector<int64_t>& grid,
              const std::vector<int64_t>& chunk_shape, std::vector<Hdf5ChunkEntry>& entries,
              const std::string& where) {
  Handle space = check(H5Dget_space(dataset), static_cast<int>(ErrorCode::kCorruptData), where);
  const hsize_t stored = stored_count(dataset, where);
  const size_t n = grid.size();
  std::vector<hsize_t> offset(n);
  std::vector<int64_t> coords(n);
  for (hsize_t i = 0; i < stored; ++i) {
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    check_status(H5Dget_chunk_info(dataset, space.get(), i, offset.data(), &mask, &address, &size),
                 static_cast<int>(ErrorCode::kCorruptData),
                 fmt::format("{}: reading the chunk index (entry {})", where, i));
    for (size_t d = 0; d < n; ++d) {
      coords[d] = static_cast<int64_t>(offset[d] / static_cast<hsize_t>(chunk_shape[d]));
      if (offset[d] / static_cast<hsize_t>(chunk_shape[d]) >= static_cast<hsize_t>(grid[d])) {
        fail(ErrorCode::kCorruptData, "{}: chunk index entry {} lies outside the dataset", where,
             i);
      }
    }
    if (address != HADDR_UNDEF) {
      entries.push_back({linear_chunk_index(coords, grid), address, size, mask});
    }
  }
}

/// The version 1 B-tree read by chute (hdf5_btree.cc); false when the dataset has another index.
bool by_btree(hid_t dataset, const SingleFileStore& file, const std::vector<int64_t>& grid,
              const std::vector<int64_t>& chunk_shape, std::vector<Hdf5ChunkEntry>& entries,
              const std::string& where) {
  H5O_info_t info;
  if (H5Oget_info2(dataset, &info, H5O_INFO_BASIC) < 0) {
    take_error_stack();
    return false;
  }
  Handle file_id(H5Iget_file_id(dataset));
  Handle fcpl(file_id.valid() ? H5Fget_create_plist(file_id.get()) : H5I_INVALID_HID);
  size_t offset_size = 0, length_size = 0;
  if (!fcpl.valid() || H5Pget_sizes(fcpl.get(), &offset_size, &length_size) < 0) {
    take_error_stack();
    return false;
  }
  // Addresses in the object header are relative to the base address (the superblock's), which
  // is 0 unless the file has a user block.
  hsize_t user_block = 0;
  if (H5Pget_userblock(fcpl.get(), &user_block) < 0 || user_block != 0) {
    take_error_stack();
    return false;
  }
  return read_btree_chunk_index(file, info.addr,
                                {static_cast<int>(offset_size), static_cast<int>(length_size)},
                                grid, chunk_shape, entries, where);
}

void by_native(const OpenFile& opened, hid_t dataset, const std::string& path,
               const std::vector<int64_t>& grid, const std::vector<int64_t>& chunk_shape,
               std::vector<Hdf5ChunkEntry>& entries, const std::string& where) {
  H5O_info_t info;
  if (H5Oget_info2(dataset, &info, H5O_INFO_BASIC) < 0) {
    fail(ErrorCode::kCorruptData, "{}: no object header address: {}", where, take_error_stack());
  }
  try {
    const h5native::File& file = native_file(opened);
    const h5native::Object object = file.object(info.addr, path);
    entries = native_chunk_entries(file, object, file.dataset(object), grid, chunk_shape, where);
  } catch (const Error& e) {
    throw native_error(e, opened.path, path, where);
  }
}

}  // namespace

std::vector<Hdf5ChunkEntry> native_chunk_entries(const h5native::File& file,
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

Error native_error(const Error& error, const std::string& file, const std::string& path,
                   const std::string& where) {
  std::string message = error.what();
  if (message.rfind(where, 0) == 0) return error;
  // The native reader names the file and the object ("<file>: <path>: ..."): said once, as
  // every other HDF5 error says it.
  for (const std::string& prefix : {file + ": " + path + ": ", file + ": "}) {
    if (message.rfind(prefix, 0) == 0) {
      message.erase(0, prefix.size());
      break;
    }
  }
  return Error(error.code(), where + ": " + message);
}

std::vector<Hdf5ChunkEntry> read_chunk_index(const OpenFile& opened, hid_t dataset,
                                             const std::string& path,
                                             const std::vector<int64_t>& grid,
                                             const std::vector<int64_t>& chunk_shape,
                                             Hdf5IndexMethod method, const std::string& where) {
  auto lock = lock_library();
  const std::optional<int64_t> count = chunk_count(grid);
  if (!count) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: a grid of [{}] chunks has more than 2^63 chunks and cannot be indexed", where,
         fmt::join(grid, ", "));
  }
  std::vector<Hdf5ChunkEntry> entries;
  if (*count == 0) return entries;
  if (method == Hdf5IndexMethod::kNative) {
    by_native(opened, dataset, path, grid, chunk_shape, entries, where);
    return entries;
  }
  if (method == Hdf5IndexMethod::kBTree &&
      by_btree(dataset, *opened.store, grid, chunk_shape, entries, where)) {
    return entries;
  }
  if (method == Hdf5IndexMethod::kByCoordinate) {
    by_coordinate(dataset, grid, chunk_shape, *count, entries, where);
    return entries;
  }
  if (method == Hdf5IndexMethod::kByIndex) {
    by_index(dataset, grid, chunk_shape, entries, where);
    return entries;
  }
  // Another index kind: a lookup by coordinate is cheap there, a lookup by entry number walks
  // the index, so coordinates win for a dense grid (grid <= stored^2) and entry numbers for a
  // sparse one, where a walk over the grid would take time for chunks that do not exist.
  const hsize_t stored = stored_count(dataset, where);
  if (stored == 0) return entries;
  if (static_cast<uint64_t>(*count) / stored > stored) {
    by_index(dataset, grid, chunk_shape, entries, where);
  } else {
    by_coordinate(dataset, grid, chunk_shape, *count, entries, where);
  }
  return entries;
}

}  // namespace chute::hdf5
