#include "chute/format/hdf5_native/chunk_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "chute/format/hdf5_native/btree.h"
#include "chute/util/error.h"
#include "chute/util/interrupt.h"

namespace chute::h5native {

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/// Bytes of a filtered chunk's size field in fixed/extensible array elements and v2 B-tree
/// records, from the element or record size the structure's header declares (HDF5 1.10 makes
/// room for the unfiltered size plus one byte; HDF5 2.0 writes 8).
size_t chunk_size_bytes(const std::string& where, uint64_t declared, uint64_t other) {
  if (declared <= other || declared - other > 8) {
    corrupt(where, fmt::format("filtered chunk entries of {} bytes", declared));
  }
  return static_cast<size_t>(declared - other);
}

struct Context {
  const FileReader& file;
  const Layout& layout;
  const Dataspace& space;
  const std::string& where;
  size_t rank;
  std::vector<uint64_t> grid;      // current chunk grid
  std::vector<uint64_t> max_grid;  // kUndefined for unlimited dimensions
  ChunkIndex out;
  size_t size_bytes = 0;  // of a filtered chunk's size field
  InterruptPoll poll;     // every entry read, stored or not

  Context(const FileReader& f, const Layout& l, const Dataspace& s, const std::string& w)
      : file(f), layout(l), space(s), where(w), rank(l.chunk.size()) {
    if (s.dims.size() != rank) {
      corrupt(where,
              fmt::format("chunks of rank {} for a dataspace of rank {}", rank, s.dims.size()));
    }
    for (size_t d = 0; d < rank; ++d) {
      grid.push_back(ceil_div(s.dims[d], l.chunk[d]));
      max_grid.push_back(s.maxdims[d] == kUndefined ? kUndefined
                                                    : ceil_div(s.maxdims[d], l.chunk[d]));
    }
    out.rank = rank;
  }

  void add(std::span<const uint64_t> coords, ChunkRecord record) {
    poll();
    for (size_t d = 0; d < rank; ++d) {
      if (max_grid[d] != kUndefined && coords[d] >= max_grid[d]) {
        corrupt(where, fmt::format("chunk at grid position {} of dimension {} past the maximum "
                                   "extent's {} chunks",
                                   coords[d], d, max_grid[d]));
      }
    }
    if (!file.contains(record.address, record.size)) {
      corrupt(where, fmt::format("chunk of {} bytes at byte {} lies outside the file ({} bytes)",
                                 record.size, record.address, file.size()));
    }
    out.coords.insert(out.coords.end(), coords.begin(), coords.end());
    out.records.push_back(record);
  }

  /// Unravels `index` over `shape` (row-major) into coords.
  static void unravel(uint64_t index, std::span<const uint64_t> shape, std::span<uint64_t> c) {
    for (size_t d = shape.size(); d-- > 1;) {
      c[d] = index % shape[d];
      index /= shape[d];
    }
    if (!shape.empty()) c[0] = index;
  }

  /// Decodes one fixed/extensible array element; false when the chunk was never written.
  bool element(Cursor& in, bool filtered, ChunkRecord& r) const {
    r.address = in.offset();
    if (filtered) {
      r.size = in.uint(size_bytes);
      r.filter_mask = static_cast<uint32_t>(in.u32());
    } else {
      r.size = layout.chunk_bytes();
    }
    return r.address != kUndefined;
  }

