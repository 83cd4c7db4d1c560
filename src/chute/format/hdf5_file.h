#pragma once
// An HDF5 file opened for metadata (libhdf5) next to the same file opened for reads (pread and
// mmap); and attributes as JSON.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "chute/format/hdf5_library.h"
#include "chute/store/single_file_store.h"

namespace chute::hdf5 {

struct OpenFile {
  Handle file;
  std::shared_ptr<const SingleFileStore> store;
};

/// Opens `path` read-only. Throws kNotFound when it does not exist, kInvalidArgument when it is
/// not an HDF5 file, kIoError naming it when another process is writing it (its lock is held)
/// or libhdf5 cannot open it (a truncated file), with the library's messages.
OpenFile open_file(const std::string& path);

/// The attributes of object `object` as a JSON object: numbers, strings and lists of them
/// (other types are left out).
nlohmann::json read_attributes(hid_t object, const std::string& where);

}  // namespace chute::hdf5
