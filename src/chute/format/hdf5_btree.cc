#include "chute/format/hdf5_btree.h"

#include <cstring>
#include <string>

#include "chute/array/chunk_grid.h"
#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

constexpr uint16_t kLayoutMessage = 0x0008;
constexpr uint16_t kContinuationMessage = 0x0010;
constexpr uint64_t kUndefined = ~uint64_t{0};

/// Little-endian reads from a byte buffer, checking bounds.
class Reader {
 public:
  Reader(std::vector<std::byte> bytes, const std::string& where, const char* what)
      : bytes_(std::move(bytes)), where_(where), what_(what) {}
  uint64_t uint(size_t at, size_t n) const {
    need(at, n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(bytes_[at + i]) << (8 * i);
    return v;
  }
  bool starts_with(size_t at, const char* text) const {
    const size_t n = std::strlen(text);
    return at + n <= bytes_.size() && std::memcmp(bytes_.data() + at, text, n) == 0;
  }
  size_t size() const { return bytes_.size(); }
  void need(size_t at, size_t n) const {
    if (at > bytes_.size() || bytes_.size() - at < n) {
      fail(ErrorCode::kCorruptData, "{}: malformed {} (expected {} bytes at byte {}, it holds {})",
           where_, what_, n, at, bytes_.size());
    }
  }

 private:
  std::vector<std::byte> bytes_;
  const std::string& where_;
  const char* what_;
};

std::vector<std::byte> read_at(const SingleFileStore& file, uint64_t address, uint64_t n,
                               const std::string& where) {
  if (address == kUndefined || address > file.file_size() || file.file_size() - address < n ||
      n > (uint64_t{64} << 20)) {
    fail(ErrorCode::kCorruptData, "{}: {} bytes at byte {} lie outside the file ({} bytes)", where,
         n, address, file.file_size());
  }
  std::vector<std::byte> bytes(static_cast<size_t>(n));
  file.read_range("", address, bytes);
  return bytes;
}

struct Block {
  uint64_t address;
  uint64_t length;
};

/// Finds the layout message's bytes in the object header (following continuation blocks).
std::optional<std::vector<std::byte>> find_layout(const SingleFileStore& file, uint64_t address,
                                                  FileLayoutSizes sizes, const std::string& where) {
  Reader head(read_at(file, address, std::min<uint64_t>(512, file.file_size() - address), where),
              where, "object header");
  std::vector<Block> blocks;
  bool v2 = false;
  bool creation_order = false;
  if (head.starts_with(0, "OHDR")) {
    v2 = true;
    const auto flags = static_cast<unsigned>(head.uint(5, 1));
    size_t at = 6;
    if (flags & 0x20) at += 16;
    if (flags & 0x10) at += 4;
    const size_t width = size_t{1} << (flags & 3);
    const uint64_t chunk0 = head.uint(at, width);
    at += width;
    creation_order = flags & 0x04;
    blocks.push_back({address + at, chunk0});
  } else {
    if (head.uint(0, 1) != 1) return std::nullopt;
    const uint64_t size = head.uint(8, 4);
    blocks.push_back({address + 16, size});
  }
  for (size_t b = 0; b < blocks.size() && b < 1024; ++b) {
    Reader block(read_at(file, blocks[b].address, blocks[b].length, where), where, "object header");
    size_t at = 0;
    if (v2 && b > 0) {
      if (!block.starts_with(0, "OCHK")) {
        fail(ErrorCode::kCorruptData, "{}: object header continuation without OCHK", where);
      }
      at = 4;
    }
    // Continuation blocks of a v2 header end in a checksum; chunk 0's length leaves it out.
    const size_t end = v2 && b > 0 ? block.size() - 4 : block.size();
    const size_t prefix = v2 ? (creation_order ? 6 : 4) : 8;
    while (at + prefix <= end) {
      uint64_t type, size;
      if (v2) {
        type = block.uint(at, 1);
        size = block.uint(at + 1, 2);
      } else {
        type = block.uint(at, 2);
        size = block.uint(at + 2, 2);
      }
      const size_t data = at + prefix;
      block.need(data, size);
      if (type == kLayoutMessage) {
        std::vector<std::byte> message(static_cast<size_t>(size));
        for (size_t i = 0; i < size; ++i) message[i] = std::byte(block.uint(data + i, 1));
        return message;
      }
      if (type == kContinuationMessage) {
        blocks.push_back({block.uint(data, static_cast<size_t>(sizes.offset_size)),
                          block.uint(data + static_cast<size_t>(sizes.offset_size),
                                     static_cast<size_t>(sizes.length_size))});
      }
      at = data + static_cast<size_t>(size);
      if (!v2) at = (at + 7) & ~size_t{7};
    }
  }
  return std::nullopt;
}

struct TreeWalk {
  const SingleFileStore& file;
  FileLayoutSizes sizes;
  size_t dims;  // the layout's dimensionality: rank + 1
  const std::vector<int64_t>& grid;
  const std::vector<int64_t>& chunk_shape;
  std::vector<Hdf5ChunkEntry>& entries;
  const std::string& where;
  size_t visited = 0;

