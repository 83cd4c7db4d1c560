#include "chute/format/hdf5_btree.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "chute/array/chunk_grid.h"
#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

constexpr uint16_t kDataspaceMessage = 0x0001;
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

struct HeaderMessages {
  std::optional<std::vector<std::byte>> layout;
  std::optional<std::vector<std::byte>> dataspace;
};

/// Finds the layout and dataspace messages' bytes in the object header (following continuation
/// blocks).
HeaderMessages find_messages(const SingleFileStore& file, uint64_t address, FileLayoutSizes sizes,
                             const std::string& where) {
  HeaderMessages found;
  if (address == kUndefined || address >= file.file_size()) {
    fail(ErrorCode::kCorruptData, "{}: object header at byte {} lies outside the file ({} bytes)",
         where, address, file.file_size());
  }
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
    if (head.uint(0, 1) != 1) return found;
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
      if ((type == kLayoutMessage && !found.layout) ||
          (type == kDataspaceMessage && !found.dataspace)) {
        std::vector<std::byte> message(static_cast<size_t>(size));
        for (size_t i = 0; i < size; ++i) message[i] = std::byte(block.uint(data + i, 1));
        (type == kLayoutMessage ? found.layout : found.dataspace) = std::move(message);
        if (found.layout && found.dataspace) return found;
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
  return found;
}

struct TreeWalk {
  const SingleFileStore& file;
  FileLayoutSizes sizes;
  size_t dims;  // the layout's dimensionality: rank + 1
  const std::vector<int64_t>& grid;
  const std::vector<int64_t>& chunk_shape;
  std::vector<Hdf5ChunkEntry>& entries;
  const std::string& where;
  uint64_t visited = 0;

  void node(uint64_t address, int expected_level) {
    const auto a = static_cast<size_t>(sizes.offset_size);
    const size_t header = 8 + 2 * a;
    const size_t key = 8 + 8 * dims;
    // Distinct nodes and entries each take bytes of the file: more visits than the file holds
    // nodes means a node is reached twice (a cycle or shared subtrees), whose entries would
    // repeat and grow without bound.
    if (++visited > file.file_size() / header + 1) {
      fail(ErrorCode::kCorruptData,
           "{}: the chunk B-tree reaches more nodes than the file holds (a node is reached twice)",
           where);
    }
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
    Reader body(read_at(file, address + header, used * (key + a) + key, where), where,
                "chunk B-tree node");
    std::vector<int64_t> coords(dims - 1);
    for (uint64_t i = 0; i < used; ++i) {
      const size_t k = static_cast<size_t>(i) * (key + a);
      const uint64_t child = body.uint(k + key, a);
      if (level > 0) {
        node(child, level - 1);
        continue;
      }
      for (size_t d = 0; d + 1 < dims; ++d) {
        const uint64_t offset = body.uint(k + 8 + 8 * d, 8);
        if (offset % static_cast<uint64_t>(chunk_shape[d]) != 0 ||
            offset / static_cast<uint64_t>(chunk_shape[d]) >= static_cast<uint64_t>(grid[d])) {
          fail(ErrorCode::kCorruptData, "{}: B-tree entry at offset {} outside the chunk grid",
               where, offset);
        }
        coords[d] = static_cast<int64_t>(offset / static_cast<uint64_t>(chunk_shape[d]));
      }
      if (entries.size() > file.file_size() / (key + a)) {
        fail(ErrorCode::kCorruptData,
             "{}: the chunk B-tree lists more chunks than the file holds (entries repeat)", where);
      }
      entries.push_back({.chunk = linear_chunk_index(coords, grid),
                         .offset = child,
                         .nbytes = body.uint(k, 4),
                         .chain = static_cast<uint32_t>(body.uint(k + 4, 4))});
    }
  }
};

[[noreturn]] void bad_layout(const std::string& where, const std::string& what) {
  fail(ErrorCode::kCorruptData, "{}: malformed data layout message: {}", where, what);
}

/// The chunk extents of a chunked layout message (rank + 1 values, the last the element size)
/// after checking every field libhdf5 divides by or sizes tables with; nullopt for other
/// storage classes.
std::optional<std::vector<uint64_t>> checked_layout(const std::vector<std::byte>& message,
                                                    FileLayoutSizes sizes,
                                                    const std::string& where) {
  Reader layout(message, where, "data layout message");
  const auto version = layout.uint(0, 1);
  if (version == 0) bad_layout(where, "version 0 (versions start at 1)");
  // A newer version (HDF5 1.14 writes 5) is judged by libhdf5, which refuses versions it does
  // not know with an error of its own.
  if (version > 4) return std::nullopt;
  const auto o = static_cast<size_t>(sizes.offset_size);
  const uint64_t storage_class = version <= 2 ? layout.uint(2, 1) : layout.uint(1, 1);
  if (storage_class > (version == 4 ? 3u : 2u)) {
    bad_layout(where,
               fmt::format("storage class {} in a version {} message", storage_class, version));
  }
  if (storage_class != 2) return std::nullopt;
  uint64_t dims = 0;
  size_t at = 0, width = 4;
  if (version <= 2) {
    dims = layout.uint(1, 1);
    at = 8 + o;
  } else if (version == 3) {
    dims = layout.uint(2, 1);
    at = 3 + o;
  } else {
    if (layout.uint(2, 1) > 3) bad_layout(where, fmt::format("flags {}", layout.uint(2, 1)));
    dims = layout.uint(3, 1);
    width = static_cast<size_t>(layout.uint(4, 1));
    if (width < 1 || width > 8) {
      bad_layout(where, fmt::format("chunk extents of {} bytes (expected 1 to 8)", width));
    }
    at = 5;
  }
  // Chunked storage has one extent per dimension plus the element size: a rank of 1 to 32.
  if (dims < 2 || dims > 33) {
    bad_layout(where,
               fmt::format("dimensionality {} for chunked storage (expected 2 to 33)", dims));
  }
  std::vector<uint64_t> extents(static_cast<size_t>(dims));
  for (size_t d = 0; d < extents.size(); ++d) {
    extents[d] = layout.uint(at + d * width, width);
    if (extents[d] == 0) bad_layout(where, fmt::format("chunk extent {} is 0", d));
  }
  if (version == 4) {
    const uint64_t index = layout.uint(at + extents.size() * width, 1);
    if (index < 1 || index > 5) bad_layout(where, fmt::format("chunk index type {}", index));
  }
  return extents;
}

/// The rank a dataspace message gives; nullopt for a version chute does not read.
std::optional<uint64_t> dataspace_rank(const std::vector<std::byte>& message,
                                       const std::string& where) {
  Reader space(message, where, "dataspace message");
  const auto version = space.uint(0, 1);
  if (version != 1 && version != 2) return std::nullopt;
  return space.uint(1, 1);
}

}  // namespace

