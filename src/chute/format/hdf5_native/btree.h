#pragma once
// Walks of the two B-tree kinds, each node read once: version 1 (old-style group symbol tables
// and chunk indexes) and version 2 (dense links and attributes, chunk indexes). A node reached
// twice, a level that does not decrease or a record count past the header's is kCorruptData.

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "chute/format/hdf5_native/bytes.h"

namespace chute::h5native {

/// One symbol table entry of an old-style group.
struct SymbolEntry {
  uint64_t name = 0;             // offset of the link name in the group's local heap
  uint64_t header = kUndefined;  // object header
  uint32_t cache_type = 0;       // 2: a soft link whose value is at soft_link_value
  uint32_t soft_link_value = 0;  // offset in the local heap
};

/// Calls `entry` for each symbol of the group whose v1 B-tree is at `address`.
void walk_group_btree(const FileReader& file, uint64_t address, const std::string& where,
                      const std::function<void(const SymbolEntry&)>& entry);

/// Calls `chunk(key bytes, chunk address)` for each leaf entry of a v1 chunk B-tree over
/// `dims` key dimensions (rank + 1); key bytes: size (4), filter mask (4), dims offsets (8 each).
void walk_chunk_btree(const FileReader& file, uint64_t address, size_t dims,
                      const std::string& where,
                      const std::function<void(Cursor& key, uint64_t child)>& chunk);

/// Calls `record(bytes)` for every record of the v2 B-tree whose header is at `address`,
/// checking that its type is `type`.
void walk_btree2(const FileReader& file, uint64_t address, int type, const std::string& where,
                 const std::function<void(Cursor& record)>& record);

}  // namespace chute::h5native
