#pragma once
// A chunked dataset's whole chunk index, read in one pass over its structure (whatever its
// kind: v1 B-tree, single chunk, implicit, fixed array, extensible array, v2 B-tree) into a
// list of the chunks that are stored. Chunks never written are absent.

#include <cstdint>
#include <string>
#include <vector>

#include "chute/format/hdf5_native/bytes.h"
#include "chute/format/hdf5_native/messages.h"

namespace chute::h5native {

struct ChunkRecord {
  uint64_t address = kUndefined;  // relative to the file's base address
  uint64_t size = 0;              // stored (filtered) bytes
  uint32_t filter_mask = 0;       // bit i set: filter i was skipped
};

struct ChunkIndex {
  size_t rank = 0;
  std::vector<uint64_t> coords;  // count() * rank chunk coordinates (in chunks, not elements)
  std::vector<ChunkRecord> records;
  size_t count() const { return records.size(); }
};

/// Reads the index of a chunked dataset of dataspace `space` and layout `layout`. Every chunk
/// lies inside the file and inside the grid of the maximum dimensions; a chunk listed twice is
/// kCorruptData.
ChunkIndex read_chunk_index(const FileReader& file, const Layout& layout, const Dataspace& space,
                            const std::string& where);

}  // namespace chute::h5native
