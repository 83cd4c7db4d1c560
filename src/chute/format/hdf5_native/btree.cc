#include "chute/format/hdf5_native/btree.h"

#include <fmt/format.h>

#include <unordered_set>
#include <vector>

#include "chute/util/error.h"
#include "chute/util/interrupt.h"

namespace chute::h5native {

namespace {

constexpr int kMaxDepth = 64;

/// One v1 B-tree: `key_size` bytes per key; leaves call `leaf(key cursor, child)`.
struct Btree1Walk {
  const FileReader& file;
  int node_type;
  size_t key_size;
  const std::string& where;
  const std::function<void(Cursor&, uint64_t)>& leaf;
  std::unordered_set<uint64_t> seen;
  InterruptPoll poll;

  void node(uint64_t address, int expected_level) {
    const std::string what = fmt::format("{}: B-tree node at byte {}", where, address);
    if (!seen.insert(address).second) corrupt(what, "reached twice (a cycle)");
    const auto o = static_cast<size_t>(file.offset_size());
    const size_t header = 8 + 2 * o;
    auto top = file.read(address, header, what);
    Cursor h(top, what, file);
    h.expect("TREE");
    const auto type = static_cast<int>(h.u8());
    const auto level = static_cast<int>(h.u8());
    const auto used = static_cast<size_t>(h.u16());
    if (type != node_type) h.fail(fmt::format("node type {}, expected {}", type, node_type));
    if (level > kMaxDepth || (expected_level >= 0 && level != expected_level)) {
      h.fail(fmt::format("level {}, expected {}", level, expected_level));
    }
    auto body = file.read(address + header, used * (key_size + o) + key_size, what);
    Cursor in(body, what, file);
    for (size_t i = 0; i < used; ++i) {
      poll();
      Cursor key(in.take(key_size), what, file);
      const uint64_t child = in.offset();
      if (level > 0) {
        node(child, level - 1);
      } else {
        leaf(key, child);
      }
    }
  }
};

}  // namespace

void walk_group_btree(const FileReader& file, uint64_t address, const std::string& where,
                      const std::function<void(const SymbolEntry&)>& entry) {
  std::unordered_set<uint64_t> nodes;
  InterruptPoll poll;
  const std::function<void(Cursor&, uint64_t)> leaf = [&](Cursor&, uint64_t snod) {
    const std::string what = fmt::format("{}: symbol table node at byte {}", where, snod);
    if (!nodes.insert(snod).second) corrupt(what, "reached twice (a cycle)");
    auto head = file.read(snod, 8, what);
    Cursor h(head, what, file);
    h.expect("SNOD");
    if (h.u8() != 1) h.fail("symbol table node version");
    h.skip(1);
    const auto count = static_cast<size_t>(h.u16());
    const size_t entry_size = 2 * static_cast<size_t>(file.offset_size()) + 24;
    auto bytes = file.read(snod + 8, count * entry_size, what);
    Cursor in(bytes, what, file);
    for (size_t i = 0; i < count; ++i) {
      poll();
      SymbolEntry e;
      e.name = in.offset();
      e.header = in.offset();
      e.cache_type = static_cast<uint32_t>(in.u32());
      in.skip(4);
      Cursor scratch(in.take(16), what, file);
      if (e.cache_type == 2) e.soft_link_value = static_cast<uint32_t>(scratch.u32());
      entry(e);
    }
  };
  Btree1Walk walk{file, 0, static_cast<size_t>(file.length_size()), where, leaf, {}, {}};
  walk.node(address, -1);
}

void walk_chunk_btree(const FileReader& file, uint64_t address, size_t dims,
                      const std::string& where,
                      const std::function<void(Cursor&, uint64_t)>& chunk) {
  Btree1Walk walk{file, 1, 8 + 8 * dims, where, chunk, {}, {}};
  walk.node(address, -1);
}

void walk_btree2(const FileReader& file, uint64_t address, int type, const std::string& where,
                 const std::function<void(Cursor&)>& record) {
  const std::string what = fmt::format("{}: v2 B-tree at byte {}", where, address);
  const auto o = static_cast<size_t>(file.offset_size());
  auto head = file.read(
      address, 4 + 1 + 1 + 4 + 2 + 2 + 1 + 1 + o + 2 + static_cast<size_t>(file.length_size()) + 4,
      what);
  Cursor h(head, what, file);
  h.expect("BTHD");
  if (h.u8() != 0) h.fail("version");
  const auto stored_type = static_cast<int>(h.u8());
  const uint64_t node_size = h.u32();
  const auto record_size = static_cast<size_t>(h.u16());
  const auto depth = static_cast<int>(h.u16());
  h.skip(2);
  const uint64_t root = h.offset();
  const auto root_records = static_cast<size_t>(h.u16());
  const uint64_t total = h.length();
  h.checksum(0);
  if (stored_type != type) h.fail(fmt::format("record type {}, expected {}", stored_type, type));
  if (depth > kMaxDepth) h.fail(fmt::format("depth {}", depth));
  if (record_size == 0 || node_size < 10 + record_size || node_size > (1u << 24)) {
    h.fail(fmt::format("node size {} for records of {} bytes", node_size, record_size));
  }
  if (root == kUndefined || total == 0) return;
  // Field widths of the child pointers, level by level (H5B2 header initialisation).
  struct Level {
    uint64_t max_records = 0, cumulative = 0;
    size_t cumulative_size = 0;
  };
  std::vector<Level> levels(static_cast<size_t>(depth) + 1);
  levels[0].max_records = (node_size - 10) / record_size;
  levels[0].cumulative = levels[0].max_records;
  const auto max_records_size = static_cast<size_t>(limit_enc_size(levels[0].max_records));
  for (size_t u = 1; u < levels.size(); ++u) {
    const uint64_t pointer = o + max_records_size + levels[u - 1].cumulative_size;
    if (node_size < 10 + pointer) h.fail("node size too small for internal nodes");
    levels[u].max_records = (node_size - 10 - pointer) / (record_size + pointer);
    const unsigned __int128 cumulative =
        static_cast<unsigned __int128>(levels[u].max_records + 1) * levels[u - 1].cumulative +
        levels[u].max_records;
    levels[u].cumulative =
        cumulative > ~uint64_t{0} ? ~uint64_t{0} : static_cast<uint64_t>(cumulative);
    levels[u].cumulative_size = static_cast<size_t>(limit_enc_size(levels[u].cumulative));
  }
  uint64_t seen_records = 0;
  std::unordered_set<uint64_t> seen;
  InterruptPoll poll;
  std::function<void(uint64_t, size_t, int)> node = [&](uint64_t at, size_t records, int level) {
    const std::string node_what = fmt::format("{}: node at byte {}", what, at);
    if (!seen.insert(at).second) corrupt(node_what, "reached twice (a cycle)");
    if (records > levels[static_cast<size_t>(level)].max_records) {
      corrupt(node_what, fmt::format("{} records in a node of at most {}", records,
                                     levels[static_cast<size_t>(level)].max_records));
    }
    auto bytes = file.read(at, node_size, node_what);
    Cursor in(bytes, node_what, file);
    in.expect(level == 0 ? "BTLF" : "BTIN");
    if (in.u8() != 0) in.fail("version");
    if (static_cast<int>(in.u8()) != type) in.fail("record type");
    const size_t records_at = in.pos();
    in.skip(records * record_size);
    struct Child {
      uint64_t address;
      size_t records;
    };
    std::vector<Child> children;
    if (level > 0) {
      for (size_t i = 0; i <= records; ++i) {
        Child c;
        c.address = in.offset();
        c.records = static_cast<size_t>(in.uint(max_records_size));
        if (level > 1) in.uint(levels[static_cast<size_t>(level) - 1].cumulative_size);
        children.push_back(c);
      }
    }
    in.checksum(0);
    for (size_t i = 0; i <= records; ++i) {
      if (level > 0) node(children[i].address, children[i].records, level - 1);
      if (i == records) break;
      if (++seen_records > total) corrupt(what, "more records than its header counts");
      poll();
      Cursor r(in.bytes().subspan(records_at + i * record_size, record_size), node_what, file);
      record(r);
    }
  };
  node(root, root_records, depth);
  if (seen_records != total) {
    corrupt(what, fmt::format("{} records, its header counts {}", seen_records, total));
  }
}

}  // namespace chute::h5native
