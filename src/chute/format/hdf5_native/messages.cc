#include "chute/format/hdf5_native/messages.h"

#include <fmt/format.h>

#include "chute/util/error.h"

namespace chute::h5native {

namespace {

constexpr size_t kMaxRank = 32;

size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

std::vector<std::byte> copy(std::span<const std::byte> s) { return {s.begin(), s.end()}; }

// A null-terminated name, its field padded to a multiple of 8 bytes when `padded`.
std::string padded_name(Cursor& in, bool padded) {
  const auto rest = in.bytes().subspan(in.pos());
  size_t n = 0;
  while (n < rest.size() && rest[n] != std::byte{0}) ++n;
  if (n == rest.size()) in.fail("a name without its terminating NUL");
  std::string name(reinterpret_cast<const char*>(rest.data()), n);
  in.skip(padded ? std::min(pad8(n + 1), rest.size()) : n + 1);
  return name;
}

std::string strip_nul(std::string s) {
  const auto nul = s.find('\0');
  if (nul != std::string::npos) s.resize(nul);
  return s;
}

}  // namespace

bool Datatype::is_numeric() const {
  switch (cls) {
    case Class::kFixedPoint:
    case Class::kFloat:
    case Class::kBitfield:
      return true;
    case Class::kEnum:
      return base && base->is_numeric();
    default:
      return false;
  }
}

std::string Datatype::numpy() const {
  const char order = size == 1 ? '|' : (big_endian ? '>' : '<');
  switch (cls) {
    case Class::kFixedPoint:
      return fmt::format("{}{}{}", order, is_signed ? 'i' : 'u', size);
    case Class::kBitfield:
      return fmt::format("{}u{}", order, size);
    case Class::kFloat:
      return fmt::format("{}f{}", order, size);
    case Class::kString:
      return fmt::format("|S{}", size);
    case Class::kEnum:
      return base ? base->numpy() : "|V0";
    case Class::kVarLen:
    case Class::kReference:
      return "|O";
    case Class::kComplex:
      return fmt::format("{}c{}", base && base->big_endian ? '>' : '<', size);
    case Class::kArray: {
      std::string shape;
      for (size_t i = 0; i < array_dims.size(); ++i) {
        shape += fmt::format("{}{}", i ? "," : "", array_dims[i]);
      }
      return fmt::format("({}){}", shape, base ? base->numpy() : "?");
    }
    default:
      return fmt::format("|V{}", size);
  }
}

std::string Datatype::class_name() const {
  static const char* const names[] = {"fixed-point", "floating-point",  "time",     "string",
                                      "bitfield",    "opaque",          "compound", "reference",
                                      "enum",        "variable-length", "array",    "complex"};
  const auto i = static_cast<size_t>(cls);
  return i < std::size(names) ? names[i] : "unknown";
}

Datatype decode_datatype(Cursor& in, int depth) {
  if (depth > 8) in.fail("datatype nested more than 8 deep");
  Datatype t;
  const auto b0 = in.u8();
  const auto cls = b0 & 0x0F;
  t.version = static_cast<int>(b0 >> 4);
  if (cls > 11) in.fail(fmt::format("unknown datatype class {}", cls));
  if (t.version < 1 || t.version > 5) in.fail(fmt::format("datatype version {}", t.version));
  t.cls = static_cast<Datatype::Class>(cls);
  const auto bits = static_cast<uint32_t>(in.u8() | (in.u8() << 8) | (in.u8() << 16));
  t.size = static_cast<uint32_t>(in.u32());
  switch (t.cls) {
    case Datatype::Class::kFixedPoint:
    case Datatype::Class::kBitfield:
      t.big_endian = bits & 1;
      t.is_signed = t.cls == Datatype::Class::kFixedPoint && (bits & 8);
      t.bit_offset = static_cast<uint16_t>(in.u16());
      t.precision = static_cast<uint16_t>(in.u16());
      if (t.size == 0 || t.size > 16) in.fail(fmt::format("integer of {} bytes", t.size));
      break;
    case Datatype::Class::kFloat:
      t.big_endian = bits & 1;
      if (bits & 0x40) in.fail("VAX floating-point byte order");
      t.sign_location = static_cast<uint8_t>((bits >> 8) & 0xFF);
      t.bit_offset = static_cast<uint16_t>(in.u16());
      t.precision = static_cast<uint16_t>(in.u16());
      t.exponent_location = static_cast<uint8_t>(in.u8());
      t.exponent_size = static_cast<uint8_t>(in.u8());
      t.mantissa_location = static_cast<uint8_t>(in.u8());
      t.mantissa_size = static_cast<uint8_t>(in.u8());
      t.exponent_bias = static_cast<uint32_t>(in.u32());
      if (t.size == 0 || t.size > 16) in.fail(fmt::format("float of {} bytes", t.size));
      break;
    case Datatype::Class::kTime:
      t.big_endian = bits & 1;
      t.precision = static_cast<uint16_t>(in.u16());
      break;
    case Datatype::Class::kString:
      t.padding = static_cast<int>(bits & 0x0F);
      t.charset = static_cast<int>((bits >> 4) & 0x0F);
      break;
    case Datatype::Class::kCompound: {
      t.members = bits & 0xFFFF;
      if (t.version >= 3) {
        if (t.members == 0) in.fail("a compound datatype without members");
      }
      for (uint32_t i = 0; i < t.members; ++i) {
        Datatype::Field field;
        field.name = padded_name(in, t.version < 3);
        if (t.version >= 3) {
          field.offset =
              static_cast<uint32_t>(in.uint(static_cast<size_t>(limit_enc_size(t.size))));
        } else {
          field.offset = static_cast<uint32_t>(in.u32());
        }
        if (t.version == 1) in.skip(1 + 3 + 4 + 4 + 16);  // dimensionality, permutation, sizes
        field.type = std::make_shared<Datatype>(decode_datatype(in, depth + 1));
        if (field.offset > t.size || field.type->size > t.size - field.offset) {
          in.fail(fmt::format("compound member {} of {} bytes at byte {} of {}", field.name,
                              field.type->size, field.offset, t.size));
        }
        t.fields.push_back(std::move(field));
      }
      break;
    }
    case Datatype::Class::kEnum: {
      t.members = bits & 0xFFFF;
      t.base = std::make_shared<Datatype>(decode_datatype(in, depth + 1));
      for (uint32_t i = 0; i < t.members; ++i)
        t.enum_names.push_back(padded_name(in, t.version < 3));
      const uint64_t bytes = uint64_t{t.members} * t.base->size;
      in.need(static_cast<size_t>(bytes));
      t.enum_values = copy(in.take(static_cast<size_t>(bytes)));
      break;
    }
    case Datatype::Class::kReference:
      t.reference_type = static_cast<int>(bits & 0x0F);
      break;
    case Datatype::Class::kVarLen:
      t.vlen_string = (bits & 0x0F) == 1;
      t.padding = static_cast<int>((bits >> 4) & 0x0F);
      t.charset = static_cast<int>((bits >> 8) & 0x0F);
      t.base = std::make_shared<Datatype>(decode_datatype(in, depth + 1));
      break;
    case Datatype::Class::kArray: {
      const auto rank = static_cast<size_t>(in.u8());
      if (rank == 0 || rank > kMaxRank) in.fail(fmt::format("array datatype of rank {}", rank));
      if (t.version < 3) in.skip(3);
      uint64_t count = 1;
      for (size_t i = 0; i < rank; ++i) {
        t.array_dims.push_back(static_cast<uint32_t>(in.u32()));
        count *= t.array_dims.back();
      }
      if (t.version < 3) in.skip(4 * rank);  // permutation, unused
      t.base = std::make_shared<Datatype>(decode_datatype(in, depth + 1));
      if (count * t.base->size != t.size) in.fail("array datatype size disagrees with its base");
      break;
    }
    case Datatype::Class::kComplex:
      t.base = std::make_shared<Datatype>(decode_datatype(in, depth + 1));
      break;
    default:
      break;  // opaque, reference: the size says all a reader needs
  }
  return t;
}

uint64_t Dataspace::count() const {
  if (kind == Kind::kNull) return 0;
  uint64_t n = 1;
  for (uint64_t d : dims) {
    if (d != 0 && n > ~uint64_t{0} / d) return ~uint64_t{0};
    n *= d;
  }
  return n;
}

Dataspace decode_dataspace(Cursor& in) {
  Dataspace s;
  const auto version = in.u8();
  const auto rank = static_cast<size_t>(in.u8());
  const auto flags = in.u8();
  if (rank > kMaxRank) in.fail(fmt::format("dataspace of rank {}", rank));
  if (version == 1) {
    in.skip(5);
    s.kind = rank == 0 ? Dataspace::Kind::kScalar : Dataspace::Kind::kSimple;
  } else if (version == 2) {
    const auto type = in.u8();
    if (type > 2) in.fail(fmt::format("dataspace type {}", type));
    s.kind = static_cast<Dataspace::Kind>(type);
  } else {
    in.fail(fmt::format("dataspace message version {}", version));
  }
  for (size_t i = 0; i < rank; ++i) s.dims.push_back(in.length());
  if (flags & 1) {
    for (size_t i = 0; i < rank; ++i) s.maxdims.push_back(in.length());
  } else {
    s.maxdims = s.dims;
  }
  for (size_t i = 0; i < rank; ++i) {
    if (s.dims[i] == kUndefined) in.fail("a dimension of undefined size");
    if (s.maxdims[i] != kUndefined && s.maxdims[i] < s.dims[i]) {
      in.fail("maximum dimension smaller than the current one");
    }
  }
  return s;
}

FillValue decode_fill_value(Cursor& in) {
  FillValue f;
  f.version = static_cast<int>(in.u8());
  if (f.version == 1 || f.version == 2) {
    f.alloc_time = static_cast<int>(in.u8());
    f.write_time = static_cast<int>(in.u8());
    f.defined = in.u8() != 0;
    if (f.version == 1 || f.defined) {
      const auto n = static_cast<size_t>(in.u32());
      if (n > 0) f.value = copy(in.take(n));
    }
  } else if (f.version == 3) {
    const auto flags = in.u8();
    f.alloc_time = static_cast<int>(flags & 3);
    f.write_time = static_cast<int>((flags >> 2) & 3);
    f.defined = !(flags & 0x10);
    if (flags & 0x20) {
      const auto n = static_cast<size_t>(in.u32());
      f.value = copy(in.take(n));
    }
  } else {
    in.fail(fmt::format("fill value message version {}", f.version));
  }
  return f;
}

FillValue decode_old_fill_value(Cursor& in) {
  FillValue f;
  const auto n = static_cast<size_t>(in.u32());
  f.defined = true;
  if (n > 0) f.value = copy(in.take(n));
  return f;
}

std::vector<Filter> decode_filter_pipeline(Cursor& in) {
  const auto version = in.u8();
  const auto count = static_cast<size_t>(in.u8());
  if (version != 1 && version != 2) in.fail(fmt::format("filter pipeline version {}", version));
  if (count > 32) in.fail(fmt::format("{} filters", count));
  if (version == 1) in.skip(6);
  std::vector<Filter> filters;
  for (size_t i = 0; i < count; ++i) {
    Filter f;
    f.id = static_cast<uint16_t>(in.u16());
    size_t name_length = 0;
    if (version == 1 || f.id >= 256) name_length = static_cast<size_t>(in.u16());
    f.flags = static_cast<uint16_t>(in.u16());
    const auto values = static_cast<size_t>(in.u16());
    if (name_length > 0) {
      f.name = strip_nul(in.text(version == 1 ? pad8(name_length) : name_length));
    }
    in.need(4 * values);
    for (size_t v = 0; v < values; ++v) f.client_data.push_back(static_cast<uint32_t>(in.u32()));
    if (version == 1 && values % 2 == 1) in.skip(4);
    filters.push_back(std::move(f));
  }
  return filters;
}

uint64_t Layout::chunk_bytes() const {
  uint64_t n = element_size;
  for (uint64_t c : chunk) n *= c;
  return n;
}

Layout decode_layout(Cursor& in) {
  Layout l;
  l.version = static_cast<int>(in.u8());
  if (l.version < 1 || l.version > 5) in.fail(fmt::format("data layout version {}", l.version));
  auto set_chunk = [&](const std::vector<uint64_t>& dims) {
    if (dims.size() < 2) in.fail("chunked layout of fewer than 2 dimensions");
    for (uint64_t d : dims) {
      if (d == 0) in.fail("a chunk dimension of 0");
      if (d > (uint64_t{1} << 32)) in.fail(fmt::format("a chunk dimension of {}", d));
    }
    l.chunk.assign(dims.begin(), dims.end() - 1);
    l.element_size = dims.back();
    uint64_t bytes = 1;
    for (uint64_t d : dims) {
      if (bytes > (uint64_t{1} << 40) / d) in.fail("a chunk of more than 2^40 bytes");
      bytes *= d;
    }
  };
  if (l.version < 3) {
    const auto ndims = static_cast<size_t>(in.u8());
    const auto cls = in.u8();
    if (ndims == 0 || ndims > kMaxRank + 1) in.fail(fmt::format("layout of {} dimensions", ndims));
    if (cls > 2) in.fail(fmt::format("layout class {}", cls));
    l.cls = static_cast<Layout::Class>(cls);
    in.skip(5);
    if (l.cls != Layout::Class::kCompact) l.address = in.offset();
    std::vector<uint64_t> dims;
    for (size_t i = 0; i < ndims; ++i) dims.push_back(in.u32());
    if (l.cls == Layout::Class::kChunked) set_chunk(dims);
    if (l.cls == Layout::Class::kCompact) {
      const auto n = static_cast<size_t>(in.u32());
      l.compact_at = in.pos();
      l.compact = copy(in.take(n));
    }
    return l;
  }
  const auto cls = in.u8();
  if (cls > 3) in.fail(fmt::format("layout class {}", cls));
  l.cls = static_cast<Layout::Class>(cls);
  switch (l.cls) {
    case Layout::Class::kCompact: {
      const auto n = static_cast<size_t>(in.u16());
      l.compact_at = in.pos();
      l.compact = copy(in.take(n));
      break;
    }
    case Layout::Class::kContiguous:
      l.address = in.offset();
      l.size = in.length();
      break;
    case Layout::Class::kVirtual:
      l.address = in.offset();
      l.virtual_index = static_cast<uint32_t>(in.u32());
      break;
    case Layout::Class::kChunked: {
      std::vector<uint64_t> dims;
      if (l.version == 3) {
        const auto ndims = static_cast<size_t>(in.u8());
        if (ndims > kMaxRank + 1) in.fail(fmt::format("layout of {} dimensions", ndims));
        l.address = in.offset();
        for (size_t i = 0; i < ndims; ++i) dims.push_back(in.u32());
        set_chunk(dims);
        break;
      }
      l.flags = static_cast<int>(in.u8());
      if (l.flags & ~3) in.fail(fmt::format("chunked layout flags {:#x}", l.flags));
      const auto ndims = static_cast<size_t>(in.u8());
      if (ndims > kMaxRank + 1) in.fail(fmt::format("layout of {} dimensions", ndims));
      const auto width = static_cast<size_t>(in.u8());
      if (width == 0 || width > 8) in.fail(fmt::format("chunk dimensions of {} bytes", width));
      for (size_t i = 0; i < ndims; ++i) dims.push_back(in.uint(width));
      set_chunk(dims);
      const auto index = in.u8();
      if (index < 1 || index > 5) in.fail(fmt::format("chunk index type {}", index));
      l.index = static_cast<Layout::Index>(index);
      switch (l.index) {
        case Layout::Index::kSingle:
          if (l.flags & 2) {
            l.single_filtered_size = in.length();
            l.single_filter_mask = static_cast<uint32_t>(in.u32());
          }
          break;
        case Layout::Index::kFixedArray:
          l.page_bits = static_cast<int>(in.u8());
          if (l.page_bits == 0 || l.page_bits > 32) in.fail("fixed array page bits");
          break;
        case Layout::Index::kExtensibleArray:
          l.ea_max_bits = static_cast<int>(in.u8());
          l.ea_index_elements = static_cast<int>(in.u8());
          l.ea_min_pointers = static_cast<int>(in.u8());
          l.ea_min_elements = static_cast<int>(in.u8());
          l.page_bits = static_cast<int>(in.u8());
          break;
        case Layout::Index::kBtree2:
          l.bt2_node_size = static_cast<uint32_t>(in.u32());
          l.bt2_split = static_cast<int>(in.u8());
          l.bt2_merge = static_cast<int>(in.u8());
          break;
        default:
          break;
      }
      l.address = in.offset();
      break;
    }
  }
  return l;
}

Link decode_link(Cursor& in) {
  Link link;
  const auto version = in.u8();
  if (version != 1) in.fail(fmt::format("link message version {}", version));
  const auto flags = in.u8();
  uint64_t type = 0;
  if (flags & 0x08) type = in.u8();
  if (flags & 0x04) link.creation_order = static_cast<int64_t>(in.u64());
  if (flags & 0x10) in.skip(1);  // charset
  const auto length = static_cast<size_t>(in.uint(size_t{1} << (flags & 3)));
  if (length == 0) in.fail("a link with an empty name");
  link.name = in.text(length);
  if (type == 0) {
    link.address = in.offset();
  } else if (type == 1) {
    link.kind = Link::Kind::kSoft;
    link.target = in.text(in.u16());
  } else if (type == 64) {
    link.kind = Link::Kind::kExternal;
    const auto n = static_cast<size_t>(in.u16());
    Cursor value(in.take(n), in.where());
    value.skip(1);  // version and flags
    std::string rest = value.text(value.remaining());
    const auto nul = rest.find('\0');
    if (nul == std::string::npos) in.fail("external link without a file name terminator");
    link.file = rest.substr(0, nul);
    link.target = strip_nul(rest.substr(nul + 1));
  } else {
    link.kind = Link::Kind::kUserDefined;
  }
  return link;
}

DenseInfo decode_link_info(Cursor& in) {
  DenseInfo d;
  const auto version = in.u8();
  if (version != 0) in.fail(fmt::format("link info message version {}", version));
  const auto flags = in.u8();
  d.creation_order_tracked = flags & 1;
  d.creation_order_indexed = flags & 2;
  if (flags & 1) in.skip(8);
  d.heap = in.offset();
  d.name_index = in.offset();
  if (flags & 2) d.order_index = in.offset();
  return d;
}

DenseInfo decode_attribute_info(Cursor& in) {
  DenseInfo d;
  const auto version = in.u8();
  if (version != 0) in.fail(fmt::format("attribute info message version {}", version));
  const auto flags = in.u8();
  d.creation_order_tracked = flags & 1;
  d.creation_order_indexed = flags & 2;
  if (flags & 1) in.skip(2);
  d.heap = in.offset();
  d.name_index = in.offset();
  if (flags & 2) d.order_index = in.offset();
  return d;
}

SymbolTableInfo decode_symbol_table(Cursor& in) {
  SymbolTableInfo s;
  s.btree = in.offset();
  s.heap = in.offset();
  return s;
}

uint64_t decode_shared_address(Cursor& in) {
  const auto version = in.u8();
  const auto type = in.u8();
  if (version == 1) {
    in.skip(6);
  } else if (version == 3) {
    if (type == 1) {
      fail(ErrorCode::kUnsupported, "{}: messages shared through the file's shared-message heap",
           in.where());
    }
  } else if (version != 2) {
    in.fail(fmt::format("shared message version {}", version));
  }
  return in.offset();
}

Attribute decode_attribute(Cursor& in) {
  Attribute a;
  const auto version = in.u8();
  if (version < 1 || version > 3) in.fail(fmt::format("attribute message version {}", version));
  const auto flags = in.u8();  // reserved in version 1
  const auto name_size = static_cast<size_t>(in.u16());
  const auto type_size = static_cast<size_t>(in.u16());
  const auto space_size = static_cast<size_t>(in.u16());
  if (version == 3) in.skip(1);  // name charset
  auto field = [&](size_t n) { return in.take(version == 1 ? pad8(n) : n); };
  a.name =
      strip_nul(std::string(reinterpret_cast<const char*>(field(name_size).data()), name_size));
  Cursor type(field(type_size), in.where() + ": attribute " + a.name + " datatype",
              in.offset_size(), in.length_size());
  if (version > 1 && (flags & 1)) {
    a.shared_type_address = decode_shared_address(type);
  } else {
    a.type = decode_datatype(type);
  }
  Cursor space(field(space_size), in.where() + ": attribute " + a.name + " dataspace",
               in.offset_size(), in.length_size());
  if (version > 1 && (flags & 2)) {
    fail(ErrorCode::kUnsupported, "{}: attribute {} has a shared dataspace", in.where(), a.name);
  }
  a.space = decode_dataspace(space);
  if (a.shared_type_address == kUndefined) {
    const uint64_t count = a.space.count();
    if (a.type.size != 0 && count > in.remaining() / a.type.size) {
      in.fail(fmt::format("attribute {} holds {} elements of {} bytes in {} bytes", a.name, count,
                          a.type.size, in.remaining()));
    }
    a.data = copy(in.take(static_cast<size_t>(count * a.type.size)));
  } else {
    a.data = copy(in.take(in.remaining()));
  }
  return a;
}

}  // namespace chute::h5native
