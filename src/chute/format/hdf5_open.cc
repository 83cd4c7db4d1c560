// Opening one HDF5 dataset: metadata through chute's native reader (hdf5_native/), then a chunk
// source that reads the file directly: the mapped contiguous (or compact) region, or the chunk
// table read once.

#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <map>

#include "chute/array/chunk_grid.h"
#include "chute/format/contiguous_source.h"
#include "chute/format/hdf5.h"
#include "chute/format/hdf5_chunk_index.h"
#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_filters.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/format/hdf5_native/virtual_dataset.h"
#include "chute/format/hdf5_types.h"
#include "chute/util/checked.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using h5native::Layout;

/// CHUTE_HDF5_INDEX=btree selects chute's older version 1 B-tree reader instead of the native
/// reader's (for measuring them against each other).
std::atomic<Hdf5IndexMethod> index_method{[] {
  const char* env = std::getenv("CHUTE_HDF5_INDEX");
  const std::string method = env ? env : "";
  if (method == "btree") return Hdf5IndexMethod::kBTree;
  return Hdf5IndexMethod::kNative;
}()};

// Attributes netCDF-C and the dimension scale API keep for themselves (netCDF4-python hides
// them too).
void hide_netcdf_attributes(ArrayMetadata& metadata) {
  nlohmann::json& attrs = metadata.attributes;
  std::vector<std::string> hidden = {"_Netcdf4Dimid", "_Netcdf4Coordinates", "_nc3_strict"};
  auto cls = attrs.find("CLASS");
  if (cls != attrs.end() && *cls == "DIMENSION_SCALE") {
    hidden.push_back("CLASS");
    hidden.push_back("NAME");
  }
  for (const std::string& name : hidden) {
    attrs.erase(name);
    metadata.attribute_types.erase(name);
  }
}

// The chunk table of the stored grid placed into a larger grid (chunks past it: never written).
std::vector<Hdf5ChunkEntry> regrid(std::vector<Hdf5ChunkEntry> entries,
                                   const std::vector<int64_t>& from,
                                   const std::vector<int64_t>& to) {
  // Entries hold only stored chunks: move each one's grid position, allocate nothing per chunk.
  std::vector<int64_t> coords(from.size(), 0);
  for (Hdf5ChunkEntry& e : entries) {
    int64_t rest = e.chunk;
    for (size_t d = from.size(); d-- > 0;) {
      coords[d] = rest % from[d];
      rest /= from[d];
    }
    int64_t target = 0;
    for (size_t d = 0; d < to.size(); ++d) target = target * to[d] + coords[d];
    e.chunk = target;
  }
  return entries;
}

/// The array of a chunked dataset whose chunk table `entries` (filter masks in entry.chain)
/// was read for `stored_grid`; metadata.shape may be longer (NetCDF dimensions grown).
ArrayPtr chunked_array(ArrayMetadata metadata, const std::vector<Hdf5Filter>& filters,
                       Endian endian, std::vector<Hdf5ChunkEntry> entries,
                       const std::vector<int64_t>& stored_grid,
                       std::shared_ptr<const SingleFileStore> file_store, const std::string& name,
                       const std::string& where) {
  const auto grid = chunk_grid_shape(metadata.shape, metadata.chunk_shape);
  if (grid != stored_grid) entries = regrid(std::move(entries), stored_grid, grid);

  // One chain per filter mask found (mask 0 first).
  std::vector<CodecChainPtr> chains;
  std::map<uint32_t, uint32_t> chain_of_mask;
  auto chain_for = [&](uint32_t mask) {
    auto [it, inserted] = chain_of_mask.try_emplace(mask, static_cast<uint32_t>(chains.size()));
    if (inserted) {
      try {
        chains.push_back(
            CodecChain::create(hdf5_codec_specs(filters, metadata.data_type, endian, mask, where),
                               metadata.data_type, metadata.chunk_shape));
      } catch (const Error& e) {
        throw e.with_context(where);
      }
    }
    return it->second;
  };
  chain_for(0);
  for (Hdf5ChunkEntry& e : entries) {
    if (e.offset != Hdf5ChunkEntry::kMissing) e.chain = chain_for(e.chain);
  }
  auto source =
      std::make_shared<const Hdf5ChunkedSource>(std::move(file_store), metadata.chunk_shape, grid,
                                                std::move(chains), std::move(entries), where);
  return std::make_shared<const Array>(std::move(source), std::move(metadata), name);
}

