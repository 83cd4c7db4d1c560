#include "chute/format/hdf5_strings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "chute/array/chunk_grid.h"
#include "chute/codec/codec.h"
#include "chute/codec/codec_chain.h"
#include "chute/format/format.h"
#include "chute/format/hdf5.h"
#include "chute/format/hdf5_chunk_index.h"
#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_filters.h"
#include "chute/format/hdf5_netcdf.h"
#include "chute/store/open_store.h"
#include "chute/util/checked.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using h5native::Datatype;
using h5native::Layout;

// The stored elements of a chunked dataset, every element of `shape` (row-major, `element`
// bytes each) starting as `fill`.
void read_string_chunks(const h5native::File& holder, const h5native::Object& object,
                        const h5native::Dataset& info, const std::vector<int64_t>& shape,
                        size_t element, const SingleFileStore& store, std::vector<std::byte>& out,
                        const std::string& where) {
  if (out.empty()) return;  // no element: nothing stored is read
  std::vector<int64_t> chunk;
  for (uint64_t extent : info.layout.chunk) {
    if (extent == 0 || extent > (uint64_t{1} << 32)) {
      fail(ErrorCode::kCorruptData, "{}: a chunk extent of {}", where, extent);
    }
    chunk.push_back(static_cast<int64_t>(extent));
  }
  const auto chunk_size = checked_product(chunk, static_cast<int64_t>(element));
  if (!chunk_size || *chunk_size > (int64_t{1} << 31)) {
    fail(ErrorCode::kInvalidMetadata, "{}: string chunks of [{}] elements of {} bytes", where,
         fmt::join(chunk, ", "), element);
  }
  const auto grid = chunk_grid_shape(shape, chunk);
  const auto entries = hdf5::read_chunk_index(holder, object, info, grid, chunk, store,
                                              Hdf5IndexMethod::kNative, where);
  // Shuffle, when present, must be the first filter (applied first on write, undone last);
  // the other filters decode bytes through chute's codecs.
  std::vector<Hdf5Filter> filters;
  bool shuffled = false;
  for (size_t i = 0; i < info.filters.size(); ++i) {
    const h5native::Filter& f = info.filters[i];
    if (f.id == kHdf5Shuffle) {
      if (i != 0) {
        fail(ErrorCode::kUnsupported, "{}: a shuffle filter after another filter on strings",
             where);
      }
      shuffled = true;
      continue;
    }
    filters.push_back({f.id, f.name, {f.client_data.begin(), f.client_data.end()}});
  }
  const int64_t chunk_elements = *chunk_size / static_cast<int64_t>(element);
  const std::vector<int64_t> chunk_bytes = {*chunk_size};
  const DataType bytes_type{DTypeKind::kUInt, 1};
  std::map<uint32_t, std::shared_ptr<const CodecChain>> chains;
  CodecScratch scratch;
  std::vector<std::byte> decoded(static_cast<size_t>(chunk_bytes[0]));
  const h5native::FileReader& reader = holder.reader();
  const size_t rank = shape.size();
  for (const Hdf5ChunkEntry& entry : entries) {
    if (entry.offset == Hdf5ChunkEntry::kMissing) continue;
    const uint32_t mask = entry.chain;
    const uint32_t rest = shuffled ? mask >> 1 : mask;
    auto it = chains.find(rest);
    if (it == chains.end()) {
      try {
        it = chains
                 .emplace(rest,
                          CodecChain::create(hdf5_codec_specs(filters, bytes_type,
                                                              Endian::kNotApplicable, rest, where),
                                             bytes_type, chunk_bytes))
                 .first;
      } catch (const Error& e) {
        throw e.with_context(where);
      }
    }
    if (entry.offset < reader.base()) {
      fail(ErrorCode::kCorruptData, "{}: a chunk at byte {} before the file's base", where,
           entry.offset);
    }
    const auto stored = reader.read(entry.offset - reader.base(), entry.nbytes, "string chunk");
    try {
      it->second->decode(stored, decoded, scratch);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("{}: chunk {}", where, entry.chunk));
    }
    std::vector<std::byte> unshuffled;
    if (shuffled && !(mask & 1u)) {
      unshuffled.resize(decoded.size());
      byte_unshuffle(decoded, unshuffled, element);
    }
    const std::vector<std::byte>& plain = unshuffled.empty() ? decoded : unshuffled;
    // The chunk's first element in the grid, then every element inside the dataset copied.
    std::vector<int64_t> origin(rank);
    int64_t position = entry.chunk;
    for (size_t d = rank; d-- > 0;) {
      origin[d] = (position % grid[d]) * chunk[d];
      position /= grid[d];
    }
    std::vector<int64_t> at(rank, 0);
    for (int64_t i = 0; i < chunk_elements; ++i) {
      int64_t target = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t coordinate = origin[d] + at[d];
        inside = inside && coordinate < shape[d];
        target = target * shape[d] + coordinate;
      }
      if (inside) {
        std::memcpy(out.data() + static_cast<size_t>(target) * element,
                    plain.data() + static_cast<size_t>(i) * element, element);
      }
      for (size_t d = rank; d-- > 0;) {
        if (++at[d] < chunk[d]) break;
        at[d] = 0;
      }
    }
  }
}

