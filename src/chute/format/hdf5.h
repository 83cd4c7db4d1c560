#pragma once
// Opening HDF5 datasets and groups. libhdf5 (Debian's) is used for metadata only, when opening:
// contiguous datasets are read straight out of the mapped file at the dataset's offset, chunked
// ones through their chunk index (read once) with pread and chute's own codecs, so reads run
// in parallel with no library call and no lock.

#include <optional>
#include <string>
#include <utility>

#include "chute/array/array.h"
#include "chute/format/group.h"

namespace chute {

/// Opens dataset `dataset` ("Nbody", "/grp/x") of the HDF5 file at `file`. Throws kNotFound
/// naming file and dataset when either is missing; kUnsupported naming file, dataset and what
/// for external storage, a filter chute does not decode, or a data type
/// other than bool, integers, floats and complex; kCorruptData for a truncated file; kIoError
/// when another process holds the file open for writing.
ArrayPtr open_hdf5(const std::string& file, const std::string& dataset);

/// Opens group `group` ("" or "/" for the root) of the file with all datasets below it (keyed by
/// path relative to the group, "sub/x") and its sub-groups; attributes become JSON.
Group open_hdf5_group(const std::string& file, const std::string& group);

/// True when `group` ("" or "/" for the root) of the HDF5 file at `file` is a group; false when
/// it is a dataset, is missing, or the file does not open.
bool is_hdf5_group(const std::string& file, const std::string& group);

/// True when `file` is a regular file with the HDF5 signature at offset 0, 512, 1024, 2048, ...
bool has_hdf5_signature(const std::string& file);

/// How the chunk index is read at open: kNative (the default: chute's native HDF5 reader walks
/// the index of any kind in one linear pass), kBTree (chute's older reader of the version 1
/// B-tree; other index kinds fall back to kByCoordinate), kByCoordinate
/// (H5Dget_chunk_info_by_coord per grid chunk) or kByIndex (H5Dget_chunk_info per stored chunk).
/// In libhdf5 1.10.8 the last two walk the index on every call: quadratic
/// (docs/design/reading.md).
enum class Hdf5IndexMethod { kNative, kBTree, kByCoordinate, kByIndex };
void set_hdf5_index_method(Hdf5IndexMethod method);

}  // namespace chute
