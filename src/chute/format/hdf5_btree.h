#pragma once
// Reading a chunked dataset's chunk index straight from the file, linearly: libhdf5 1.10.8 only
// offers per-chunk queries that each walk the whole index (quadratic: 40 s for 32k chunks).
// Handles the index h5py and most writers produce by default: an object header of version 1 or
// 2 holding a data layout message of version 3, whose chunks are indexed by a version 1 B-tree.
// Other layouts (version 4: fixed/extensible arrays, B-tree v2) are left to libhdf5.

#include <cstdint>
#include <optional>
#include <vector>

#include "chute/format/hdf5_chunked_source.h"
#include "chute/store/single_file_store.h"

namespace chute::hdf5 {

struct FileLayoutSizes {
  int offset_size = 8;  // bytes of a file address ("size of offsets" in the superblock)
  int length_size = 8;  // bytes of a length
};

/// Sets `entries` to the chunks stored (in tree order, each with its row-major position in
/// `grid`, chunks of `chunk_shape` elements; the chain field set to the chunk's filter mask) in
/// the B-tree of the dataset whose object header is at `header_address`. Returns false, having
/// changed nothing, when the dataset's index is not a version 1 B-tree under a version 3 layout
/// message; throws kCorruptData naming `where` for a malformed header or tree. Memory follows
/// the file's size, never the grid's.
bool read_btree_chunk_index(const SingleFileStore& file, uint64_t header_address,
                            FileLayoutSizes sizes, const std::vector<int64_t>& grid,
                            const std::vector<int64_t>& chunk_shape,
                            std::vector<Hdf5ChunkEntry>& entries, const std::string& where);

/// Checks the data layout message of the object whose header is at `header_address` before
/// libhdf5 decodes it (Debian's 1.10 divides by a zero dimensionality or extent: SIGFPE):
/// a version of 1 or more (libhdf5 refuses newer ones it does not know), a known storage class, and
/// for chunked storage a dimensionality of 2 to 33 matching the dataspace's rank + 1, nonzero
/// extents and a known index type. Throws kCorruptData naming `where`; returns quietly when the
/// header is not one chute reads.
void check_layout_message(const SingleFileStore& file, uint64_t header_address,
                          FileLayoutSizes sizes, const std::string& where);

}  // namespace chute::hdf5
