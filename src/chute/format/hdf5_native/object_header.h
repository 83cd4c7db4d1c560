#pragma once
// The superblock and object headers (versions 1 and 2, with their continuation blocks): an
// object is the list of its messages, undecoded.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chute/format/hdf5_native/bytes.h"

namespace chute::h5native {

struct Superblock {
  int version = 0;
  uint64_t position = 0;  // absolute byte of the signature: the base of every address
  int offset_size = 8;
  int length_size = 8;
  uint64_t end_of_file = kUndefined;
  uint64_t root = kUndefined;  // the root group's object header
  // Versions 0 and 1: the root symbol table entry's cached B-tree and local heap.
  uint64_t root_btree = kUndefined;
  uint64_t root_heap = kUndefined;
  uint64_t extension = kUndefined;
};

/// Finds the signature (at byte 0, 512, 1024, 2048, ...), decodes the superblock, verifies its
/// checksum (versions 2 and 3) and sets `file`'s base address and field sizes.
Superblock read_superblock(FileReader& file);

struct Message {
  uint16_t type = 0;
  uint8_t flags = 0;  // bit 1: shared
  std::vector<std::byte> data;
  uint64_t address = kUndefined;  // where `data` lies in the file (relative to the base)
};

struct ObjectHeader {
  int version = 0;
  uint64_t address = kUndefined;
  std::vector<Message> messages;
};

/// Reads the object header at `address` with all its continuation blocks, verifying the
/// checksums of version 2 headers. `where` names the object in errors.
ObjectHeader read_object_header(const FileReader& file, uint64_t address, const std::string& where);

/// Decodes the messages of one header block's bytes (exposed for the fuzzer); continuation
/// messages are returned like the others. `block_address`: where the block's byte 0 lies in the
/// file (kUndefined: messages get no address).
void decode_header_messages(Cursor& block, int version, bool creation_order, size_t end,
                            std::vector<Message>& out, uint64_t block_address = kUndefined);

}  // namespace chute::h5native
