// Opening an HDF5 group: every dataset below it (opened as arrays, keyed by relative path) and
// its sub-groups, with attributes as JSON. NetCDF-4 dimensions without a variable are left out;
// datasets of types chute does not read are listed apart, with the reason.

#include <optional>
#include <vector>

#include "chute/format/hdf5.h"
#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_netcdf.h"
#include "chute/format/hdf5_types.h"
#include "chute/util/error.h"

namespace chute {
namespace {

struct Members {
  std::vector<std::string> datasets;
  std::vector<std::string> groups;
};

herr_t visit(hid_t, const char* name, const H5O_info_t* info, void* data) {
  auto* members = static_cast<Members*>(data);
  const std::string path = name;
  if (path == ".") return 0;
  if (info->type == H5O_TYPE_DATASET) members->datasets.push_back(path);
  if (info->type == H5O_TYPE_GROUP) members->groups.push_back(path);
  return 0;
}

// Why the dataset's data type has no chute equivalent, or nullopt when it has one.
std::optional<std::string> unsupported_type(hid_t dataset, const std::string& where) {
  hdf5::Handle type(H5Dget_type(dataset));
  if (!type.valid()) {
    hdf5::take_error_stack();
    return std::nullopt;  // open_dataset reports it
  }
  try {
    Endian endian;
    hdf5::data_type(type.get(), &endian, where);
    return std::nullopt;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) throw;
    return std::string(e.what());
  }
}

}  // namespace

Group open_hdf5_group(const std::string& file, const std::string& group) {
  const std::string inner = group.empty() ? "/" : group;
  const std::string where = fmt::format("HDF5 file '{}', group '{}'", file, inner);
  Group result;
  result.name = group.empty() ? file : file + "/" + group;
  result.format = "hdf5";
  result.zarr_format = 0;
  Members members;
  hdf5::OpenFile opened = hdf5::open_file(file);
  {
    auto lock = hdf5::lock_library();
    if (inner != "/" && H5Lexists(opened.file.get(), inner.c_str(), H5P_DEFAULT) <= 0) {
      hdf5::take_error_stack();
      fail(ErrorCode::kNotFound, "{}: no such group", where);
    }
    hdf5::Handle g = hdf5::check(H5Gopen2(opened.file.get(), inner.c_str(), H5P_DEFAULT),
                                 static_cast<int>(ErrorCode::kNotFound), where + ": not a group");
    result.attributes = hdf5::read_attributes(g.get(), where);
    for (const char* hidden : {"_NCProperties", "_nc3_strict", "_IsNetcdf4"}) {
      result.attributes.erase(hidden);
    }
    hdf5::check_status(
        H5Ovisit2(g.get(), H5_INDEX_NAME, H5_ITER_INC, visit, &members, H5O_INFO_BASIC),
        static_cast<int>(ErrorCode::kCorruptData), where + ": listing members");
  }
  const std::string prefix = inner == "/" ? "" : inner + "/";
  hdf5::NetcdfScales scales;
  for (const std::string& path : members.datasets) {
    const std::string dataset = prefix + path;
    {
      auto lock = hdf5::lock_library();
      hdf5::Handle dset(H5Dopen2(opened.file.get(), dataset.c_str(), H5P_DEFAULT));
      hdf5::take_error_stack();
      // A netCDF dimension without a coordinate variable is no variable.
      if (dset.valid() && hdf5::is_dimension_only(dset.get())) continue;
      // Strings, references and other non-numeric variables are listed apart: the group and
      // every numeric variable in it still open.
      if (dset.valid()) {
        if (auto why = unsupported_type(
                dset.get(), fmt::format("HDF5 file '{}', dataset '{}'", file, dataset))) {
          result.unsupported[path] = *why;
          continue;
        }
      }
    }
    result.arrays[path] = hdf5::open_dataset(opened, file, dataset, scales);
  }
  result.groups = members.groups;
  return result;
}

bool is_hdf5_group(const std::string& file, const std::string& group) {
  const std::string inner = group.empty() ? "/" : group;
  try {
    hdf5::OpenFile opened = hdf5::open_file(file);
    auto lock = hdf5::lock_library();
    if (inner != "/" && H5Lexists(opened.file.get(), inner.c_str(), H5P_DEFAULT) <= 0) {
      hdf5::take_error_stack();
      return false;
    }
    H5O_info_t info;
    const herr_t status =
        H5Oget_info_by_name2(opened.file.get(), inner.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT);
    hdf5::take_error_stack();
    return status >= 0 && info.type == H5O_TYPE_GROUP;
  } catch (const Error& e) {
    if (is_transient(e.code())) throw;
    return false;
  }
}

}  // namespace chute