/// Elements stored in one region of the file from byte `offset` (absolute), or never written
/// (`offset` nullopt: every element is the fill value).
ArrayPtr contiguous_array(ArrayMetadata metadata, std::optional<uint64_t> offset, Endian endian,
                          std::shared_ptr<const SingleFileStore> file_store,
                          const std::string& name, const std::string& where) {
  if (offset) {
    auto source = std::make_shared<const ContiguousSource>(file_store, *offset, metadata.shape,
                                                           metadata.data_type, endian, false, name);
    metadata.chunk_shape = source->chunk_shape();
    metadata.codecs = source->codec_specs();
    return std::make_shared<const Array>(std::move(source), std::move(metadata), name);
  }
  metadata.chunk_shape = contiguous_slab_shape(metadata.shape, metadata.data_type.size, false);
  metadata.codecs = hdf5_codec_specs({}, metadata.data_type, endian, 0, where);
  const auto grid = chunk_grid_shape(metadata.shape, metadata.chunk_shape);
  auto chain = CodecChain::create(metadata.codecs, metadata.data_type, metadata.chunk_shape);
  auto source = std::make_shared<const Hdf5ChunkedSource>(file_store, metadata.chunk_shape, grid,
                                                          std::vector<CodecChainPtr>{chain},
                                                          std::vector<Hdf5ChunkEntry>{}, where);
  return std::make_shared<const Array>(std::move(source), std::move(metadata), name);
}

/// Opens dataset `object` of `holder` (`opened` itself, or a file an external link reached)
/// through the native reader: type, shape, fill value, attributes, NetCDF-4 dimensions, then
/// the storage.
ArrayPtr open_native(const hdf5::OpenFile& opened, const h5native::File& holder,
                     const h5native::Object& object, const std::string& name,
                     hdf5::NetcdfScales& scales, const std::string& where) {
  if (object.kind != h5native::Object::Kind::kDataset) {
    fail(ErrorCode::kNotFound, "{}: not a dataset", where);
  }
  const h5native::Dataset info = holder.dataset(object);
  const std::vector<h5native::Attribute> attributes = holder.attributes(object);
  ArrayMetadata metadata;
  metadata.format = "hdf5";
  metadata.zarr_format = 0;
  Endian endian = Endian::kLittle;
  metadata.data_type = hdf5::data_type(info.type, &endian, where);
  if (info.space.kind == h5native::Dataspace::Kind::kNull) {
    fail(ErrorCode::kUnsupported, "{}: a null dataspace", where);
  }
  for (uint64_t extent : info.space.dims) {
    if (extent > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(ErrorCode::kInvalidMetadata, "{}: an extent of {} does not fit in int64", where, extent);
    }
    metadata.shape.push_back(static_cast<int64_t>(extent));
  }
  if (!checked_product(metadata.shape,
                       std::max<int64_t>(static_cast<int64_t>(metadata.data_type.size), 1))) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: a shape of [{}] elements of {} bytes holds more than 2^63 bytes: it cannot be "
         "indexed",
         where, fmt::join(metadata.shape, ", "), metadata.data_type.size);
  }
  metadata.fill_value = hdf5::fill_value(info.fill, metadata.data_type, endian);
  const bool nbit = std::any_of(info.filters.begin(), info.filters.end(),
                                [](const h5native::Filter& f) { return f.id == kHdf5Nbit; });
  if (nbit) hdf5::unpack_nbit_fill_value(metadata.fill_value, info.type);
  // An integer that does not fill its bytes keeps padding bits beside its value: only the
  // n-bit filter (which unpacks the value alone) reads it; stored raw it would read as garbage.
  if (!nbit && info.type.cls == h5native::Datatype::Class::kFixedPoint &&
      (info.type.bit_offset != 0 || info.type.precision != 8 * info.type.size)) {
    fail(ErrorCode::kUnsupported,
         "{}: integers of {} bits at bit {} of {}-byte elements, stored without the n-bit "
         "filter, are not supported",
         where, info.type.precision, info.type.bit_offset, info.type.size);
  }
  metadata.attributes = hdf5::read_attributes(holder, attributes, where, &metadata.attribute_types);
  hide_netcdf_attributes(metadata);
  // NetCDF-4 dimensions: their names, and the current length of each, which an unlimited
  // dimension another variable grew makes longer than this dataset (read as fill past it).
  std::vector<int64_t> netcdf_shape = metadata.shape;
  const auto dimensions =
      hdf5::dataset_dimensions(holder, object, metadata.shape.size(), attributes, scales, where);
  for (size_t axis = 0; axis < dimensions.size() && axis < metadata.shape.size(); ++axis) {
    if (!dimensions[axis]) continue;
    metadata.dimension_names.resize(metadata.shape.size());
    metadata.dimension_names[axis] = dimensions[axis]->name;
    netcdf_shape[axis] = std::max(netcdf_shape[axis], dimensions[axis]->length);
  }

  // Chunks and regions of a file reached through an external link are read from that file.
  auto file_store = &holder == opened.native.get()
                        ? opened.store
                        : std::make_shared<const SingleFileStore>(holder.name());
  const h5native::FileReader& reader = holder.reader();
  const uint64_t bytes = static_cast<uint64_t>(
      *checked_product(metadata.shape, static_cast<int64_t>(metadata.data_type.size)));
  switch (info.layout.cls) {
    case Layout::Class::kVirtual:
      // Read through its sources (hdf5_native/virtual_dataset.h), whose mappings select in
      // the stored extent; the NetCDF-4 lengths only lengthen the result.
      return hdf5::open_virtual(holder, object, info, holder.name(), std::move(file_store),
                                std::move(metadata), netcdf_shape, endian, name, where);
    case Layout::Class::kCompact: {
      // The elements lie in the object header itself.
      const h5native::Message* message = nullptr;
      for (const h5native::Message& m : object.header.messages) {
        if (m.type == h5native::kLayoutMessage) message = &m;
      }
      if (info.layout.compact.size() != bytes || !message ||
          message->address == h5native::kUndefined) {
        fail(ErrorCode::kCorruptData, "{}: compact data of {} bytes for {} bytes of elements",
             where, info.layout.compact.size(), bytes);
      }
      const uint64_t offset =
          reader.absolute(message->address + info.layout.compact_at, bytes, "compact data");
      return contiguous_array(std::move(metadata), offset, endian, file_store, name, where);
    }
    case Layout::Class::kContiguous: {
      if (info.layout.address == h5native::kUndefined || bytes == 0) {
        return contiguous_array(std::move(metadata), std::nullopt, endian, file_store, name, where);
      }
      if (info.layout.size < bytes) {
        fail(ErrorCode::kCorruptData, "{}: contiguous storage of {} bytes for {} bytes of elements",
             where, info.layout.size, bytes);
      }
      // Checked by the source: a file shorter than its data is kCorruptData naming it. An
      // address that wraps past 2^64 (with the user block's base) could not be checked there.
      if (info.layout.address > std::numeric_limits<uint64_t>::max() - reader.base() - bytes) {
        fail(ErrorCode::kCorruptData, "{}: contiguous data at byte {} lie past any file", where,
             info.layout.address);
      }
      return contiguous_array(std::move(metadata), reader.base() + info.layout.address, endian,
                              file_store, name, where);
    }
    case Layout::Class::kChunked:
      break;
  }
  if (info.space.kind != h5native::Dataspace::Kind::kSimple) {
    fail(ErrorCode::kCorruptData, "{}: chunked storage of a scalar dataset", where);
  }
  for (uint64_t extent : info.layout.chunk) {
    metadata.chunk_shape.push_back(static_cast<int64_t>(extent));
  }
  std::vector<Hdf5Filter> filters;
  for (const h5native::Filter& f : info.filters) {
    filters.push_back({f.id, f.name, {f.client_data.begin(), f.client_data.end()}});
  }
  metadata.codecs = hdf5_codec_specs(filters, metadata.data_type, endian, 0, where);
  const auto stored_grid = chunk_grid_shape(metadata.shape, metadata.chunk_shape);
  std::vector<Hdf5ChunkEntry> entries = hdf5::read_chunk_index(
      holder, object, info, stored_grid, metadata.chunk_shape, *file_store, index_method, where);
  metadata.shape = netcdf_shape;
  return chunked_array(std::move(metadata), filters, endian, std::move(entries), stored_grid,
                       std::move(file_store), name, where);
}

}  // namespace

