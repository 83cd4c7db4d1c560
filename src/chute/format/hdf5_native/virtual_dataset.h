#pragma once
// HDF5 virtual datasets read through their sources: each mapping of the layout (read by the
// native reader) becomes a piece of a virtual array (array/array_virtual.h) whose reads are
// reads of the source dataset's own chunks or contiguous ranges, in the same plan.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/array_virtual.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/store/single_file_store.h"
#include "chute/vocab/dtype.h"

namespace chute::hdf5 {

/// One mapping resolved against its source's shape: the piece's axes and runs (its source left
/// null) and which virtual axes its selection leaves unlimited.
struct ResolvedMapping {
  VirtualPiece piece;
  std::vector<bool> unlimited;
};

/// Resolves mapping `m` for a source of `source_shape` in a virtual dataset of
/// `virtual_shape` (its stored extent): unlimited source counts run to the source's extent, an
/// unlimited virtual count selects as many indices as its source. nullopt when it maps nothing.
/// Throws kCorruptData naming `at` for impossible selections, kUnsupported for selections chute
/// does not read (irregular hyperslabs, different shapes, more than 2^20 blocks on an axis).
std::optional<ResolvedMapping> resolve_mapping(const h5native::VirtualMapping& m,
                                               std::span<const int64_t> source_shape,
                                               std::span<const int64_t> virtual_shape,
                                               const std::string& at);

/// Opens the virtual dataset `object` of `file` (`info`: its native description, a virtual
/// layout). `path` is the file's path on disk: source files are found relative to it as HDF5
/// does ("." is the file itself; a relative name is looked for under $HDF5_VDS_PREFIX, then
/// beside the file, then from the working directory; an absolute one as is, then beside the
/// file; "%%" stands for "%"). `metadata` holds the dataset's type, fill value (in native
/// order, as `endian` says it is stored), attributes and dimension names; its shape is the
/// stored one, and along unlimited axes becomes the extent the sources give (HDF5's "last
/// available" view). `at_least` (empty, or one length per axis: the NetCDF-4 dimensions'
/// lengths) then lengthens axes past that extent, read as the fill value, as for any other
/// layout; the mappings are resolved against the dataset's own extent. A missing source file
/// or dataset reads as the fill value and is reported once on stderr; any other error opening a
/// source is rethrown naming the virtual dataset, the source file and the source dataset.
ArrayPtr open_virtual(const h5native::File& file, const h5native::Object& object,
                      const h5native::Dataset& info, const std::string& path,
                      std::shared_ptr<const SingleFileStore> file_store, ArrayMetadata metadata,
                      std::span<const int64_t> at_least, Endian endian, const std::string& name,
                      const std::string& where);

}  // namespace chute::hdf5