StringDataset read_native_strings(const hdf5::OpenFile& opened, const h5native::File& holder,
                                  const h5native::Object& object, const std::string& name,
                                  const std::string& where) {
  if (object.kind != h5native::Object::Kind::kDataset) {
    fail(ErrorCode::kNotFound, "{}: not a dataset", where);
  }
  const h5native::Dataset info = holder.dataset(object);
  if (!is_hdf5_string(info.type)) {
    fail(ErrorCode::kInvalidArgument, "{}: not a string dataset ({})", where,
         info.type.class_name());
  }
  if (info.space.kind == h5native::Dataspace::Kind::kNull) {
    fail(ErrorCode::kUnsupported, "{}: a null dataspace", where);
  }
  StringDataset result;
  result.name = name;
  result.variable_length = info.type.cls == Datatype::Class::kVarLen;
  result.size = result.variable_length ? 0 : info.type.size;
  result.utf8 = info.type.charset == 1;
  const size_t element = info.type.size;
  if (element == 0) fail(ErrorCode::kCorruptData, "{}: strings of 0 bytes", where);
  for (uint64_t extent : info.space.dims) {
    if (extent > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(ErrorCode::kInvalidMetadata, "{}: an extent of {} does not fit in int64", where, extent);
    }
    result.shape.push_back(static_cast<int64_t>(extent));
  }
  const auto total = checked_product(result.shape, static_cast<int64_t>(element));
  if (!total || static_cast<uint64_t>(*total) > holder.reader().size() * 64 + (1u << 20)) {
    // Unwritten strings cost nothing on disk but memory here: refuse what could not be meant.
    fail(ErrorCode::kInvalidMetadata, "{}: [{}] strings of {} bytes are too many to read whole",
         where, fmt::join(result.shape, ", "), element);
  }
  const auto count = static_cast<uint64_t>(*total) / element;
  const std::vector<h5native::Attribute> attributes = holder.attributes(object);
  result.attributes = hdf5::read_attributes(holder, attributes, where);
  for (const char* hidden : {"_Netcdf4Dimid", "_Netcdf4Coordinates", "_nc3_strict"}) {
    result.attributes.erase(hidden);
  }
  if (result.attributes.value("CLASS", "") == "DIMENSION_SCALE") {
    result.attributes.erase("CLASS");
    result.attributes.erase("NAME");
  }
  hdf5::NetcdfScales scales;
  const auto dimensions =
      hdf5::dataset_dimensions(holder, object, result.shape.size(), attributes, scales, where);
  for (size_t axis = 0; axis < dimensions.size() && axis < result.shape.size(); ++axis) {
    if (!dimensions[axis]) continue;
    result.dimension_names.resize(result.shape.size());
    result.dimension_names[axis] = dimensions[axis]->name;
  }

  // Every element starts as the fill value (a fixed-length one's, else zeros: "").
  std::vector<std::byte> raw(static_cast<size_t>(*total), std::byte{0});
  if (!result.variable_length && info.fill.value && info.fill.value->size() == element) {
    for (uint64_t i = 0; i < count; ++i) {
      std::memcpy(raw.data() + i * element, info.fill.value->data(), element);
    }
  }
  const h5native::FileReader& reader = holder.reader();
  switch (info.layout.cls) {
    case Layout::Class::kVirtual:
      fail(ErrorCode::kUnsupported, "{}: a virtual dataset of strings", where);
    case Layout::Class::kCompact:
      if (info.layout.compact.size() != raw.size()) {
        fail(ErrorCode::kCorruptData, "{}: compact data of {} bytes for {} bytes of elements",
             where, info.layout.compact.size(), raw.size());
      }
      raw = info.layout.compact;
      break;
    case Layout::Class::kContiguous:
      if (info.layout.address != h5native::kUndefined && !raw.empty()) {
        if (info.layout.size < raw.size()) {
          fail(ErrorCode::kCorruptData,
               "{}: contiguous storage of {} bytes for {} bytes of elements", where,
               info.layout.size, raw.size());
        }
        raw = reader.read(info.layout.address, raw.size(), "contiguous string data");
      }
      break;
    case Layout::Class::kChunked: {
      if (info.space.kind != h5native::Dataspace::Kind::kSimple) {
        fail(ErrorCode::kCorruptData, "{}: chunked storage of a scalar dataset", where);
      }
      const auto file_store = &holder == opened.native.get()
                                  ? opened.store
                                  : std::make_shared<const SingleFileStore>(holder.name());
      if (info.layout.chunk.size() != result.shape.size()) {
        fail(ErrorCode::kCorruptData, "{}: chunks of rank {} in a dataset of rank {}", where,
             info.layout.chunk.size(), result.shape.size());
      }
      read_string_chunks(holder, object, info, result.shape, element, *file_store, raw, where);
      break;
    }
  }
  result.values = holder.string_elements(info.type, raw, count, where);
  return result;
}

