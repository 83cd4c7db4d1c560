// Opening one HDF5 dataset: metadata through libhdf5 (under its lock), then a chunk source
// that never calls the library again: the mapped contiguous region, or the chunk table.

#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include "chute/array/chunk_grid.h"
#include "chute/format/contiguous_source.h"
#include "chute/format/hdf5.h"
#include "chute/format/hdf5_btree.h"
#include "chute/format/hdf5_chunk_index.h"
#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_filters.h"
#include "chute/format/hdf5_native/compact_dataset.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/format/hdf5_native/virtual_dataset.h"
#include "chute/format/hdf5_types.h"
#include "chute/util/checked.h"
#include "chute/util/error.h"

namespace chute {
namespace {

/// CHUTE_HDF5_INDEX=btree, =coord or =info selects chute's version 1 B-tree reader or libhdf5's
/// lookups instead of the native reader (for measuring them against each other).
std::atomic<Hdf5IndexMethod> index_method{[] {
  const char* env = std::getenv("CHUTE_HDF5_INDEX");
  const std::string method = env ? env : "";
  if (method == "info") return Hdf5IndexMethod::kByIndex;
  if (method == "coord") return Hdf5IndexMethod::kByCoordinate;
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

std::vector<Hdf5Filter> read_filters(hid_t dcpl) {
  std::vector<Hdf5Filter> filters;
  const int count = H5Pget_nfilters(dcpl);
  for (int i = 0; i < count; ++i) {
    Hdf5Filter filter;
    unsigned flags = 0;
    size_t cd_count = 16;
    filter.client_data.resize(cd_count);
    char name[256] = {};
    unsigned config = 0;
    const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &cd_count,
                                           filter.client_data.data(), sizeof(name), name, &config);
    filter.id = static_cast<int>(id);
    filter.client_data.resize(std::min<size_t>(cd_count, 16));
    filter.name = name;
    filters.push_back(std::move(filter));
  }
  return filters;
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

/// A numeric type of the native reader as a chute type (integers and floats).
DataType native_data_type(const h5native::Datatype& type, Endian* endian,
                          const std::string& where) {
  using Class = h5native::Datatype::Class;
  *endian = type.big_endian ? Endian::kBig : Endian::kLittle;
  const uint32_t size = type.size;
  const bool whole = size == 1 || size == 2 || size == 4 || size == 8;
  if (type.cls == Class::kFixedPoint && whole && type.bit_offset == 0 &&
      type.precision == 8 * size) {
    return DataType{type.is_signed ? DTypeKind::kInt : DTypeKind::kUInt,
                    static_cast<uint8_t>(size)};
  }
  if (type.cls == Class::kFloat && size >= 2 && whole) {
    return DataType{DTypeKind::kFloat, static_cast<uint8_t>(size)};
  }
  fail(ErrorCode::kUnsupported,
       "{}: a {} type of {} bytes is not supported in a dataset libhdf5 1.10 cannot open (read "
       "by chute's native reader: integers and floats only)",
       where, type.class_name(), size);
}

/// Integers of an attribute, exactly (not through doubles).
nlohmann::json native_integers(const h5native::Attribute& a) {
  const uint32_t size = a.type.size;
  nlohmann::json values = nlohmann::json::array();
  for (size_t at = 0; at + size <= a.data.size(); at += size) {
    uint64_t bits = 0;
    for (uint32_t b = 0; b < size; ++b) {
      const uint32_t from = a.type.big_endian ? b : size - 1 - b;
      bits = (bits << 8) | static_cast<uint64_t>(a.data[at + from]);
    }
    if (a.type.is_signed) {
      const int shift = 64 - 8 * static_cast<int>(size);
      values.push_back(static_cast<int64_t>(bits << shift) >> shift);
    } else {
      values.push_back(bits);
    }
  }
  return values;
}

/// The attributes of `object` as read_attributes gives them: numbers, strings and lists.
nlohmann::json native_attributes(const h5native::File& file, const h5native::Object& object,
                                 std::map<std::string, DataType>* types, const std::string& where) {
  using Class = h5native::Datatype::Class;
  nlohmann::json attrs = nlohmann::json::object();
  for (const h5native::Attribute& a : file.attributes(object)) {
    if (a.space.kind == h5native::Dataspace::Kind::kNull || a.space.dims.size() > 1 ||
        a.space.count() > (1u << 20)) {
      continue;
    }
    const uint32_t size = a.type.size;
    const bool whole = size == 1 || size == 2 || size == 4 || size == 8;
    nlohmann::json values = nlohmann::json::array();
    std::optional<DataType> stored;
    try {
      if (a.type.cls == Class::kString || (a.type.cls == Class::kVarLen && a.type.vlen_string)) {
        for (std::string& v : file.strings(a, where)) values.push_back(std::move(v));
      } else if (a.type.cls == Class::kFixedPoint && whole) {
        values = native_integers(a);
        stored = DataType{a.type.is_signed ? DTypeKind::kInt : DTypeKind::kUInt,
                          static_cast<uint8_t>(size)};
      } else if (a.type.cls == Class::kFloat && whole && size >= 2) {
        for (double v : h5native::numeric_values(a.type, a.data, where)) values.push_back(v);
        stored = DataType{DTypeKind::kFloat, static_cast<uint8_t>(size)};
      } else {
        continue;
      }
    } catch (const Error&) {
      continue;  // as read_attributes: attributes that do not read are left out
    }
    const bool scalar = a.space.kind == h5native::Dataspace::Kind::kScalar;
    attrs[a.name] = scalar && values.size() == 1 ? values[0] : values;
    if (types && stored) (*types)[a.name] = *stored;
  }
  return attrs;
}

/// The fill value of a native dataset in native byte order, zeros when none is defined.
std::vector<std::byte> native_fill_value(const h5native::Dataset& info, const DataType& type,
                                         Endian endian) {
  std::vector<std::byte> fill(type.size, std::byte{0});
  if (info.fill.value && info.fill.value->size() == type.size) {
    fill = *info.fill.value;
    if (endian == Endian::kBig) std::reverse(fill.begin(), fill.end());
  }
  return fill;
}

/// open_native() for compact, contiguous and virtual layouts; `metadata` has type and shape.
ArrayPtr open_native_unchunked(const hdf5::OpenFile& opened,
                               const h5native::File::Resolved& resolved,
                               const h5native::Dataset& info, ArrayMetadata metadata, Endian endian,
                               const std::string& name, const std::string& where) {
  const h5native::File& holder = *resolved.file;
  metadata.fill_value = native_fill_value(info, metadata.data_type, endian);
  metadata.attributes =
      native_attributes(holder, resolved.object, &metadata.attribute_types, where);
  hide_netcdf_attributes(metadata);
  auto store = resolved.file.get() == &hdf5::native_file(opened)
                   ? opened.store
                   : std::make_shared<const SingleFileStore>(holder.name());
  switch (info.layout.cls) {
    case h5native::Layout::Class::kVirtual:
      return hdf5::open_virtual(holder, resolved.object, info, holder.name(), std::move(store),
                                std::move(metadata), endian, name, where);
    case h5native::Layout::Class::kCompact:
      return hdf5::open_compact(info, std::move(metadata), endian, name, where);
    case h5native::Layout::Class::kContiguous:
      break;
    case h5native::Layout::Class::kChunked:
      fail(ErrorCode::kInternal, "{}: a chunked layout here", where);
  }
  if (info.layout.address != h5native::kUndefined) {
    const uint64_t offset =
        holder.reader().absolute(info.layout.address, info.layout.size, "contiguous data");
    auto source = std::make_shared<const ContiguousSource>(std::move(store), offset, metadata.shape,
                                                           metadata.data_type, endian, false, name);
    metadata.chunk_shape = source->chunk_shape();
    metadata.codecs = source->codec_specs();
    return std::make_shared<const Array>(std::move(source), std::move(metadata), name);
  }
  // Never written: every element is the fill value.
  metadata.chunk_shape = contiguous_slab_shape(metadata.shape, metadata.data_type.size, false);
  metadata.codecs = hdf5_codec_specs({}, metadata.data_type, endian, 0, where);
  const auto grid = chunk_grid_shape(metadata.shape, metadata.chunk_shape);
  auto chain = CodecChain::create(metadata.codecs, metadata.data_type, metadata.chunk_shape);
  auto source = std::make_shared<const Hdf5ChunkedSource>(std::move(store), metadata.chunk_shape,
                                                          grid, std::vector<CodecChainPtr>{chain},
                                                          std::vector<Hdf5ChunkEntry>{}, where);
  return std::make_shared<const Array>(std::move(source), std::move(metadata), name);
}

/// Opens a chunked dataset through the native reader alone: for datasets whose object header
/// libhdf5 1.10 cannot decode (HDF5 2.0 writes data layout messages of version 5 for filtered
/// datasets under libver "latest"). NetCDF-4 dimensions are not read on this path.
ArrayPtr open_native(const hdf5::OpenFile& opened, const std::string& dataset,
                     const std::string& name, const std::string& where) {
  const h5native::File& file = hdf5::native_file(opened);
  const h5native::File::Resolved resolved = file.resolve(dataset);
  if (resolved.object.kind != h5native::Object::Kind::kDataset) {
    fail(ErrorCode::kNotFound, "{}: not a dataset", where);
  }
  const h5native::File& holder = *resolved.file;
  const h5native::Dataset info = holder.dataset(resolved.object);
  if (info.space.kind != h5native::Dataspace::Kind::kSimple) {
    fail(ErrorCode::kUnsupported, "{}: a dataset without a simple dataspace", where);
  }
  ArrayMetadata metadata;
  metadata.format = "hdf5";
  metadata.zarr_format = 0;
  Endian endian = Endian::kLittle;
  metadata.data_type = native_data_type(info.type, &endian, where);
  for (uint64_t extent : info.space.dims) {
    if (extent > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(ErrorCode::kInvalidMetadata, "{}: an extent of {} does not fit in int64", where, extent);
    }
    metadata.shape.push_back(static_cast<int64_t>(extent));
  }
  if (!checked_product(metadata.shape, static_cast<int64_t>(metadata.data_type.size))) {
    fail(ErrorCode::kInvalidMetadata, "{}: a shape of [{}] holds more than 2^63 bytes", where,
         fmt::join(metadata.shape, ", "));
  }
  if (info.layout.cls != h5native::Layout::Class::kChunked) {
    return open_native_unchunked(opened, resolved, info, std::move(metadata), endian, name, where);
  }
  if (info.layout.chunk.size() != metadata.shape.size()) {
    fail(ErrorCode::kCorruptData, "{}: chunks of rank {} for a dataset of rank {}", where,
         info.layout.chunk.size(), metadata.shape.size());
  }
  for (uint64_t extent : info.layout.chunk) {
    if (extent == 0 || extent > (uint64_t{1} << 32)) {
      fail(ErrorCode::kCorruptData, "{}: a chunk extent of {}", where, extent);
    }
    metadata.chunk_shape.push_back(static_cast<int64_t>(extent));
  }
  // The fill value in native byte order, zeros when none is defined.
  metadata.fill_value.assign(metadata.data_type.size, std::byte{0});
  if (info.fill.value && info.fill.value->size() == metadata.data_type.size) {
    metadata.fill_value = *info.fill.value;
    if (endian == Endian::kBig)
      std::reverse(metadata.fill_value.begin(), metadata.fill_value.end());
  }
  std::vector<Hdf5Filter> filters;
  for (const h5native::Filter& f : info.filters) {
    filters.push_back({f.id, f.name, {f.client_data.begin(), f.client_data.end()}});
  }
  metadata.codecs = hdf5_codec_specs(filters, metadata.data_type, endian, 0, where);
  metadata.attributes =
      native_attributes(holder, resolved.object, &metadata.attribute_types, where);
  hide_netcdf_attributes(metadata);
  const auto grid = chunk_grid_shape(metadata.shape, metadata.chunk_shape);
  if (!chunk_count(grid)) {
    fail(ErrorCode::kInvalidMetadata, "{}: a grid of [{}] chunks cannot be indexed", where,
         fmt::join(grid, ", "));
  }
  std::vector<Hdf5ChunkEntry> entries =
      hdf5::native_chunk_entries(holder, resolved.object, info, grid, metadata.chunk_shape, where);
  // Chunks of a file reached through an external link are read from that file.
  auto store = resolved.file.get() == &file
                   ? opened.store
                   : std::make_shared<const SingleFileStore>(holder.name());
  return chunked_array(std::move(metadata), filters, endian, std::move(entries), grid,
                       std::move(store), name, where);
}

/// A virtual dataset read through its sources (hdf5_native/virtual_dataset.h); its mappings are read natively.
ArrayPtr open_virtual_native(const hdf5::OpenFile& opened, const std::string& dataset,
                             ArrayMetadata metadata, Endian endian, const std::string& name,
                             const std::string& where) {
  try {
    const h5native::File::Resolved resolved = hdf5::native_file(opened).resolve(dataset);
    const h5native::File& holder = *resolved.file;
    return hdf5::open_virtual(holder, resolved.object, holder.dataset(resolved.object),
                              holder.name(), opened.store, std::move(metadata), endian, name,
                              where);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kCorruptData || e.code() == ErrorCode::kInvalidMetadata) {
      throw hdf5::native_error(e, opened.path, dataset, where);
    }
    throw;
  }
}

/// Whether the native reader finds a virtual layout at `dataset` (false when it cannot tell:
/// libhdf5 then opens the dataset as before).
bool native_layout_is_virtual(const hdf5::OpenFile& opened, const std::string& dataset) {
  try {
    const h5native::File::Resolved resolved = hdf5::native_file(opened).resolve(dataset);
    return resolved.object.kind == h5native::Object::Kind::kDataset &&
           resolved.file->dataset(resolved.object).layout.cls == h5native::Layout::Class::kVirtual;
  } catch (const Error&) {
    return false;
  }
}

/// Runs chute's own checks of the dataset's layout message (hdf5_btree.h) before H5Dopen2
/// decodes it: libhdf5 1.10 divides by a zero dimensionality or chunk extent (SIGFPE) where
/// h5py's newer library refuses the file. H5Oget_info_by_name2 with H5O_INFO_BASIC reads where
/// the header is without decoding the layout.
void check_layout_before_open(const hdf5::OpenFile& opened, const std::string& dataset,
                              const std::string& where) {
  H5O_info_t info;
  const herr_t status =
      H5Oget_info_by_name2(opened.file.get(), dataset.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT);
  if (status < 0 || info.type != H5O_TYPE_DATASET) {
    hdf5::take_error_stack();
    return;  // H5Dopen2 says what is wrong
  }
  hdf5::Handle fcpl(H5Fget_create_plist(opened.file.get()));
  size_t offset_size = 0, length_size = 0;
  hsize_t user_block = 0;
  if (!fcpl.valid() || H5Pget_sizes(fcpl.get(), &offset_size, &length_size) < 0 ||
      H5Pget_userblock(fcpl.get(), &user_block) < 0 || user_block != 0) {
    hdf5::take_error_stack();
    return;  // addresses relative to a user block: not read by chute
  }
  hdf5::check_layout_message(*opened.store, info.addr,
                             {static_cast<int>(offset_size), static_cast<int>(length_size)}, where);
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
  const std::string name = dataset.empty() ? file : file + "/" + dataset;
  const std::string where = fmt::format("HDF5 file '{}', dataset '{}'", file, dataset);
  auto lock = hdf5::lock_library();
  if (dataset.empty() || H5Lexists(opened.file.get(), dataset.c_str(), H5P_DEFAULT) <= 0) {
    hdf5::take_error_stack();
    fail(ErrorCode::kNotFound, "{}: no such dataset", where);
  }
  // Virtual datasets are opened natively, before libhdf5 1.10 decodes their mappings (it
  // crashes on some corrupt ones).
  if (native_layout_is_virtual(opened, dataset)) {
    try {
      return open_native(opened, dataset, name, where);
    } catch (const Error& e) {
      throw hdf5::native_error(e, opened.path, dataset, where);
    }
  }
  check_layout_before_open(opened, dataset, where);
  const hid_t opened_id = H5Dopen2(opened.file.get(), dataset.c_str(), H5P_DEFAULT);
  if (opened_id < 0) {
    const std::string stack = hdf5::take_error_stack();
    const std::string refusal =
        where + ": not a dataset libhdf5 1.10 can open (" H5_VERS_INFO "): " + stack;
    // A message version newer than the library's: the native reader reads it.
    if (stack.find("bad version number") == std::string::npos) {
      fail(ErrorCode::kUnsupported, "{}", refusal);
    }
    try {
      return open_native(opened, dataset, name, where);
    } catch (const Error& e) {
      const Error named = hdf5::native_error(e, opened.path, dataset, where);
      throw Error(named.code(), std::string(named.what()) + " (libhdf5 said: " + stack + ")");
    }
  }
  hdf5::Handle dset(opened_id);
  hdf5::Handle type =
      hdf5::check(H5Dget_type(dset.get()), static_cast<int>(ErrorCode::kCorruptData), where);
  hdf5::Handle space =
      hdf5::check(H5Dget_space(dset.get()), static_cast<int>(ErrorCode::kCorruptData), where);
  hdf5::Handle dcpl = hdf5::check(H5Dget_create_plist(dset.get()),
                                  static_cast<int>(ErrorCode::kCorruptData), where);

  ArrayMetadata metadata;
  metadata.format = "hdf5";
  metadata.zarr_format = 0;
  Endian endian = Endian::kLittle;
  metadata.data_type = hdf5::data_type(type.get(), &endian, where);
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (space_class == H5S_NULL) fail(ErrorCode::kUnsupported, "{}: a null dataspace", where);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  metadata.shape.assign(dims.begin(), dims.end());
  for (hsize_t extent : dims) {
    if (extent > static_cast<hsize_t>(std::numeric_limits<int64_t>::max())) {
      fail(ErrorCode::kInvalidMetadata, "{}: an extent of {} does not fit in int64", where, extent);
    }
  }
  if (!checked_product(metadata.shape,
                       std::max<int64_t>(static_cast<int64_t>(metadata.data_type.size), 1))) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: a shape of [{}] elements of {} bytes holds more than 2^63 bytes: it cannot be "
         "indexed",
         where, fmt::join(metadata.shape, ", "), metadata.data_type.size);
  }
  metadata.fill_value = hdf5::fill_value(dcpl.get(), type.get(), metadata.data_type, endian);
  metadata.attributes = hdf5::read_attributes(dset.get(), where, &metadata.attribute_types);
  hide_netcdf_attributes(metadata);
  // NetCDF-4 dimensions: their names, and the current length of each, which an unlimited
  // dimension another variable grew makes longer than this dataset (read as fill past it).
  std::vector<int64_t> netcdf_shape = metadata.shape;
  const auto dimensions = hdf5::dataset_dimensions(opened.file.get(), dset.get(), scales, where);
  for (size_t axis = 0; axis < dimensions.size(); ++axis) {
    if (!dimensions[axis]) continue;
    metadata.dimension_names.resize(metadata.shape.size());
    metadata.dimension_names[axis] = dimensions[axis]->name;
    netcdf_shape[axis] = std::max(netcdf_shape[axis], dimensions[axis]->length);
  }