  /// Indexes that store coordinates (B-trees) could list a chunk twice; the arrays cannot.
  void check_unique() {
    if (out.count() < 2) return;
    std::vector<uint64_t> extent(rank, 0);
    for (size_t i = 0; i < out.count(); ++i) {
      for (size_t d = 0; d < rank; ++d)
        extent[d] = std::max(extent[d], out.coords[i * rank + d] + 1);
    }
    unsigned __int128 cells = 1;
    for (uint64_t e : extent) cells = std::min<unsigned __int128>(cells * e, ~uint64_t{0});
    std::vector<uint64_t> linear(out.count());
    if (cells < ~uint64_t{0}) {
      for (size_t i = 0; i < out.count(); ++i) {
        uint64_t l = 0;
        for (size_t d = 0; d < rank; ++d) l = l * extent[d] + out.coords[i * rank + d];
        linear[i] = l;
      }
      std::sort(linear.begin(), linear.end());
      const auto dup = std::adjacent_find(linear.begin(), linear.end());
      if (dup == linear.end()) return;
    }
    // A duplicate (or a grid too large to number): find and name it.
    std::vector<size_t> order(out.count());
    std::iota(order.begin(), order.end(), size_t{0});
    auto key = [&](size_t i) {
      return std::span<const uint64_t>(out.coords).subspan(i * rank, rank);
    };
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      auto ka = key(a), kb = key(b);
      return std::lexicographical_compare(ka.begin(), ka.end(), kb.begin(), kb.end());
    });
    for (size_t i = 1; i < order.size(); ++i) {
      auto a = key(order[i - 1]), b = key(order[i]);
      if (std::equal(a.begin(), a.end(), b.begin())) {
        std::string at;
        for (size_t d = 0; d < rank; ++d) at += fmt::format("{}{}", d ? "," : "", b[d]);
        corrupt(where, fmt::format("chunk ({}) listed twice in its index", at));
      }
    }
  }

  void btree1() {
    std::vector<uint64_t> coords(rank);
    walk_chunk_btree(file, layout.address, rank + 1, where, [&](Cursor& key, uint64_t child) {
      ChunkRecord r;
      r.size = key.u32();
      r.filter_mask = static_cast<uint32_t>(key.u32());
      for (size_t d = 0; d < rank; ++d) {
        const uint64_t offset = key.u64();
        if (offset % layout.chunk[d] != 0) {
          key.fail(fmt::format("chunk offset {} not a multiple of the chunk size {}", offset,
                               layout.chunk[d]));
        }
        coords[d] = offset / layout.chunk[d];
      }
      r.address = child;
      add(coords, r);
    });
  }

  void single() {
    ChunkRecord r;
    r.address = layout.address;
    r.size = (layout.flags & 2) ? layout.single_filtered_size : layout.chunk_bytes();
    r.filter_mask = layout.single_filter_mask;
    std::vector<uint64_t> coords(rank, 0);
    add(coords, r);
  }

  void implicit() {
    for (size_t d = 0; d < rank; ++d) {
      if (max_grid[d] == kUndefined)
        corrupt(where, "implicit chunk index with an unlimited dimension");
    }
    // Every chunk of the grid is stored, one after the other: the grid must fit in the file.
    const uint64_t limit = file.size() / std::max<uint64_t>(1, layout.chunk_bytes()) + 1;
    uint64_t count = 1;
    for (uint64_t g : grid) {
      if (g != 0 && count > limit / g) {
        corrupt(where, "an implicit chunk index over more chunks than the file can hold");
      }
      count *= g;
    }
    std::vector<uint64_t> coords(rank);
    for (uint64_t i = 0; i < count; ++i) {
      unravel(i, grid, coords);
      uint64_t linear = 0;
      for (size_t d = 0; d < rank; ++d) linear = linear * max_grid[d] + coords[d];
      ChunkRecord r;
      r.size = layout.chunk_bytes();
      r.address = layout.address + linear * r.size;
      add(coords, r);
    }
  }

  void fixed_array() {
    const std::string what =
        fmt::format("{}: fixed array header at byte {}", where, layout.address);
    const auto o = static_cast<size_t>(file.offset_size());
    auto head =
        file.read(layout.address, 8 + 2 + static_cast<size_t>(file.length_size()) + o + 4, what);
    Cursor h(head, what, file);
    h.expect("FAHD");
    if (h.u8() != 0) h.fail("version");
    const auto client = h.u8();
    const auto entry = static_cast<size_t>(h.u8());
    const auto page_bits = static_cast<int>(h.u8());
    const uint64_t entries = h.length();
    const uint64_t block = h.offset();
    h.checksum(0);
    if (client > 1) h.fail(fmt::format("client {}", client));
    const bool filtered = client == 1;
    if (filtered) {
      size_bytes = chunk_size_bytes(what, entry, o + 4);
    } else if (entry != o) {
      h.fail(fmt::format("elements of {} bytes", entry));
    }
    if (page_bits > 32) h.fail("page bits");
    uint64_t expected = 1;
    for (uint64_t g : max_grid) {
      if (g == kUndefined) corrupt(what, "a fixed array for an unlimited dimension");
      expected *= g;
    }
    if (entries != expected) h.fail(fmt::format("{} entries for {} chunks", entries, expected));
    if (block == kUndefined) return;
    if (entries > file.size() / entry + 1) h.fail(fmt::format("{} entries", entries));
    const std::string block_what =
        fmt::format("{}: fixed array data block at byte {}", where, block);
    const uint64_t page = uint64_t{1} << page_bits;
    const bool paged = entries > page;
    const uint64_t pages = paged ? ceil_div(entries, page) : 0;
    const uint64_t bitmap = paged ? (pages + 7) / 8 : 0;
    const uint64_t prefix = 4 + 1 + 1 + o + bitmap + 4;
    const uint64_t total = paged ? prefix + entries * entry + pages * 4 : prefix + entries * entry;
    auto bytes = file.read(block, total, block_what);
    Cursor in(bytes, block_what, file);
    in.expect("FADB");
    if (in.u8() != 0) in.fail("version");
    if (in.u8() != client) in.fail("client");
    in.offset();
    auto init = in.take(static_cast<size_t>(bitmap));
    std::vector<uint64_t> coords(rank);
    auto elements = [&](Cursor& c, uint64_t first, uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) {
        ChunkRecord r;
        poll();
        if (!element(c, filtered, r)) continue;
        unravel(first + i, max_grid, coords);
        add(coords, r);
      }
    };
    if (!paged) {
      elements(in, 0, entries);
      in.checksum(0);
      return;
    }
    in.checksum(0);
    for (uint64_t p = 0; p < pages; ++p) {
      const uint64_t n = std::min(page, entries - p * page);
      const bool written =
          (static_cast<unsigned>(init[static_cast<size_t>(p / 8)]) >> (7 - p % 8)) & 1;
      if (!written) {
        in.skip(static_cast<size_t>(n * entry + 4));
        continue;
      }
      Cursor page_in(in.take(static_cast<size_t>(n * entry + 4)), block_what + " page", file);
      elements(page_in, p * page, n);
      page_in.checksum(0);
    }
  }

  void extensible_array();
  void btree2() {
    std::vector<uint64_t> coords(rank);
    // The record type says whether chunks are filtered: 10 plain, 11 filtered.
    const std::string what = where + ": chunk v2 B-tree header";
    auto head = file.read(layout.address, 16, what);
    const int type = static_cast<int>(head[5]);
    const uint64_t record_size =
        static_cast<uint64_t>(head[10]) | (static_cast<uint64_t>(head[11]) << 8);
    const uint64_t fixed = static_cast<uint64_t>(file.offset_size()) + 8 * rank;
    if (type == 11) {
      size_bytes = chunk_size_bytes(what, record_size, fixed + 4);
    } else if (record_size != fixed) {
      corrupt(what, fmt::format("records of {} bytes", record_size));
    }
    if (type != 10 && type != 11) {
      corrupt(where, fmt::format("chunk v2 B-tree of record type {}", type));
    }
    walk_btree2(file, layout.address, type, where, [&](Cursor& rec) {
      ChunkRecord r;
      r.address = rec.offset();
      if (type == 11) {
        r.size = rec.uint(size_bytes);
        r.filter_mask = static_cast<uint32_t>(rec.u32());
      } else {
        r.size = layout.chunk_bytes();
      }
      for (size_t d = 0; d < rank; ++d) coords[d] = rec.u64();
      add(coords, r);
    });
  }
};