void check_layout_message(const SingleFileStore& file, uint64_t header_address,
                          FileLayoutSizes sizes, const std::string& where) {
  if (sizes.offset_size < 2 || sizes.offset_size > 8 || sizes.length_size < 2 ||
      sizes.length_size > 8) {
    return;
  }
  const HeaderMessages found = find_messages(file, header_address, sizes, where);
  if (!found.layout) return;
  const auto extents = checked_layout(*found.layout, sizes, where);
  if (!extents || !found.dataspace) return;
  const auto rank = dataspace_rank(*found.dataspace, where);
  if (rank && *rank + 1 != extents->size()) {
    bad_layout(where, fmt::format("chunks of {} dimensions for a dataspace of rank {}",
                                  extents->size() - 1, *rank));
  }
}

bool read_btree_chunk_index(const SingleFileStore& file, uint64_t header_address,
                            FileLayoutSizes sizes, const std::vector<int64_t>& grid,
                            const std::vector<int64_t>& chunk_shape,
                            std::vector<Hdf5ChunkEntry>& entries, const std::string& where) {
  if (sizes.offset_size < 2 || sizes.offset_size > 8 || sizes.length_size < 2 ||
      sizes.length_size > 8) {
    return false;
  }
  const HeaderMessages found = find_messages(file, header_address, sizes, where);
  if (!found.layout) return false;
  Reader layout(*found.layout, where, "data layout message");
  if (layout.uint(0, 1) != 3 || layout.uint(1, 1) != 2) return false;  // v3, chunked
  const auto extents = checked_layout(*found.layout, sizes, where);
  const size_t dims = extents->size();
  if (dims != grid.size() + 1) {
    fail(ErrorCode::kCorruptData, "{}: a layout of {} dimensions for a dataset of rank {}", where,
         dims, grid.size());
  }
  const uint64_t root = layout.uint(3, static_cast<size_t>(sizes.offset_size));
  for (size_t d = 0; d + 1 < dims; ++d) {
    if ((*extents)[d] != static_cast<uint64_t>(chunk_shape[d])) {
      fail(ErrorCode::kCorruptData, "{}: layout chunk extent {} differs from libhdf5's {}", where,
           (*extents)[d], chunk_shape[d]);
    }
  }
  std::vector<Hdf5ChunkEntry> found_entries;
  if (root != kUndefined &&
      (sizes.offset_size == 8 || root != (uint64_t{1} << (8 * sizes.offset_size)) - 1)) {
    TreeWalk walk{file, sizes, dims, grid, chunk_shape, found_entries, where};
    walk.node(root, -1);
  }
  entries = std::move(found_entries);
  return true;
}

}  // namespace chute::hdf5