  if (H5Pget_external_count(dcpl.get()) > 0) {
    fail(ErrorCode::kUnsupported, "{}: external storage (data in other files) is not supported",
         where);
  }
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  auto file_store = opened.store;
  if (layout == H5D_COMPACT) {
    const h5native::File::Resolved resolved = hdf5::native_file(opened).resolve(dataset);
    return hdf5::open_compact(resolved.file->dataset(resolved.object), std::move(metadata), endian,
                              name, where);
  }
  if (layout == H5D_VIRTUAL) {
    metadata.shape = netcdf_shape;
    return open_virtual_native(opened, dataset, std::move(metadata), endian, name, where);
  }
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t offset = H5Dget_offset(dset.get());
    hdf5::take_error_stack();
    if (offset != HADDR_UNDEF) {
      auto source = std::make_shared<const ContiguousSource>(
          file_store, offset, metadata.shape, metadata.data_type, endian, false, name);
      metadata.chunk_shape = source->chunk_shape();
      metadata.codecs = source->codec_specs();
      return std::make_shared<const Array>(std::move(source), std::move(metadata), name);
    }
    // Never written: every element is the fill value.
    metadata.chunk_shape = contiguous_slab_shape(metadata.shape, metadata.data_type.size, false);
    metadata.codecs = hdf5_codec_specs({}, metadata.data_type, endian, 0, where);
    const auto grid = chunk_grid_shape(metadata.shape, metadata.chunk_shape);
    auto chain = CodecChain::create(metadata.codecs, metadata.data_type, metadata.chunk_shape);
    auto source = std::make_shared<const Hdf5ChunkedSource>(file_store, metadata.chunk_shape, grid,
                                                            std::vector<CodecChainPtr>{chain},
                                                            std::vector<Hdf5ChunkEntry>{}, where);
    return std::make_shared<const Array>(std::move(source), std::move(metadata), name);
  }
  if (layout != H5D_CHUNKED) fail(ErrorCode::kUnsupported, "{}: unknown storage layout", where);

  std::vector<hsize_t> chunk(dims.size());
  H5Pget_chunk(dcpl.get(), rank, chunk.data());
  metadata.chunk_shape.assign(chunk.begin(), chunk.end());
  for (int64_t extent : metadata.chunk_shape) {
    if (extent <= 0) {
      fail(ErrorCode::kCorruptData, "{}: chunk shape [{}] has an extent of 0", where,
           fmt::join(metadata.chunk_shape, ", "));
    }
  }
  const std::vector<Hdf5Filter> filters = read_filters(dcpl.get());
  metadata.codecs = hdf5_codec_specs(filters, metadata.data_type, endian, 0, where);
  const auto stored_grid = chunk_grid_shape(metadata.shape, metadata.chunk_shape);
  std::vector<Hdf5ChunkEntry> entries = hdf5::read_chunk_index(
      opened, dset.get(), dataset, stored_grid, metadata.chunk_shape, index_method, where);
  lock.unlock();
  metadata.shape = netcdf_shape;
  return chunked_array(std::move(metadata), filters, endian, std::move(entries), stored_grid,
                       file_store, name, where);
}

}  // namespace chute
