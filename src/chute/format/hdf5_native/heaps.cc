#include "chute/format/hdf5_native/heaps.h"

#include <fmt/format.h>

#include <cstring>

#include "chute/util/error.h"

namespace chute::h5native {

LocalHeap::LocalHeap(const FileReader& file, uint64_t address, const std::string& where)
    : where_(fmt::format("{}: local heap at byte {}", where, address)) {
  const uint64_t header =
      8 + 2 * static_cast<uint64_t>(file.length_size()) + static_cast<uint64_t>(file.offset_size());
  auto bytes = file.read(address, header, where_);
  Cursor in(bytes, where_, file);
  in.expect("HEAP");
  if (in.u8() != 0) in.fail("local heap version");
  in.skip(3);
  const uint64_t size = in.length();
  in.length();  // free list
  const uint64_t data = in.offset();
  data_ = file.read(data, size, where_ + " data segment");
}

std::string LocalHeap::string_at(uint64_t offset) const {
  if (offset >= data_.size()) {
    corrupt(where_, fmt::format("name offset {} past its {} bytes", offset, data_.size()));
  }
  const auto* begin = reinterpret_cast<const char*>(data_.data()) + offset;
  const auto* end = static_cast<const char*>(std::memchr(begin, 0, data_.size() - offset));
  if (!end) corrupt(where_, fmt::format("unterminated name at offset {}", offset));
  return std::string(begin, end);
}

std::span<const std::byte> GlobalHeap::object(uint64_t collection, uint32_t index,
                                              const std::string& where) {
  auto it = collections_.find(collection);
  if (it == collections_.end()) {
    const std::string what =
        fmt::format("{}: global heap collection at byte {}", where, collection);
    const uint64_t header = 8 + static_cast<uint64_t>(file_.length_size());
    auto head = file_.read(collection, header, what);
    Cursor h(head, what, file_);
    h.expect("GCOL");
    if (h.u8() != 1) h.fail("global heap version");
    h.skip(3);
    const uint64_t size = h.length();
    if (size < header) h.fail(fmt::format("collection size {}", size));
    Collection c;
    c.bytes = file_.read(collection, size, what);
    Cursor in(c.bytes, what, file_);
    in.seek(static_cast<size_t>(header));
    const size_t object_header = 8 + static_cast<size_t>(file_.length_size());
    while (in.remaining() >= object_header) {
      const auto id = static_cast<uint32_t>(in.u16());
      in.skip(6);
      const uint64_t n = in.length();
      if (id == 0) break;  // free space to the end
      if (n > in.remaining()) in.fail(fmt::format("object {} of {} bytes", id, n));
      c.objects[id] = {in.pos(), static_cast<size_t>(n)};
      in.skip(std::min<size_t>((static_cast<size_t>(n) + 7) & ~size_t{7}, in.remaining()));
    }
    it = collections_.emplace(collection, std::move(c)).first;
  }
  const auto found = it->second.objects.find(index);
  if (found == it->second.objects.end()) {
    corrupt(where, fmt::format("no object {} in the global heap collection at byte {}", index,
                               collection));
  }
  return std::span<const std::byte>(it->second.bytes)
      .subspan(found->second.first, found->second.second);
}

FractalHeap::FractalHeap(const FileReader& file, uint64_t address, std::string where)
    : file_(file), where_(fmt::format("{}: fractal heap at byte {}", where, address)) {
  const uint64_t o = static_cast<uint64_t>(file.offset_size());
  const uint64_t l = static_cast<uint64_t>(file.length_size());
  const uint64_t fixed = 4 + 1 + 2 + 2 + 1 + 4 + l + o + l + o + 8 * l + 2 + l + l + 2 + 2 + o + 2;
  auto head = file.read_upto(address, fixed + 512, where_);
  Cursor in(head, where_, file);
  in.expect("FRHP");
  if (in.u8() != 0) in.fail("fractal heap version");
  id_length_ = static_cast<size_t>(in.u16());
  const auto filter_length = static_cast<size_t>(in.u16());
  const auto flags = in.u8();
  checksummed_blocks_ = flags & 2;
  max_managed_ = in.u32();
  in.length();                          // next huge ID
  in.offset();                          // huge object B-tree
  in.length();                          // free space
  in.offset();                          // free space manager
  in.skip(8 * static_cast<size_t>(l));  // managed/allocated space, iterator, counts
  width_ = static_cast<int>(in.u16());
  start_block_ = in.length();
  max_direct_ = in.length();
  max_heap_bits_ = static_cast<int>(in.u16());
  in.u16();  // starting rows of the root indirect block
  root_ = in.offset();
  root_rows_ = static_cast<int>(in.u16());
  if (filter_length > 0) {
    filtered_ = true;
    in.length();
    in.u32();
    in.skip(filter_length);
  }
  in.checksum(0);
  if (width_ == 0 || width_ > 65536 || (width_ & (width_ - 1)) != 0) {
    in.fail(fmt::format("table width {}", width_));
  }
  if (start_block_ == 0 || (start_block_ & (start_block_ - 1)) != 0 || max_direct_ < start_block_ ||
      (max_direct_ & (max_direct_ - 1)) != 0 || max_direct_ > (uint64_t{1} << 40)) {
    in.fail(fmt::format("block sizes {} to {}", start_block_, max_direct_));
  }
  if (max_heap_bits_ == 0 || max_heap_bits_ > 64) in.fail("maximum heap size");
  if (id_length_ == 0 || id_length_ > 64) in.fail(fmt::format("heap ID length {}", id_length_));
  offset_bytes_ = (max_heap_bits_ + 7) / 8;
  length_bytes_ = std::min((log2_floor(max_direct_) + 7) / 8, limit_enc_size(max_managed_));
  max_direct_rows_ = log2_floor(max_direct_) - log2_floor(start_block_) + 2;
  if (root_rows_ > 64) in.fail(fmt::format("{} rows in the root indirect block", root_rows_));
}

uint64_t FractalHeap::row_size(int row) const {
  return row < 2 ? start_block_ : start_block_ << (row - 1);
}

const FractalHeap::Indirect& FractalHeap::indirect(uint64_t address, int rows,
                                                   uint64_t block_offset) {
  auto it = indirect_.find(address);
  if (it != indirect_.end()) return it->second;
  const std::string what = fmt::format("{}: indirect block at byte {}", where_, address);
  const int direct_rows = std::min(rows, max_direct_rows_);
  const auto entries = static_cast<uint64_t>(rows) * static_cast<uint64_t>(width_);
  const auto o = static_cast<uint64_t>(file_.offset_size());
  const uint64_t direct_entry =
      o + (filtered_ ? static_cast<uint64_t>(file_.length_size()) + 4 : 0);
  const uint64_t size = 5 + o + static_cast<uint64_t>(offset_bytes_) +
                        static_cast<uint64_t>(direct_rows) * width_ * direct_entry +
                        static_cast<uint64_t>(rows - direct_rows) * width_ * o + 4;
  auto bytes = file_.read(address, size, what);
  Cursor in(bytes, what, file_);
  in.expect("FHIB");
  if (in.u8() != 0) in.fail("indirect block version");
  in.offset();
  const uint64_t stored_offset = in.uint(static_cast<size_t>(offset_bytes_));
  if (stored_offset != block_offset) {
    in.fail(fmt::format("block offset {}, expected {}", stored_offset, block_offset));
  }
  Indirect block;
  block.block_offset = block_offset;
  block.rows = rows;
  block.children.reserve(static_cast<size_t>(entries));
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < width_; ++c) {
      block.children.push_back(in.offset());
      if (r < direct_rows && filtered_) in.skip(static_cast<size_t>(file_.length_size()) + 4);
    }
  }
  in.checksum(0);
  return indirect_.emplace(address, std::move(block)).first->second;
}

