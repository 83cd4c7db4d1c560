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

/// Fills `entries` (one per chunk of `grid`, row-major, chunks of `chunk_shape` elements; the
/// chain field set to the chunk's filter mask) from the B-tree of the dataset whose object
/// header is at `header_address`. Returns false, having changed nothing, when the dataset's
/// index is not a version 1 B-tree under a version 3 layout message; throws kCorruptData naming
/// `where` for a malformed header or tree.
bool read_btree_chunk_index(const SingleFileStore& file, uint64_t header_address,
                            FileLayoutSizes sizes, const std::vector<int64_t>& grid,
                            const std::vector<int64_t>& chunk_shape,
                            std::vector<Hdf5ChunkEntry>& entries, const std::string& where);

}  // namespace chute::hdf5
