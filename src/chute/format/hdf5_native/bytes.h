#pragma once
// Checked reading of HDF5 file structures: every address, size and count read from the file is
// checked against the file before bytes are read or memory is allocated for them, and running
// past the end of a structure throws kCorruptData naming the file, object and structure.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chute/store/store.h"
#include "chute/util/fork_safe_mutex.h"

namespace chute::h5native {

/// An address field of all ones: "no such structure".
constexpr uint64_t kUndefined = ~uint64_t{0};

/// Bob Jenkins' lookup3 hashlittle(), the checksum of HDF5's version 2 structures.
uint32_t lookup3(std::span<const std::byte> bytes, uint32_t initval = 0);

[[noreturn]] void corrupt(std::string_view where, std::string_view message);

/// One HDF5 file read through a store: addresses are relative to the superblock's base address.
/// Small reads are served from a cache of aligned 64 KiB pages: a chunk index's nodes and blocks
/// lie close together, and one read per page instead of one per node is what keeps opening fast.
class FileReader {
 public:
  FileReader(StorePtr store, std::string key, std::string name);

  const std::string& name() const { return name_; }
  const Store& store() const { return *store_; }
  const StorePtr& store_ptr() const { return store_; }
  const std::string& key() const { return key_; }
  uint64_t size() const { return size_; }
  uint64_t base() const { return base_; }
  void set_base(uint64_t base) { base_ = base; }
  int offset_size() const { return offset_size_; }
  int length_size() const { return length_size_; }
  void set_sizes(int offset_size, int length_size);

  /// Whether [address, address + n) lies inside the file.
  bool contains(uint64_t address, uint64_t n) const;
  /// The absolute file position of `address` (checked like read()).
  uint64_t absolute(uint64_t address, uint64_t n, std::string_view what) const;
  /// Reads `n` bytes of `what` at `address`; throws kCorruptData when they lie outside the file.
  std::vector<std::byte> read(uint64_t address, uint64_t n, std::string_view what) const;
  /// Reads up to `n` bytes (fewer where the file ends first; at least one).
  std::vector<std::byte> read_upto(uint64_t address, uint64_t n, std::string_view what) const;

 private:
  static constexpr uint64_t kPage = 64 << 10;
  static constexpr size_t kMaxPages = 256;
  std::shared_ptr<const std::vector<std::byte>> page(uint64_t index) const;

  StorePtr store_;
  std::string key_;
  std::string name_;
  mutable detail::ForkSafeMutex cache_mutex_;
  mutable std::unordered_map<uint64_t, std::shared_ptr<const std::vector<std::byte>>> pages_;
  mutable std::deque<uint64_t> page_order_;
  uint64_t size_ = 0;
  uint64_t base_ = 0;
  int offset_size_ = 8;
  int length_size_ = 8;
};

/// Sequential little-endian decoding of one structure's bytes.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, std::string where, int offset_size = 8,
         int length_size = 8)
      : bytes_(bytes),
        where_(std::move(where)),
        offset_size_(offset_size),
        length_size_(length_size) {}
  Cursor(std::span<const std::byte> bytes, std::string where, const FileReader& file)
      : Cursor(bytes, std::move(where), file.offset_size(), file.length_size()) {}

  size_t pos() const { return pos_; }
  size_t size() const { return bytes_.size(); }
  size_t remaining() const { return bytes_.size() - pos_; }
  const std::string& where() const { return where_; }
  std::span<const std::byte> bytes() const { return bytes_; }

  void need(size_t n) const;
  void seek(size_t pos);
  void skip(size_t n) {
    need(n);
    pos_ += n;
  }
  uint64_t uint(size_t n);
  uint64_t u8() { return uint(1); }
  uint64_t u16() { return uint(2); }
  uint64_t u32() { return uint(4); }
  uint64_t u64() { return uint(8); }
  /// An address field (kUndefined when all ones).
  uint64_t offset();
  /// A length field; all ones reads as kUndefined.
  uint64_t length();
  std::span<const std::byte> take(size_t n);
  std::string text(size_t n);
  /// Consumes a 4-byte signature, failing unless it is `magic`.
  void expect(const char* magic);
  /// Checks that the lookup3 checksum of bytes [begin, pos) equals the 4 bytes at pos; consumes
  /// them.
  void checksum(size_t begin = 0);
  [[noreturn]] void fail(std::string_view message) const;
  int offset_size() const { return offset_size_; }
  int length_size() const { return length_size_; }

 private:
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
  std::string where_;
  int offset_size_;
  int length_size_;
};

/// floor(log2(v)) for v > 0; 0 for 0.
int log2_floor(uint64_t v);
/// Bytes needed to hold values up to `v` as HDF5 encodes counts: floor(log2(v)) / 8 + 1.
int limit_enc_size(uint64_t v);

}  // namespace chute::h5native
