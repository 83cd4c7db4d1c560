#pragma once
// An HDF5 file opened by chute's native reader (hdf5_native/) for its metadata, next to the same
// file opened for reads (pread and mmap); the objects below a group; attributes as JSON; one
// dataset of it opened as an array. No libhdf5.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chute/array/array.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/format/hdf5_netcdf.h"
#include "chute/store/single_file_store.h"
#include "chute/util/error.h"

namespace chute::hdf5 {

struct OpenFile {
  std::shared_ptr<const SingleFileStore> store;
  std::string path;
  std::shared_ptr<const h5native::File> native;
};

/// Opens `path` read-only. Throws kNotFound when it does not exist, kInvalidArgument when it is
/// not an HDF5 file, kIoError naming it when another process is writing it (its lock is held, as
/// libhdf5 takes it), kCorruptData naming it for a truncated file or a corrupt superblock.
OpenFile open_file(const std::string& path);

/// An object below a group: its path relative to the group ("sub/x") and its header.
struct Member {
  std::string path;
  h5native::Object object;
};

/// Every group and dataset below `group` (itself excluded) reached through hard links, depth
/// first in name order, each object once however many links reach it (as libhdf5's H5Ovisit).
std::vector<Member> walk_members(const h5native::File& file, const h5native::Object& group);

/// `attributes` as a JSON object: numbers (NaN and infinities as such), strings and lists of
/// them; other types, and arrays of more than one dimension, are left out. With `types`, the
/// stored type of each numeric attribute is recorded there.
nlohmann::json read_attributes(const h5native::File& file,
                               const std::vector<h5native::Attribute>& attributes,
                               const std::string& where,
                               std::map<std::string, DataType>* types = nullptr);

/// A dataset found: the file holding it (another one behind an external link) and its header.
struct DatasetRef {
  std::shared_ptr<const h5native::File> file;
  h5native::Object object;
};

/// Opens dataset `dataset` of `opened` (the file at `file`) as open_hdf5 does; `scales` keeps
/// the dimension scales read so far in this file (a group opens each once).
ArrayPtr open_dataset(const OpenFile& opened, const std::string& file, const std::string& dataset,
                      NetcdfScales& scales);
/// The same for a dataset already found (`ref`).
ArrayPtr open_dataset(const OpenFile& opened, const std::string& file, const std::string& dataset,
                      const DatasetRef& ref, NetcdfScales& scales);

/// The native reader's `error` (which names `file` and the object `path`) as an error naming
/// them as the other HDF5 errors do: "<where>: <message>".
Error native_error(const Error& error, const std::string& file, const std::string& path,
                   const std::string& where);

}  // namespace chute::hdf5
