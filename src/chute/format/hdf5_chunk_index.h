#pragma once
// Reading a chunked dataset's chunk index once, at open, into a table of the chunks stored.

#include <vector>

#include "chute/format/hdf5.h"
#include "chute/format/hdf5_chunked_source.h"
#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_library.h"

namespace chute::hdf5 {

/// One entry per chunk stored (with its row-major position in `grid`); entry.chain holds the
/// chunk's filter mask (the caller turns masks into chain indices). Throws kInvalidMetadata
/// naming `where` when the grid has more than 2^63 chunks. Holds the library lock. With
/// kNative the index is read by `opened`'s native reader (`path` names the dataset); chunks the
/// index holds past the current extent (a dataset shrunk) are left out.
std::vector<Hdf5ChunkEntry> read_chunk_index(const OpenFile& opened, hid_t dataset,
                                             const std::string& path,
                                             const std::vector<int64_t>& grid,
                                             const std::vector<int64_t>& chunk_shape,
                                             Hdf5IndexMethod method, const std::string& where);

}  // namespace chute::hdf5