std::span<const std::byte> FractalHeap::direct(uint64_t address, uint64_t size,
                                               uint64_t block_offset) {
  auto it = direct_.find(address);
  if (it == direct_.end()) {
    if (filtered_) fail(ErrorCode::kUnsupported, "{}: filtered fractal heap blocks", where_);
    const std::string what = fmt::format("{}: direct block at byte {}", where_, address);
    auto bytes = file_.read(address, size, what);
    Cursor in(bytes, what, file_);
    in.expect("FHDB");
    if (in.u8() != 0) in.fail("direct block version");
    in.offset();
    const uint64_t stored_offset = in.uint(static_cast<size_t>(offset_bytes_));
    if (stored_offset != block_offset) {
      in.fail(fmt::format("block offset {}, expected {}", stored_offset, block_offset));
    }
    if (checksummed_blocks_) {
      const size_t at = in.pos();
      const auto stored = static_cast<uint32_t>(in.u32());
      std::vector<std::byte> zeroed = bytes;
      std::memset(zeroed.data() + at, 0, 4);
      if (lookup3(zeroed) != stored) in.fail("checksum mismatch");
    }
    it = direct_.emplace(address, std::move(bytes)).first;
  }
  return it->second;
}

std::vector<std::byte> FractalHeap::object(std::span<const std::byte> id) {
  Cursor in(id, where_ + ": heap ID", file_);
  const auto first = in.u8();
  if ((first >> 6) != 0) in.fail(fmt::format("heap ID version {}", first >> 6));
  const auto type = (first >> 4) & 3;
  if (type == 2) {  // tiny: the object is in the ID
    const size_t n = (first & 0x0F) + 1;
    auto data = in.take(n);
    return {data.begin(), data.end()};
  }
  if (type != 0) {
    fail(ErrorCode::kUnsupported, "{}: huge objects (stored outside the heap's blocks)", where_);
  }
  const uint64_t offset = in.uint(static_cast<size_t>(offset_bytes_));
  const uint64_t length = in.uint(static_cast<size_t>(length_bytes_));
  if (root_ == kUndefined) in.fail("an object in an empty heap");
  uint64_t address = root_;
  uint64_t block_offset = 0;
  int rows = root_rows_;
  uint64_t block_size = start_block_;
  for (int depth = 0; rows > 0; ++depth) {
    if (depth > 64) in.fail("indirect blocks nested too deep");
    const Indirect& block = indirect(address, rows, block_offset);
    uint64_t pos = block.block_offset;
    bool found = false;
    for (int r = 0; r < rows && !found; ++r) {
      const uint64_t size = row_size(r);
      const uint64_t span = size * static_cast<uint64_t>(width_);
      if (offset >= pos + span) {
        pos += span;
        continue;
      }
      if (offset < pos) break;
      const uint64_t col = (offset - pos) / size;
      const uint64_t child = block.children[static_cast<size_t>(r) * width_ + col];
      if (child == kUndefined) in.fail(fmt::format("offset {} in an unallocated block", offset));
      block_offset = pos + col * size;
      address = child;
      block_size = size;
      if (r < max_direct_rows_) {
        rows = 0;
      } else {
        rows = log2_floor(size) - log2_floor(start_block_ * static_cast<uint64_t>(width_)) + 1;
      }
      found = true;
    }
    if (!found) in.fail(fmt::format("offset {} outside the heap", offset));
  }
  auto block = direct(address, block_size, block_offset);
  const uint64_t at = offset - block_offset;
  if (at > block.size() || length > block.size() - at) {
    in.fail(fmt::format("object of {} bytes at offset {} overruns its block", length, offset));
  }
  auto data = block.subspan(static_cast<size_t>(at), static_cast<size_t>(length));
  return {data.begin(), data.end()};
}

}  // namespace chute::h5native