/// read_native_strings of a resolved dataset, its errors named as the file's.
StringDataset read_resolved_strings(const hdf5::OpenFile& opened, const h5native::File::Resolved& r,
                                    const std::string& file, const std::string& dataset,
                                    const std::string& where) {
  try {
    return read_native_strings(opened, *r.file, r.object, file + "/" + dataset, where);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kNotFound) throw;
    throw hdf5::native_error(e, r.file->name(), r.object.path, where);
  }
}

}  // namespace

bool is_hdf5_string(const h5native::Datatype& type) {
  return type.cls == Datatype::Class::kString ||
         (type.cls == Datatype::Class::kVarLen && type.vlen_string);
}

StringDataset read_hdf5_strings(const std::string& file, const std::string& dataset) {
  const std::string where = fmt::format("HDF5 file '{}', dataset '{}'", file, dataset);
  if (dataset.empty() || dataset == "/") fail(ErrorCode::kNotFound, "{}: no such dataset", where);
  const hdf5::OpenFile opened = hdf5::open_file(file);
  h5native::File::Resolved r;
  try {
    r = opened.native->resolve(dataset);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kNotFound) fail(ErrorCode::kNotFound, "{}: no such dataset", where);
    throw hdf5::native_error(e, opened.path, "/" + dataset, where);
  }
  return read_resolved_strings(opened, r, file, dataset, where);
}

std::optional<StringDataset> open_strings(const std::string& path) {
  auto match = hdf5_file_format().recognise(path);
  if (!match || match->member.empty() || is_url(path)) return std::nullopt;
  // Opened and resolved once; what is not a string dataset (or does not open) is the caller's
  // to report, with its own error.
  std::optional<hdf5::OpenFile> opened;
  h5native::File::Resolved r;
  try {
    opened.emplace(hdf5::open_file(match->container));
    r = opened->native->resolve(match->member);
    if (r.object.kind != h5native::Object::Kind::kDataset ||
        !is_hdf5_string(r.file->dataset(r.object).type)) {
      return std::nullopt;
    }
  } catch (const Error&) {
    return std::nullopt;
  }
  const std::string where =
      fmt::format("HDF5 file '{}', dataset '{}'", match->container, match->member);
  return read_resolved_strings(*opened, r, match->container, match->member, where);
}

}  // namespace chute
