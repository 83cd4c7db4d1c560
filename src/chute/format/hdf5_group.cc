// Opening an HDF5 group: every dataset below it (opened as arrays, keyed by path relative to the
// group) and its sub-groups, with attributes as JSON. NetCDF-4 dimensions without a variable are
// left out; datasets of types chute does not read are listed apart, with the reason.

#include <optional>
#include <vector>

#include "chute/format/hdf5.h"
#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_netcdf.h"
#include "chute/format/hdf5_strings.h"
#include "chute/format/hdf5_types.h"
#include "chute/util/error.h"

namespace chute {
namespace {

// Why the dataset's data type has no chute equivalent, or nullopt when it has one.
std::optional<std::string> unsupported_type(const h5native::Datatype& type,
                                            const std::string& where) {
  try {
    Endian endian;
    hdf5::data_type(type, &endian, where);
    return std::nullopt;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) throw;
    return std::string(e.what());
  }
}

// The group at `inner` of `opened`; kNotFound naming `where` when it is missing or no group.
h5native::File::Resolved find_group(const hdf5::OpenFile& opened, const std::string& inner,
                                    const std::string& where) {
  h5native::File::Resolved r;
  try {
    r = opened.native->resolve(inner);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kNotFound) fail(ErrorCode::kNotFound, "{}: no such group", where);
    throw hdf5::native_error(e, opened.path, inner, where);
  }
  if (r.object.kind != h5native::Object::Kind::kGroup) {
    fail(ErrorCode::kNotFound, "{}: not a group", where);
  }
  return r;
}

}  // namespace

Group open_hdf5_group(const std::string& file, const std::string& group) {
  const std::string inner = group.empty() ? "/" : group;
  const std::string where = fmt::format("HDF5 file '{}', group '{}'", file, inner);
  Group result;
  result.name = group.empty() ? file : file + "/" + group;
  result.format = "hdf5";
  result.zarr_format = 0;
  const hdf5::OpenFile opened = hdf5::open_file(file);
  const h5native::File::Resolved found = find_group(opened, inner, where);
  const h5native::File& holder = *found.file;
  std::vector<hdf5::Member> members;
  try {
    result.attributes = hdf5::read_attributes(holder, holder.attributes(found.object), where);
    members = hdf5::walk_members(holder, found.object);
  } catch (const Error& e) {
    throw hdf5::native_error(e, holder.name(), found.object.path, where);
  }
  for (const char* hidden : {"_NCProperties", "_nc3_strict", "_IsNetcdf4"}) {
    result.attributes.erase(hidden);
  }
  const std::string prefix = inner == "/" ? "" : inner + "/";
  hdf5::NetcdfScales scales;
  for (hdf5::Member& member : members) {
    if (member.object.kind == h5native::Object::Kind::kGroup) {
      result.groups.push_back(member.path);
      continue;
    }
    const std::string dataset = prefix + member.path;
    const std::string dataset_where = fmt::format("HDF5 file '{}', dataset '{}'", file, dataset);
    try {
      // A netCDF dimension without a coordinate variable is no variable.
      if (hdf5::is_dimension_only(holder, holder.attributes(member.object))) continue;
      // Strings, references and other non-numeric variables are listed apart: the group and
      // every numeric variable in it still open.
      if (is_hdf5_string(holder.dataset(member.object).type)) {
        result.strings.push_back(member.path);
        continue;
      }
      if (auto why = unsupported_type(holder.dataset(member.object).type, dataset_where)) {
        result.unsupported[member.path] = *why;
        continue;
      }
    } catch (const Error& e) {
      throw hdf5::native_error(e, holder.name(), member.object.path, dataset_where);
    }
    result.arrays[member.path] = hdf5::open_dataset(
        opened, file, dataset, hdf5::DatasetRef{found.file, std::move(member.object)}, scales);
  }
  return result;
}

bool is_hdf5_group(const std::string& file, const std::string& group) {
  const std::string inner = group.empty() ? "/" : group;
  try {
    const hdf5::OpenFile opened = hdf5::open_file(file);
    return opened.native->resolve(inner).object.kind == h5native::Object::Kind::kGroup;
  } catch (const Error& e) {
    if (is_transient(e.code())) throw;
    return false;
  }
}

}  // namespace chute
