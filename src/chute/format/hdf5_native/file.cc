#include "chute/format/hdf5_native/file.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "chute/format/hdf5_native/btree.h"
#include "chute/store/single_file_store.h"
#include "chute/util/error.h"

namespace chute::h5native {

namespace {

constexpr int kMaxLinkHops = 40;

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= path.size()) {
    const size_t slash = path.find('/', at);
    const size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > at && path.compare(at, end - at, ".") != 0)
      parts.push_back(path.substr(at, end - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  return parts;
}

std::string join(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

}  // namespace

File::File(StorePtr store, std::string key, std::string name)
    : reader_(std::move(store), std::move(key), std::move(name)) {}

std::shared_ptr<File> File::open(StorePtr store, std::string key, std::string name,
                                 std::function<std::shared_ptr<File>(const std::string&)> rel) {
  std::shared_ptr<File> file(new File(std::move(store), std::move(key), std::move(name)));
  file->superblock_ = read_superblock(file->reader_);
  file->open_relative_ = std::move(rel);
  return file;
}

std::shared_ptr<File> File::open_path(const std::string& path, StorePtr store) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  if (!store) store = std::make_shared<SingleFileStore>(path);
  return open(std::move(store), "", path, [folder](const std::string& target) {
    const auto p = std::filesystem::path(target).is_absolute()
                       ? std::filesystem::path(target)
                       : std::filesystem::path(folder) / target;
    return File::open_path(p.string());
  });
}

Object File::root() const { return object(superblock_.root, "/"); }

Object File::object(uint64_t address, const std::string& path) const {
  Object o;
  o.path = path;
  o.header = read_object_header(reader_, address, fmt::format("{}: {}", name(), path));
  bool layout = false, type = false, space = false;
  for (const Message& m : o.header.messages) {
    layout |= m.type == kLayoutMessage;
    type |= m.type == kDatatypeMessage;
    space |= m.type == kDataspaceMessage;
  }
  o.kind = layout ? Object::Kind::kDataset
                  : (type && !space ? Object::Kind::kDatatype : Object::Kind::kGroup);
  return o;
}

std::vector<Link> File::links(const Object& group) const {
  const std::string where = fmt::format("{}: {}", name(), group.path);
  std::vector<Link> links;
  for (const Message& m : group.header.messages) {
    Cursor in(m.data, where, reader_);
    if (m.type == kSymbolTableMessage) {
      const auto table = decode_symbol_table(in);
      LocalHeap heap(reader_, table.heap, where);
      walk_group_btree(reader_, table.btree, where, [&](const SymbolEntry& e) {
        Link link;
        link.name = heap.string_at(e.name);
        if (e.cache_type == 2) {
          link.kind = Link::Kind::kSoft;
          link.target = heap.string_at(e.soft_link_value);
        } else {
          link.address = e.header;
        }
        links.push_back(std::move(link));
      });
    } else if (m.type == kLinkMessage) {
      Cursor c(m.data, where + ": link message", reader_);
      links.push_back(decode_link(c));
    } else if (m.type == kLinkInfoMessage) {
      Cursor c(m.data, where + ": link info message", reader_);
      const DenseInfo info = decode_link_info(c);
      if (info.heap == kUndefined || info.name_index == kUndefined) continue;
      FractalHeap heap(reader_, info.heap, where + ": links");
      walk_btree2(reader_, info.name_index, 5, where + ": link name index", [&](Cursor& rec) {
        rec.skip(4);  // name hash
        auto id = rec.take(std::min(rec.remaining(), heap.id_length()));
        auto bytes = heap.object(id);
        Cursor link(bytes, where + ": dense link", reader_);
        links.push_back(decode_link(link));
      });
    }
  }
  std::sort(links.begin(), links.end(),
            [](const Link& a, const Link& b) { return a.name < b.name; });
  for (size_t i = 1; i < links.size(); ++i) {
    if (links[i].name == links[i - 1].name) {
      corrupt(where, fmt::format("two links named {}", links[i].name));
    }
  }
  return links;
}

Datatype File::committed_type(uint64_t address, const std::string& where) const {
  const ObjectHeader oh = read_object_header(reader_, address, where + ": committed datatype");
  for (const Message& m : oh.messages) {
    if (m.type == kDatatypeMessage) {
      Cursor in(m.data, where + ": committed datatype", reader_);
      return decode_datatype(in);
    }
  }
  corrupt(where, fmt::format("no datatype in the committed datatype at byte {}", address));
}

std::vector<Attribute> File::attributes(const Object& object) const {
  const std::string where = fmt::format("{}: {}", name(), object.path);
  std::vector<Attribute> out;
  auto finish = [&](Attribute a) {
    if (a.shared_type_address != kUndefined) {
      a.type = committed_type(a.shared_type_address, where);
      const uint64_t n = a.space.count() * a.type.size;
      if (a.type.size != 0 && n / a.type.size != a.space.count()) corrupt(where, "attribute size");
      if (n > a.data.size()) corrupt(where, fmt::format("attribute {} truncated", a.name));
      a.data.resize(static_cast<size_t>(n));
    }
    out.push_back(std::move(a));
  };
  for (const Message& m : object.header.messages) {
    if (m.type == kAttributeMessage) {
      if (m.flags & 2) {
        fail(ErrorCode::kUnsupported, "{}: shared attribute messages", where);
      }
      Cursor in(m.data, where + ": attribute message", reader_);
      finish(decode_attribute(in));
    } else if (m.type == kAttributeInfoMessage) {
      Cursor in(m.data, where + ": attribute info message", reader_);
      const DenseInfo info = decode_attribute_info(in);
      if (info.heap == kUndefined || info.name_index == kUndefined) continue;
      FractalHeap heap(reader_, info.heap, where + ": attributes");
      walk_btree2(reader_, info.name_index, 8, where + ": attribute name index", [&](Cursor& rec) {
        auto id = rec.take(8);
        const auto flags = rec.u8();
        if (flags & 2) fail(ErrorCode::kUnsupported, "{}: shared attribute messages", where);
        auto bytes = heap.object(id.subspan(0, std::min<size_t>(8, heap.id_length())));
        Cursor a(bytes, where + ": dense attribute", reader_);
        finish(decode_attribute(a));
      });
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Attribute& a, const Attribute& b) { return a.name < b.name; });
  return out;
}

Dataset File::dataset(const Object& object) const {
  const std::string where = fmt::format("{}: {}", name(), object.path);
  Dataset d;
  bool type = false, space = false, layout = false, fill = false;
  for (const Message& m : object.header.messages) {
    const char* what = m.type == kDatatypeMessage         ? ": datatype message"
                       : m.type == kDataspaceMessage      ? ": dataspace message"
                       : m.type == kLayoutMessage         ? ": data layout message"
                       : m.type == kFilterPipelineMessage ? ": filter pipeline message"
                                                          : ": fill value message";
    Cursor in(m.data, where + what, reader_);
    switch (m.type) {
      case kDatatypeMessage:
        d.type =
            (m.flags & 2) ? committed_type(decode_shared_address(in), where) : decode_datatype(in);
        type = true;
        break;
      case kDataspaceMessage:
        if (m.flags & 2) fail(ErrorCode::kUnsupported, "{}: a shared dataspace", where);
        d.space = decode_dataspace(in);
        space = true;
        break;
      case kFillValueMessage:
        if (m.flags & 2) break;
        d.fill = decode_fill_value(in);
        fill = true;
        break;
      case kFillValueOldMessage:
        if (!fill) d.fill = decode_old_fill_value(in);
        break;
      case kFilterPipelineMessage:
        if (m.flags & 2) fail(ErrorCode::kUnsupported, "{}: a shared filter pipeline", where);
        d.filters = decode_filter_pipeline(in);
        break;
      case kLayoutMessage:
        d.layout = decode_layout(in);
        layout = true;
        break;
      case kExternalFilesMessage:
        fail(ErrorCode::kUnsupported, "{}: data stored in external raw files", where);
      default:
        break;
    }
  }
  if (!type || !space || !layout) {
    corrupt(where, "a dataset without its datatype, dataspace or layout message");
  }
  if (d.layout.cls == Layout::Class::kChunked) {
    if (d.layout.chunk.size() != d.space.dims.size()) {
      corrupt(where,
              fmt::format("data layout message: chunks of rank {} for a dataspace of rank {}",
                          d.layout.chunk.size(), d.space.dims.size()));
    }
    if (d.layout.element_size != d.type.size) {
      corrupt(where,
              fmt::format("data layout message: chunk elements of {} bytes for a datatype of {}",
                          d.layout.element_size, d.type.size));
    }
  }
  if (d.fill.value && d.fill.value->size() != d.type.size) {
    corrupt(where, fmt::format("a fill value of {} bytes for elements of {}", d.fill.value->size(),
                               d.type.size));
  }
  return d;
}

ChunkIndex File::chunk_index(const Object& object, const Dataset& dataset) const {
  return read_chunk_index(reader_, dataset.layout, dataset.space,
                          fmt::format("{}: {}: chunk index", name(), object.path));
}

std::vector<VirtualMapping> File::virtual_mappings(const Object& object,
                                                   const Dataset& dataset) const {
  const std::string where = fmt::format("{}: {}: virtual dataset mappings", name(), object.path);
  if (dataset.layout.cls != Layout::Class::kVirtual) corrupt(where, "not a virtual layout");
  if (dataset.layout.address == kUndefined) return {};
  const auto bytes = global_object(dataset.layout.address, dataset.layout.virtual_index, where);
  Cursor in(bytes, where, reader_);
  auto mappings = decode_virtual_mappings(in);
  for (const auto& m : mappings) {
    if (m.target.kind == Selection::Kind::kHyperslab &&
        m.target.rank != dataset.space.dims.size()) {
      corrupt(where, fmt::format("a selection of rank {} in a dataset of rank {}", m.target.rank,
                                 dataset.space.dims.size()));
    }
  }
  return mappings;
}

File::Resolved File::resolve(const std::string& path) const { return resolve_from(path, 0); }

File::Resolved File::resolve_from(const std::string& path, int hops) const {
  if (hops > kMaxLinkHops) {
    fail(ErrorCode::kInvalidMetadata, "{}: {}: more than {} links followed (a cycle?)", name(),
         path, kMaxLinkHops);
  }
  Object current = root();
  std::string current_path = "/";
  for (const std::string& part : split_path(path)) {
    if (current.kind != Object::Kind::kGroup) {
      fail(ErrorCode::kNotFound, "{}: {} is not a group", name(), current_path);
    }
    const auto links = this->links(current);
    const auto it =
        std::lower_bound(links.begin(), links.end(), part,
                         [](const Link& l, const std::string& n) { return l.name < n; });
    if (it == links.end() || it->name != part) {
      fail(ErrorCode::kNotFound, "{}: no object {} in {}", name(), part, current_path);
    }
    const std::string next = join(current_path, part);
    switch (it->kind) {
      case Link::Kind::kHard:
        current = object(it->address, next);
        break;
      case Link::Kind::kSoft: {
        const std::string target =
            it->target.starts_with("/") ? it->target : join(current_path, it->target);
        auto r = resolve_from(target, hops + 1);
        if (r.file.get() != this) {
          // Went through an external link: the rest of the path continues there.
          const std::string rest =
              path.substr(std::min(path.size(), path.find(part) + part.size()));
          return rest.empty() ? r : r.file->resolve_from(r.object.path + rest, hops + 1);
        }
        current = std::move(r.object);
        current.path = next;
        break;
      }
      case Link::Kind::kExternal: {
        if (!open_relative_) {
          fail(ErrorCode::kUnsupported,
               "{}: {} is an external link to {}, which this file's "
               "store cannot open",
               name(), next, it->file);
        }
        std::shared_ptr<File> other = open_relative_(it->file);
        auto r = other->resolve_from(it->target, hops + 1);
        const size_t at = path.find(part);
        const std::string rest = path.substr(std::min(path.size(), at + part.size()));
        if (rest.empty() || rest == "/") return r;
        return r.file->resolve_from(r.object.path + rest, hops + 1);
      }
      case Link::Kind::kUserDefined:
        fail(ErrorCode::kUnsupported, "{}: {} is a user-defined link", name(), next);
    }
    current_path = next;
  }
  return Resolved{shared_from_this(), std::move(current)};
}

std::vector<std::byte> File::global_object(uint64_t collection, uint32_t index,
                                           const std::string& where) const {
  std::lock_guard lock(mutex_);
  if (!global_heap_) global_heap_ = std::make_unique<GlobalHeap>(reader_);
  auto bytes = global_heap_->object(collection, index, where);
  return {bytes.begin(), bytes.end()};
}

std::vector<std::string> File::strings(const Attribute& a, const std::string& where) const {
  if (a.type.cls != Datatype::Class::kString &&
      (a.type.cls != Datatype::Class::kVarLen || !a.type.vlen_string)) {
    fail(ErrorCode::kUnsupported, "{}: attribute {} is not a string", where, a.name);
  }
  return string_elements(a.type, a.data, a.space.count(), where + ": attribute " + a.name);
}

std::vector<std::string> File::string_elements(const Datatype& type,
                                               std::span<const std::byte> data, uint64_t count,
                                               const std::string& where) const {
  std::vector<std::string> out;
  if (type.cls == Datatype::Class::kString) {
    if (type.size == 0 || data.size() / type.size < count) {
      corrupt(where,
              fmt::format("{} bytes for {} strings of {} bytes", data.size(), count, type.size));
    }
    out.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      std::string s(reinterpret_cast<const char*>(data.data()) + i * type.size, type.size);
      if (type.padding == 2) {
        s.erase(s.find_last_not_of(' ') + 1);
      } else {
        const auto nul = s.find('\0');
        if (nul != std::string::npos) s.resize(nul);
      }
      out.push_back(std::move(s));
    }
    return out;
  }
  if (type.cls != Datatype::Class::kVarLen || !type.vlen_string) {
    fail(ErrorCode::kUnsupported, "{}: {} elements are not strings", where, type.class_name());
  }
  Cursor in(data, where, reader_);
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t length = in.u32();
    const uint64_t collection = in.offset();
    const auto index = static_cast<uint32_t>(in.u32());
    if (length == 0 || collection == kUndefined) {
      out.emplace_back();
      continue;
    }
    const std::string element = count == 1 ? where : fmt::format("{}, element {}", where, i);
    auto bytes = global_object(collection, index, element);
    if (length > bytes.size()) {
      corrupt(element,
              fmt::format("a string of {} bytes in a heap object of {}", length, bytes.size()));
    }
    out.emplace_back(reinterpret_cast<const char*>(bytes.data()), static_cast<size_t>(length));
  }
  return out;
}

