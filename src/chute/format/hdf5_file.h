#pragma once
// An HDF5 file opened for metadata (libhdf5) next to the same file opened for reads (pread and
// mmap); attributes as JSON; one dataset of it opened as an array.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "chute/array/array.h"
#include "chute/format/hdf5_library.h"
#include "chute/format/hdf5_netcdf.h"
#include "chute/store/single_file_store.h"

namespace chute::h5native {
class File;
}  // namespace chute::h5native

namespace chute::hdf5 {

struct OpenFile {
  Handle file;
  std::shared_ptr<const SingleFileStore> store;
  std::string path;
  /// The same file read natively (for chunk indexes), opened by the first dataset needing it.
  mutable std::shared_ptr<const h5native::File> native;
};

/// `opened`'s native reader, opened on first use (callers hold the library lock).
const h5native::File& native_file(const OpenFile& opened);

/// Opens `path` read-only. Throws kNotFound when it does not exist, kInvalidArgument when it is
/// not an HDF5 file, kIoError naming it when another process is writing it (its lock is held)
/// or libhdf5 cannot open it (a truncated file), with the library's messages.
OpenFile open_file(const std::string& path);

/// The attributes of object `object` as a JSON object: numbers (NaN and infinities as such),
/// strings and lists of them (other types are left out). With `types`, the stored type of each
/// numeric attribute is recorded there.
nlohmann::json read_attributes(hid_t object, const std::string& where,
                               std::map<std::string, DataType>* types = nullptr);

/// Opens dataset `dataset` of `opened` (the file at `file`) as open_hdf5 does; `scales` keeps
/// the dimension scales read so far in this file (a group opens each once).
ArrayPtr open_dataset(const OpenFile& opened, const std::string& file, const std::string& dataset,
                      NetcdfScales& scales);

}  // namespace chute::hdf5
