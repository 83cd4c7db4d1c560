#include "chute/format/hdf5_native/object_header.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "chute/format/hdf5_native/messages.h"
#include "chute/util/error.h"

namespace chute::h5native {

namespace {

constexpr std::byte kSignature[8] = {std::byte{0x89}, std::byte{'H'},  std::byte{'D'},
                                     std::byte{'F'},  std::byte{'\r'}, std::byte{'\n'},
                                     std::byte{0x1a}, std::byte{'\n'}};
constexpr size_t kMaxHeaderBlocks = 65536;

bool valid_size(uint64_t n) { return n == 2 || n == 4 || n == 8; }

}  // namespace

Superblock read_superblock(FileReader& file) {
  Superblock sb;
  std::vector<std::byte> head;
  bool found = false;
  for (uint64_t at = 0; at < file.size(); at = at == 0 ? 512 : at * 2) {
    if (file.size() - at < 8) break;
    head = file.read_upto(at, 256, file.name() + ": superblock");
    if (std::equal(std::begin(kSignature), std::end(kSignature), head.begin())) {
      sb.position = at;
      found = true;
      break;
    }
  }
  if (!found) {
    fail(ErrorCode::kInvalidMetadata, "{}: not an HDF5 file (no signature at byte 0, 512, ...)",
         file.name());
  }
  const std::string where = fmt::format("{}: superblock at byte {}", file.name(), sb.position);
  Cursor in(head, where);
  in.skip(8);
  sb.version = static_cast<int>(in.u8());
  if (sb.version <= 1) {
    in.skip(4);  // free-space, root entry, reserved, shared-header versions
    sb.offset_size = static_cast<int>(in.u8());
    sb.length_size = static_cast<int>(in.u8());
    in.skip(1);
    in.skip(4);  // group leaf and internal node K
    in.skip(4);  // consistency flags
    if (sb.version == 1) in.skip(4);
  } else if (sb.version <= 3) {
    sb.offset_size = static_cast<int>(in.u8());
    sb.length_size = static_cast<int>(in.u8());
    in.skip(1);
  } else {
    fail(ErrorCode::kUnsupported, "{}: superblock version {}", where, sb.version);
  }
  if (!valid_size(sb.offset_size) || !valid_size(sb.length_size)) {
    in.fail(fmt::format("sizes of offsets {} and lengths {}", sb.offset_size, sb.length_size));
  }
  Cursor fields(head, where, sb.offset_size, sb.length_size);
  fields.seek(in.pos());
  fields.offset();  // base address: HDF5 takes the superblock's position instead
  if (sb.version <= 1) {
    fields.offset();  // free space
    sb.end_of_file = fields.offset();
    fields.offset();  // driver information
    // Root group symbol table entry.
    fields.offset();  // link name offset
    sb.root = fields.offset();
    const auto cache = fields.u32();
    fields.skip(4);
    if (cache == 1) {
      sb.root_btree = fields.offset();
      sb.root_heap = fields.offset();
    }
  } else {
    sb.extension = fields.offset();
    sb.end_of_file = fields.offset();
    sb.root = fields.offset();
    fields.checksum(0);
  }
  file.set_base(sb.position);
  file.set_sizes(sb.offset_size, sb.length_size);
  if (sb.root == kUndefined) corrupt(where, "no root group");
  return sb;
}

void decode_header_messages(Cursor& block, int version, bool creation_order, size_t end,
                            std::vector<Message>& out, uint64_t block_address) {
  const size_t prefix = version == 1 ? 8 : (creation_order ? 6 : 4);
  while (block.pos() + prefix <= end) {
    Message m;
    uint64_t size;
    if (version == 1) {
      m.type = static_cast<uint16_t>(block.u16());
      size = block.u16();
      m.flags = static_cast<uint8_t>(block.u8());
      block.skip(3);
    } else {
      m.type = static_cast<uint16_t>(block.u8());
      size = block.u16();
      m.flags = static_cast<uint8_t>(block.u8());
      if (creation_order) block.skip(2);
    }
    if (size > end - block.pos()) {
      block.fail(
          fmt::format("message of type {} and {} bytes overruns its header block", m.type, size));
    }
    if (block_address != kUndefined) m.address = block_address + block.pos();
    auto data = block.take(static_cast<size_t>(size));
    m.data.assign(data.begin(), data.end());
    if (m.type != kNilMessage) out.push_back(std::move(m));
  }
}

ObjectHeader read_object_header(const FileReader& file, uint64_t address,
                                const std::string& where) {
  ObjectHeader oh;
  oh.address = address;
  const std::string what = fmt::format("{}: object header at byte {}", where, address);
  auto head = file.read_upto(address, 64, what);
  Cursor in(head, what, file);
  struct Block {
    uint64_t address, length;
  };
  std::vector<Block> blocks;
  bool creation_order = false;
  std::vector<std::byte> first;
  if (head.size() >= 4 && std::memcmp(head.data(), "OHDR", 4) == 0) {
    in.skip(4);
    oh.version = static_cast<int>(in.u8());
    if (oh.version != 2) in.fail(fmt::format("object header version {}", oh.version));
    const auto flags = in.u8();
    if (flags & 0xC0) in.fail(fmt::format("object header flags {:#x}", flags));
    creation_order = flags & 0x04;
    if (flags & 0x20) in.skip(16);
    if (flags & 0x10) in.skip(4);
    const uint64_t size = in.uint(size_t{1} << (flags & 3));
    if (size > file.size()) in.fail(fmt::format("a first block of {} bytes", size));
    const size_t prefix = in.pos();
    first = file.read(address, prefix + size + 4, what);
    Cursor chunk0(first, what, file);
    chunk0.seek(prefix + size);
    chunk0.checksum(0);
    Cursor messages(std::span<const std::byte>(first).subspan(0, prefix + size), what, file);
    messages.seek(prefix);
    decode_header_messages(messages, 2, creation_order, prefix + size, oh.messages, address);
  } else {
    oh.version = static_cast<int>(in.u8());
    if (oh.version != 1) in.fail(fmt::format("object header version {} (no OHDR)", oh.version));
    in.skip(1);
    in.skip(2);  // message count
    in.skip(4);  // reference count
    const uint64_t size = in.u32();
    first = file.read(address + 16, size, what);
    Cursor messages(first, what, file);
    decode_header_messages(messages, 1, false, first.size(), oh.messages, address + 16);
  }
  std::set<uint64_t> seen{address};
  for (size_t i = 0; i < oh.messages.size(); ++i) {
    if (oh.messages[i].type != kContinuationMessage) continue;
    Cursor c(oh.messages[i].data, what + ": continuation message", file);
    const uint64_t at = c.offset();
    const uint64_t length = c.length();
    if (!seen.insert(at).second || seen.size() > kMaxHeaderBlocks) {
      corrupt(what, fmt::format("continuation blocks form a cycle (block at byte {})", at));
    }
    const std::string block_what = fmt::format("{}: continuation block at byte {}", what, at);
    auto bytes = file.read(at, length, block_what);
    Cursor block(bytes, block_what, file);
    if (oh.version == 2) {
      if (bytes.size() < 8) block.fail("too short");
      block.seek(bytes.size() - 4);
      block.checksum(0);
      block.seek(0);
      block.expect("OCHK");
      decode_header_messages(block, 2, creation_order, bytes.size() - 4, oh.messages, at);
    } else {
      decode_header_messages(block, 1, false, bytes.size(), oh.messages, at);
    }
  }
  return oh;
}

}  // namespace chute::h5native