  void node(uint64_t address, int expected_level) {
    if (++visited > entries.size() + 1024) {
      fail(ErrorCode::kCorruptData, "{}: the chunk B-tree has more nodes than chunks", where);
    }
    const auto a = static_cast<size_t>(sizes.offset_size);
    const size_t header = 8 + 2 * a;
    Reader top(read_at(file, address, header, where), where, "chunk B-tree node");
    if (!top.starts_with(0, "TREE") || top.uint(4, 1) != 1) {
      fail(ErrorCode::kCorruptData, "{}: expected a chunk B-tree node at byte {}", where, address);
    }
    const auto level = static_cast<int>(top.uint(5, 1));
    const uint64_t used = top.uint(6, 2);
    if (expected_level >= 0 && level != expected_level) {
      fail(ErrorCode::kCorruptData, "{}: B-tree node at byte {} has level {}, expected {}", where,
           address, level, expected_level);
    }
    const size_t key = 8 + 8 * dims;
    Reader body(read_at(file, address + header, used * (key + a) + key, where), where,
                "chunk B-tree node");
    for (uint64_t i = 0; i < used; ++i) {
      const size_t k = static_cast<size_t>(i) * (key + a);
      const uint64_t child = body.uint(k + key, a);
      if (level > 0) {
        node(child, level - 1);
        continue;
      }
      std::vector<int64_t> coords(dims - 1);
      for (size_t d = 0; d + 1 < dims; ++d) {
        const uint64_t offset = body.uint(k + 8 + 8 * d, 8);
        if (offset % static_cast<uint64_t>(chunk_shape[d]) != 0 ||
            offset / static_cast<uint64_t>(chunk_shape[d]) >= static_cast<uint64_t>(grid[d])) {
          fail(ErrorCode::kCorruptData, "{}: B-tree entry at offset {} outside the chunk grid",
               where, offset);
        }
        coords[d] = static_cast<int64_t>(offset) / chunk_shape[d];
      }
      Hdf5ChunkEntry& e = entries[static_cast<size_t>(linear_chunk_index(coords, grid))];
      e.nbytes = body.uint(k, 4);
      e.chain = static_cast<uint32_t>(body.uint(k + 4, 4));
      e.offset = child;
    }
  }
};

}  // namespace

bool read_btree_chunk_index(const SingleFileStore& file, uint64_t header_address,
                            FileLayoutSizes sizes, const std::vector<int64_t>& grid,
                            const std::vector<int64_t>& chunk_shape,
                            std::vector<Hdf5ChunkEntry>& entries, const std::string& where) {
  if (sizes.offset_size < 2 || sizes.offset_size > 8 || sizes.length_size < 2 ||
      sizes.length_size > 8) {
    return false;
  }
  const auto message = find_layout(file, header_address, sizes, where);
  if (!message) return false;
  Reader layout(*message, where, "data layout message");
  if (layout.uint(0, 1) != 3 || layout.uint(1, 1) != 2) return false;  // v3, chunked
  const auto dims = static_cast<size_t>(layout.uint(2, 1));
  if (dims != grid.size() + 1) {
    fail(ErrorCode::kCorruptData, "{}: a layout of {} dimensions for a dataset of rank {}", where,
         dims, grid.size());
  }
  const uint64_t root = layout.uint(3, static_cast<size_t>(sizes.offset_size));
  for (size_t d = 0; d + 1 < dims; ++d) {
    const uint64_t extent = layout.uint(3 + static_cast<size_t>(sizes.offset_size) + 4 * d, 4);
    if (extent != static_cast<uint64_t>(chunk_shape[d])) {
      fail(ErrorCode::kCorruptData, "{}: layout chunk extent {} differs from libhdf5's {}", where,
           extent, chunk_shape[d]);
    }
  }
  std::vector<Hdf5ChunkEntry> found(entries.size());
  if (root != kUndefined &&
      (sizes.offset_size == 8 || root != (uint64_t{1} << (8 * sizes.offset_size)) - 1)) {
    TreeWalk walk{file, sizes, dims, grid, chunk_shape, found, where};
    walk.node(root, -1);
  }
  entries = std::move(found);
  return true;
}

}  // namespace chute::hdf5