void Context::extensible_array() {
  const std::string what =
      fmt::format("{}: extensible array header at byte {}", where, layout.address);
  const auto o = static_cast<size_t>(file.offset_size());
  const auto l = static_cast<size_t>(file.length_size());
  auto head = file.read(layout.address, 12 + 6 * l + o + 4, what);
  Cursor h(head, what, file);
  h.expect("EAHD");
  if (h.u8() != 0) h.fail("version");
  const auto client = h.u8();
  const auto entry = static_cast<size_t>(h.u8());
  const auto max_bits = static_cast<int>(h.u8());
  const auto index_elements = static_cast<uint64_t>(h.u8());
  const auto min_elements = static_cast<uint64_t>(h.u8());
  const auto min_pointers = static_cast<uint64_t>(h.u8());
  const auto page_bits = static_cast<int>(h.u8());
  h.skip(4 * l);                          // super and data block counts and sizes
  const uint64_t max_index = h.length();  // one past the highest element ever set
  h.skip(l);                              // elements realized
  const uint64_t index_block = h.offset();
  h.checksum(0);
  if (client > 1) h.fail(fmt::format("client {}", client));
  const bool filtered = client == 1;
  if (filtered) {
    size_bytes = chunk_size_bytes(what, entry, o + 4);
  } else if (entry != o) {
    h.fail(fmt::format("elements of {} bytes", entry));
  }
  if (max_bits == 0 || max_bits > 64 || page_bits > 32 || min_elements == 0 ||
      (min_elements & (min_elements - 1)) != 0 || min_pointers == 0 ||
      (min_pointers & (min_pointers - 1)) != 0 || log2_floor(min_elements) > max_bits) {
    h.fail("creation parameters");
  }
  if (index_block == kUndefined) return;
  // Which dimension is unlimited: it becomes the slowest-varying one of the linear index.
  size_t unlimited = rank;
  for (size_t d = 0; d < rank; ++d) {
    if (max_grid[d] == kUndefined) {
      if (unlimited != rank) corrupt(what, "an extensible array for two unlimited dimensions");
      unlimited = d;
    }
  }
  if (unlimited == rank) corrupt(what, "an extensible array without an unlimited dimension");
  std::vector<uint64_t> swizzled_shape;  // entry 0: the unlimited dimension (unbounded)
  swizzled_shape.push_back(kUndefined);
  for (size_t d = 0; d < rank; ++d) {
    if (d != unlimited) swizzled_shape.push_back(max_grid[d]);
  }
  uint64_t plane = 1;
  for (size_t d = 1; d < rank; ++d) plane *= swizzled_shape[d];
  std::vector<uint64_t> swizzled(rank), coords(rank);
  auto emit = [&](uint64_t index, const ChunkRecord& r) {
    swizzled[0] = index / plane;
    uint64_t rest = index % plane;
    for (size_t d = rank; d-- > 1;) {
      swizzled[d] = rest % swizzled_shape[d];
      rest /= swizzled_shape[d];
    }
    coords[unlimited] = swizzled[0];
    for (size_t d = 0, s = 1; d < rank; ++d) {
      if (d != unlimited) coords[d] = swizzled[s++];
    }
    add(coords, r);
  };
  auto elements = [&](Cursor& in, uint64_t first, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      ChunkRecord r;
      poll();
      const bool stored = element(in, filtered, r);
      if (stored && first + i < max_index) emit(first + i, r);
    }
  };
  // Super block geometry (H5EA header initialisation).
  const int super_blocks = 1 + max_bits - log2_floor(min_elements);
  struct Super {
    uint64_t data_blocks, elements, first;
  };
  std::vector<Super> supers;
  uint64_t first = index_elements;
  for (int u = 0; u < super_blocks; ++u) {
    Super s;
    s.data_blocks = uint64_t{1} << (u / 2);
    s.elements = (uint64_t{1} << ((u + 1) / 2)) * min_elements;
    s.first = first;
    first += s.data_blocks * s.elements;
    supers.push_back(s);
  }
  const auto iblock_supers =
      static_cast<size_t>(std::min<int>(super_blocks, 2 * log2_floor(min_pointers)));
  const uint64_t iblock_dblocks = 2 * (min_pointers - 1);
  const uint64_t iblock_sblocks = static_cast<uint64_t>(super_blocks) - iblock_supers;
  const std::string iwhat =
      fmt::format("{}: extensible array index block at byte {}", where, index_block);
  auto ibytes =
      file.read(index_block,
                6 + o + index_elements * entry + (iblock_dblocks + iblock_sblocks) * o + 4, iwhat);
  Cursor in(ibytes, iwhat, file);
  in.expect("EAIB");
  if (in.u8() != 0) in.fail("version");
  if (in.u8() != client) in.fail("client");
  in.offset();
  elements(in, 0, index_elements);
  std::vector<uint64_t> dblocks, sblocks;
  for (uint64_t i = 0; i < iblock_dblocks; ++i) dblocks.push_back(in.offset());
  for (uint64_t i = 0; i < iblock_sblocks; ++i) sblocks.push_back(in.offset());
  in.checksum(0);
  const size_t offset_bytes = static_cast<size_t>((max_bits + 7) / 8);
  const uint64_t page = uint64_t{1} << page_bits;
  // page_init: the super block's bitmap of written pages, one bit per page of each of its data
  // blocks in turn (most significant bit first); first_page: this block's first bit.
  auto data_block = [&](uint64_t address, uint64_t first_index, uint64_t n,
                        std::span<const std::byte> page_init, uint64_t first_page) {
    const std::string dwhat =
        fmt::format("{}: extensible array data block at byte {}", where, address);
    const bool paged = n > page;
    const uint64_t prefix = 6 + o + offset_bytes + 4;
    const uint64_t pages = paged ? n / page : 0;
    const uint64_t total = paged ? prefix + n * entry + pages * 4 : prefix + n * entry;
    auto bytes = file.read(address, total, dwhat);
    Cursor d(bytes, dwhat, file);
    d.expect("EADB");
    if (d.u8() != 0) d.fail("version");
    if (d.u8() != client) d.fail("client");
    d.offset();
    d.uint(offset_bytes);  // block offset (not the element position: unchecked)
    if (!paged) {
      elements(d, first_index, n);
      d.checksum(0);
      return;
    }
    d.checksum(0);
    for (uint64_t p = 0; p < pages; ++p) {
      const uint64_t bit = first_page + p;
      const bool written =
          bit / 8 < page_init.size() &&
          ((static_cast<unsigned>(page_init[static_cast<size_t>(bit / 8)]) >> (7 - bit % 8)) & 1);
      if (!written) {
        d.skip(static_cast<size_t>(page * entry + 4));
        continue;
      }
      Cursor page_in(d.take(static_cast<size_t>(page * entry + 4)), dwhat + " page", file);
      elements(page_in, first_index + p * page, page);
      page_in.checksum(0);
    }
  };
  size_t next = 0;
  for (size_t u = 0; u < iblock_supers; ++u) {
    for (uint64_t b = 0; b < supers[u].data_blocks; ++b, ++next) {
      const uint64_t start = supers[u].first + b * supers[u].elements;
      if (start >= max_index) break;
      if (next < dblocks.size() && dblocks[next] != kUndefined) {
        data_block(dblocks[next], start, supers[u].elements, {}, 0);
      }
    }
  }
  for (size_t s = 0; s < sblocks.size(); ++s) {
    const Super& sup = supers[iblock_supers + s];
    if (sblocks[s] == kUndefined || sup.first >= max_index) continue;
    const std::string swhat =
        fmt::format("{}: extensible array super block at byte {}", where, sblocks[s]);
    const bool paged = sup.elements > page;
    const uint64_t init_size = paged ? (sup.elements / page + 7) / 8 : 0;
    auto sbytes =
        file.read(sblocks[s], 6 + o + offset_bytes + sup.data_blocks * (init_size + o) + 4, swhat);
    Cursor sb(sbytes, swhat, file);
    sb.expect("EASB");
    if (sb.u8() != 0) sb.fail("version");
    if (sb.u8() != client) sb.fail("client");
    sb.offset();
    sb.uint(offset_bytes);
    auto init = sb.take(static_cast<size_t>(sup.data_blocks * init_size));
    std::vector<uint64_t> addresses;
    for (uint64_t b = 0; b < sup.data_blocks; ++b) addresses.push_back(sb.offset());
    sb.checksum(0);
    for (uint64_t b = 0; b < sup.data_blocks; ++b) {
      const uint64_t start = sup.first + b * sup.elements;
      if (start >= max_index || addresses[b] == kUndefined) continue;
      data_block(addresses[b], start, sup.elements, init, b * (sup.elements / page));
    }
  }
}

}  // namespace

ChunkIndex read_chunk_index(const FileReader& file, const Layout& layout, const Dataspace& space,
                            const std::string& where) {
  if (layout.cls != Layout::Class::kChunked) corrupt(where, "not a chunked layout");
  Context c(file, layout, space, where);
  if (layout.address == kUndefined) return std::move(c.out);  // nothing written yet
  for (uint64_t g : c.max_grid) {
    if (g == 0) return std::move(c.out);  // a fixed dimension of length 0: no chunks
  }
  switch (layout.index) {
    case Layout::Index::kBtree1:
      c.btree1();
      c.check_unique();
      break;
    case Layout::Index::kSingle:
      c.single();
      break;
    case Layout::Index::kImplicit:
      c.implicit();
      break;
    case Layout::Index::kFixedArray:
      c.fixed_array();
      break;
    case Layout::Index::kExtensibleArray:
      c.extensible_array();
      break;
    case Layout::Index::kBtree2:
      c.btree2();
      c.check_unique();
      break;
  }
  return std::move(c.out);
}

}  // namespace chute::h5native
