#pragma once
// Reading a chunked dataset's chunk index once, at open, into a table of the chunks stored.

#include <vector>

#include "chute/format/hdf5.h"
#include "chute/format/hdf5_chunked_source.h"
#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_library.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/util/error.h"

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

/// The chunk table of a dataset read by the native reader: addresses relative to the base
/// address become file positions, coordinates in chunks row-major positions in `grid`; chunks
/// past `grid` (a dataset shrunk) are left out.
std::vector<Hdf5ChunkEntry> native_chunk_entries(const h5native::File& file,
                                                 const h5native::Object& object,
                                                 const h5native::Dataset& dataset,
                                                 const std::vector<int64_t>& grid,
                                                 const std::vector<int64_t>& chunk_shape,
                                                 const std::string& where);

/// The native reader's `error` (which names `file` and the object `path`) as an error naming
/// them as the other HDF5 errors do: "<where>: <message>".
Error native_error(const Error& error, const std::string& file, const std::string& path,
                   const std::string& where);

}  // namespace chute::hdf5