void set_hdf5_index_method(Hdf5IndexMethod method) { index_method = method; }

ArrayPtr open_hdf5(const std::string& file, const std::string& dataset) {
  hdf5::OpenFile opened = hdf5::open_file(file);
  hdf5::NetcdfScales scales;
  return hdf5::open_dataset(opened, file, dataset, scales);
}

ArrayPtr hdf5::open_dataset(const OpenFile& opened, const std::string& file,
                            const std::string& dataset, NetcdfScales& scales) {
  const std::string where = fmt::format("HDF5 file '{}', dataset '{}'", file, dataset);
  if (dataset.empty() || dataset == "/") fail(ErrorCode::kNotFound, "{}: no such dataset", where);
  DatasetRef ref;
  try {
    h5native::File::Resolved r = opened.native->resolve(dataset);
    ref = DatasetRef{std::move(r.file), std::move(r.object)};
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kNotFound) fail(ErrorCode::kNotFound, "{}: no such dataset", where);
    throw native_error(e, opened.path, "/" + dataset, where);
  }
  return open_dataset(opened, file, dataset, ref, scales);
}

ArrayPtr hdf5::open_dataset(const OpenFile& opened, const std::string& file,
                            const std::string& dataset, const DatasetRef& ref,
                            NetcdfScales& scales) {
  const std::string name = dataset.empty() ? file : file + "/" + dataset;
  const std::string where = fmt::format("HDF5 file '{}', dataset '{}'", file, dataset);
  try {
    return open_native(opened, *ref.file, ref.object, name, scales, where);
  } catch (const Error& e) {
    throw native_error(e, ref.file->name(), ref.object.path, where);
  }
}

}  // namespace chute
