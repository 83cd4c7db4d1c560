#include "chute/format/hdf5_native/virtual.h"

#include <fmt/format.h>

#include "chute/util/error.h"

namespace chute::h5native {

namespace {

constexpr size_t kMaxSelectionRank = 32;

std::string c_string(Cursor& in) {
  std::string s;
  while (true) {
    const auto c = static_cast<char>(in.u8());
    if (c == '\0') return s;
    s.push_back(c);
  }
}

uint64_t value(Cursor& in, size_t width) {
  const uint64_t v = in.uint(width);
  const uint64_t ones = width >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1;
  return v == ones ? kUndefined : v;
}

}  // namespace

Selection decode_selection(Cursor& in) {
  Selection s;
  const auto type = in.u32();
  if (type > 3) in.fail(fmt::format("selection type {}", type));
  s.kind = static_cast<Selection::Kind>(type);
  const auto version = in.u32();
  if (s.kind == Selection::Kind::kAll || s.kind == Selection::Kind::kNone) {
    in.skip(8);  // reserved, length
    return s;
  }
  if (s.kind == Selection::Kind::kPoints) {
    fail(ErrorCode::kUnsupported, "{}: point selections in a virtual dataset mapping", in.where());
  }
  size_t width = 4;
  uint64_t flags = 0;
  if (version == 1) {
    in.skip(8);  // reserved, length
  } else if (version == 2) {
    flags = in.u8();
    in.skip(4);  // length
    width = 8;
  } else if (version == 3) {
    flags = in.u8();
    width = static_cast<size_t>(in.u8());
    if (width != 2 && width != 4 && width != 8) in.fail(fmt::format("selection width {}", width));
  } else {
    in.fail(fmt::format("hyperslab selection version {}", version));
  }
  s.rank = static_cast<size_t>(in.u32());
  if (s.rank == 0 || s.rank > kMaxSelectionRank)
    in.fail(fmt::format("selection of rank {}", s.rank));
  s.regular = (flags & 1) && version >= 2;
  if (s.regular) {
    for (size_t d = 0; d < s.rank; ++d) {
      s.start.push_back(value(in, width));
      s.stride.push_back(value(in, width));
      s.count.push_back(value(in, width));
      s.block.push_back(value(in, width));
    }
    return s;
  }
  const uint64_t blocks = version == 1 ? in.u32() : in.uint(width);
  if (blocks > in.remaining() / (2 * s.rank * width)) {
    in.fail(fmt::format("{} blocks in {} bytes", blocks, in.remaining()));
  }
  for (uint64_t b = 0; b < blocks; ++b) {
    for (size_t d = 0; d < s.rank; ++d) s.block_first.push_back(in.uint(width));
    for (size_t d = 0; d < s.rank; ++d) s.block_last.push_back(in.uint(width));
  }
  if (blocks == 1) {  // one block is a regular hyperslab, as HDF5 reports it
    s.regular = true;
    for (size_t d = 0; d < s.rank; ++d) {
      if (s.block_last[d] < s.block_first[d]) in.fail("a block that ends before it starts");
      s.start.push_back(s.block_first[d]);
      s.stride.push_back(1);
      s.count.push_back(1);
      s.block.push_back(s.block_last[d] - s.block_first[d] + 1);
    }
    s.block_first.clear();
    s.block_last.clear();
  }
  return s;
}

std::vector<VirtualMapping> decode_virtual_mappings(Cursor& in) {
  if (in.size() < 4) in.fail("too short");
  {
    Cursor sum(in.bytes(), in.where());
    sum.seek(in.size() - 4);
    sum.checksum(0);
  }
  const auto version = in.u8();
  if (version != 0) in.fail(fmt::format("virtual mapping version {}", version));
  const uint64_t count = in.length();
  // Each entry takes at least two names and two 16-byte selections.
  if (count > in.remaining() / 34) in.fail(fmt::format("{} mappings", count));
  std::vector<VirtualMapping> out;
  for (uint64_t i = 0; i < count; ++i) {
    VirtualMapping m;
    m.file = c_string(in);
    m.dataset = c_string(in);
    m.source = decode_selection(in);
    m.target = decode_selection(in);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace chute::h5native