namespace {

double half_to_double(uint16_t h) {
  const int sign = h >> 15;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    v = mantissa ? std::nan("") : INFINITY;
  } else {
    v = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -v : v;
}

}  // namespace

std::vector<double> numeric_values(const Datatype& type, std::span<const std::byte> data,
                                   const std::string& where) {
  const Datatype& t = type.cls == Datatype::Class::kEnum && type.base ? *type.base : type;
  if (!t.is_numeric() || t.size == 0 || t.size > 8) {
    fail(ErrorCode::kUnsupported, "{}: {} values are not numbers", where, type.class_name());
  }
  const size_t n = data.size() / t.size;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    for (size_t b = 0; b < t.size; ++b) {
      const size_t at = t.big_endian ? t.size - 1 - b : b;
      bits |= static_cast<uint64_t>(data[i * t.size + at]) << (8 * b);
    }
    if (t.cls == Datatype::Class::kFloat) {
      if (t.size == 2) {
        out[i] = half_to_double(static_cast<uint16_t>(bits));
      } else if (t.size == 4) {
        out[i] = std::bit_cast<float>(static_cast<uint32_t>(bits));
      } else if (t.size == 8) {
        out[i] = std::bit_cast<double>(bits);
      } else {
        fail(ErrorCode::kUnsupported, "{}: floats of {} bytes", where, t.size);
      }
    } else if (t.is_signed) {
      const int shift = 64 - 8 * static_cast<int>(t.size);
      out[i] = static_cast<double>(static_cast<int64_t>(bits << shift) >> shift);
    } else {
      out[i] = static_cast<double>(bits);
    }
  }
  return out;
}

}  // namespace chute::h5native
