#pragma once
// Opening HDF5 datasets and groups (NetCDF-4 files too) with chute's native reader of the HDF5
// file format, no libhdf5: contiguous and compact datasets are read straight out of the mapped
// file, chunked ones through their chunk index (read once) with pread and chute's own codecs, so
// reads run in parallel with no library call and no lock.

#include <optional>
#include <string>
#include <utility>

#include "chute/array/array.h"
#include "chute/format/group.h"

namespace chute {

/// Opens dataset `dataset` ("Nbody", "/grp/x") of the HDF5 file at `file`. Throws kNotFound
/// naming file and dataset when either is missing; kUnsupported naming file, dataset and what
/// for external storage, a filter chute does not decode, or a data type
/// other than bool, integers, floats and complex; kCorruptData naming file, dataset and
/// structure for a truncated or corrupt file; kIoError
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
/// the index of any kind in one linear pass) or kBTree (chute's older reader of the version 1
/// B-tree; other index kinds are read natively), for comparing the two.
enum class Hdf5IndexMethod { kNative, kBTree };
void set_hdf5_index_method(Hdf5IndexMethod method);

}  // namespace chute
