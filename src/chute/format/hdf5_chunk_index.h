#pragma once
// Reading a chunked dataset's chunk index once, at open, into a table of the chunks stored.

#include <string>
#include <vector>

#include "chute/format/hdf5.h"
#include "chute/format/hdf5_chunked_source.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/store/single_file_store.h"

namespace chute::hdf5 {

/// One entry per chunk stored (with its row-major position in `grid`); entry.chain holds the
/// chunk's filter mask (the caller turns masks into chain indices). Throws kInvalidMetadata
/// naming `where` when the grid has more than 2^63 chunks. With kNative the index is read by
/// the native reader (`file`, which holds `object`); with kBTree by chute's older reader of the
/// version 1 B-tree through `store` (the same file), where the dataset has one. Chunks the index
/// holds past the current extent (a dataset shrunk) are left out.
std::vector<Hdf5ChunkEntry> read_chunk_index(
    const h5native::File& file, const h5native::Object& object, const h5native::Dataset& dataset,
    const std::vector<int64_t>& grid, const std::vector<int64_t>& chunk_shape,
    const SingleFileStore& store, Hdf5IndexMethod method, const std::string& where);

}  // namespace chute::hdf5
