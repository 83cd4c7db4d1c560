#pragma once
// The three heaps of an HDF5 file: the local heap (link names of old-style groups), the global
// heap (variable-length data, virtual dataset mappings) and the fractal heap (dense links and
// attributes), each read with its sizes checked against the file.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chute/format/hdf5_native/bytes.h"

namespace chute::h5native {

class LocalHeap {
 public:
  LocalHeap(const FileReader& file, uint64_t address, const std::string& where);
  /// The null-terminated string at `offset` of the data segment.
  std::string string_at(uint64_t offset) const;

 private:
  std::vector<std::byte> data_;
  std::string where_;
};

/// Global heap collections, each read whole on first use.
class GlobalHeap {
 public:
  explicit GlobalHeap(const FileReader& file) : file_(file) {}
  /// The bytes of object `index` in the collection at `collection`.
  std::span<const std::byte> object(uint64_t collection, uint32_t index, const std::string& where);

 private:
  struct Collection {
    std::vector<std::byte> bytes;
    std::map<uint32_t, std::pair<size_t, size_t>> objects;  // index -> (offset, size)
  };
  const FileReader& file_;
  std::map<uint64_t, Collection> collections_;
};

/// A fractal heap: objects found by heap ID through its indirect blocks; blocks are cached.
class FractalHeap {
 public:
  FractalHeap(const FileReader& file, uint64_t address, std::string where);
  std::vector<std::byte> object(std::span<const std::byte> id);
  size_t id_length() const { return id_length_; }

 private:
  struct Indirect {
    uint64_t block_offset = 0;
    int rows = 0;
    std::vector<uint64_t> children;  // rows * width addresses
  };
  const Indirect& indirect(uint64_t address, int rows, uint64_t block_offset);
  std::span<const std::byte> direct(uint64_t address, uint64_t size, uint64_t block_offset);
  uint64_t row_size(int row) const;

  const FileReader& file_;
  std::string where_;
  size_t id_length_ = 0;
  bool filtered_ = false;
  bool checksummed_blocks_ = false;
  uint64_t max_managed_ = 0;
  int width_ = 0;
  uint64_t start_block_ = 0;
  uint64_t max_direct_ = 0;
  int max_heap_bits_ = 0;
  int root_rows_ = 0;
  uint64_t root_ = kUndefined;
  int offset_bytes_ = 0;  // heap offsets (in heap IDs and block headers)
  int length_bytes_ = 0;  // lengths in heap IDs
  int max_direct_rows_ = 0;
  std::map<uint64_t, Indirect> indirect_;
  std::map<uint64_t, std::vector<std::byte>> direct_;
};

}  // namespace chute::h5native
