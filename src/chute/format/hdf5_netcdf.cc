#include "chute/format/hdf5_netcdf.h"

#include <algorithm>
#include <cstring>

#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

constexpr std::string_view kDimensionOnly = "This is a netCDF dimension but not a netCDF variable";
constexpr std::string_view kNonCoordPrefix = "_nc4_non_coord_";

bool has_attribute(hid_t object, const char* name) {
  const htri_t exists = H5Aexists(object, name);
  if (exists < 0) take_error_stack();
  return exists > 0;
}

std::vector<hsize_t> extent_of(hid_t dataset) {
  Handle space(H5Dget_space(dataset));
  if (!space.valid()) return {};
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

std::optional<haddr_t> address_of(hid_t object) {
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_BASIC) < 0) {
    take_error_stack();
    return std::nullopt;
  }
  return info.addr;
}

std::string dimension_name(hid_t scale) {
  std::string name;
  const ssize_t size = H5Iget_name(scale, nullptr, 0);
  if (size > 0) {
    name.resize(static_cast<size_t>(size) + 1);
    H5Iget_name(scale, name.data(), name.size());
    name.resize(static_cast<size_t>(size));
    name = name.substr(name.rfind('/') + 1);
  }
  if (name.empty()) {
    // An anonymous scale: its NAME (unless it is netCDF's placeholder text).
    auto attr = string_attribute(scale, "NAME");
    if (attr && attr->rfind(kDimensionOnly, 0) != 0) name = *attr;
  }
  if (name.rfind(kNonCoordPrefix, 0) == 0) name = name.substr(kNonCoordPrefix.size());
  return name;
}

struct ReferenceEntry {
  hobj_ref_t dataset;
  int dimension;
};

// The longest extent along `axis` of the scale and of every dataset its REFERENCE_LIST names.
int64_t scale_length(hid_t scale, size_t axis) {
  const std::vector<hsize_t> own = extent_of(scale);
  int64_t length = axis < own.size() ? static_cast<int64_t>(own[axis]) : 0;
  if (!has_attribute(scale, "REFERENCE_LIST")) return length;
  Handle attr(H5Aopen(scale, "REFERENCE_LIST", H5P_DEFAULT));
  Handle space(attr.valid() ? H5Aget_space(attr.get()) : H5I_INVALID_HID);
  if (!space.valid()) {
    take_error_stack();
    return length;
  }
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count <= 0 || count > (1 << 20)) return length;
  Handle type(H5Tcreate(H5T_COMPOUND, sizeof(ReferenceEntry)));
  H5Tinsert(type.get(), "dataset", HOFFSET(ReferenceEntry, dataset), H5T_STD_REF_OBJ);
  H5Tinsert(type.get(), "dimension", HOFFSET(ReferenceEntry, dimension), H5T_NATIVE_INT);
  std::vector<ReferenceEntry> entries(static_cast<size_t>(count));
  if (H5Aread(attr.get(), type.get(), entries.data()) < 0) {
    take_error_stack();
    return length;
  }
  for (const ReferenceEntry& entry : entries) {
    Handle attached(H5Rdereference2(scale, H5P_DEFAULT, H5R_OBJECT, &entry.dataset));
    if (!attached.valid() || H5Iget_type(attached.get()) != H5I_DATASET) {
      take_error_stack();
      continue;
    }
    const std::vector<hsize_t> extent = extent_of(attached.get());
    if (entry.dimension >= 0 && static_cast<size_t>(entry.dimension) < extent.size()) {
      length = std::max(length, static_cast<int64_t>(extent[static_cast<size_t>(entry.dimension)]));
    }
  }
  return length;
}

const DimensionScale& scale_info(hid_t scale, haddr_t address, NetcdfScales& scales) {
  auto it = scales.by_address.find(address);
  if (it == scales.by_address.end()) {
    it = scales.by_address
             .emplace(address, DimensionScale{dimension_name(scale), scale_length(scale, 0)})
             .first;
  }
  return it->second;
}

std::optional<std::vector<int64_t>> integer_attribute(hid_t object, const char* name) {
  if (!has_attribute(object, name)) return std::nullopt;
  Handle attr(H5Aopen(object, name, H5P_DEFAULT));
  Handle space(attr.valid() ? H5Aget_space(attr.get()) : H5I_INVALID_HID);
  Handle type(attr.valid() ? H5Aget_type(attr.get()) : H5I_INVALID_HID);
  if (!space.valid() || !type.valid() || H5Tget_class(type.get()) != H5T_INTEGER) {
    take_error_stack();
    return std::nullopt;
  }
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0 || count > 1024) return std::nullopt;
  std::vector<int64_t> values(static_cast<size_t>(count));
  if (H5Aread(attr.get(), H5T_NATIVE_INT64, values.data()) < 0) {
    take_error_stack();
    return std::nullopt;
  }
  return values;
}

struct DimidVisit {
  std::map<int64_t, haddr_t>* by_dimid;
  hid_t file;
};

herr_t find_dimids(hid_t, const char* name, const H5O_info_t* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  auto* visit = static_cast<DimidVisit*>(data);
  Handle dataset(H5Dopen2(visit->file, name, H5P_DEFAULT));
  if (!dataset.valid()) {
    take_error_stack();
    return 0;
  }
  if (auto dimid = integer_attribute(dataset.get(), "_Netcdf4Dimid"); dimid && dimid->size() == 1) {
    visit->by_dimid->emplace((*dimid)[0], info->addr);
  }
  return 0;
}

const std::map<int64_t, haddr_t>& scales_by_dimid(hid_t file, NetcdfScales& scales) {
  if (!scales.by_dimid) {
    scales.by_dimid.emplace();
    DimidVisit state{&*scales.by_dimid, file};
    if (H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, find_dimids, &state, H5O_INFO_BASIC) < 0) {
      take_error_stack();
    }
  }
  return *scales.by_dimid;
}

// DIMENSION_LIST: one variable-length list of object references per axis.
std::vector<std::optional<DimensionScale>> attached_scales(hid_t dataset, size_t rank,
                                                           NetcdfScales& scales,
                                                           const std::string& where) {
  std::vector<std::optional<DimensionScale>> dims(rank);
  Handle attr(H5Aopen(dataset, "DIMENSION_LIST", H5P_DEFAULT));
  Handle space(attr.valid() ? H5Aget_space(attr.get()) : H5I_INVALID_HID);
  if (!space.valid() || H5Sget_simple_extent_npoints(space.get()) != static_cast<hssize_t>(rank)) {
    take_error_stack();
    return {};
  }
  Handle type(H5Tvlen_create(H5T_STD_REF_OBJ));
  std::vector<hvl_t> lists(rank);
  if (H5Aread(attr.get(), type.get(), lists.data()) < 0) {
    take_error_stack();
    return {};
  }
  for (size_t axis = 0; axis < rank; ++axis) {
    if (lists[axis].len == 0 || lists[axis].p == nullptr) continue;
    const auto* ref = static_cast<const hobj_ref_t*>(lists[axis].p);
    Handle scale(H5Rdereference2(dataset, H5P_DEFAULT, H5R_OBJECT, ref));
    if (!scale.valid()) {
      const std::string stack = take_error_stack();
      H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, lists.data());
      fail(ErrorCode::kCorruptData, "{}: the dimension scale of axis {} does not open: {}", where,
           axis, stack);
    }
    if (auto address = address_of(scale.get())) {
      dims[axis] = scale_info(scale.get(), *address, scales);
    }
  }
  H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, lists.data());
  return dims;
}

}  // namespace

std::optional<std::string> string_attribute(hid_t object, const char* name) {
  if (!has_attribute(object, name)) return std::nullopt;
  Handle attr(H5Aopen(object, name, H5P_DEFAULT));
  Handle type(attr.valid() ? H5Aget_type(attr.get()) : H5I_INVALID_HID);
  Handle space(attr.valid() ? H5Aget_space(attr.get()) : H5I_INVALID_HID);
  if (!type.valid() || !space.valid() || H5Tget_class(type.get()) != H5T_STRING ||
      H5Sget_simple_extent_npoints(space.get()) != 1) {
    take_error_stack();
    return std::nullopt;
  }
  std::string value;
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    char* text = nullptr;
    if (H5Aread(attr.get(), mem.get(), &text) < 0) {
      take_error_stack();
      return std::nullopt;
    }
    if (text) value = text;
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, &text);
  } else {
    const size_t size = H5Tget_size(type.get());
    value.assign(size, '\0');
    if (H5Aread(attr.get(), type.get(), value.data()) < 0) {
      take_error_stack();
      return std::nullopt;
    }
    value.resize(std::min(value.find('\0'), size));
  }
  return value;
}

bool is_dimension_only(hid_t dataset) {
  auto name = string_attribute(dataset, "NAME");
  return name && name->rfind(kDimensionOnly, 0) == 0 &&
         string_attribute(dataset, "CLASS") == "DIMENSION_SCALE";
}

std::vector<std::optional<DimensionScale>> dataset_dimensions(hid_t file, hid_t dataset,
                                                              NetcdfScales& scales,
                                                              const std::string& where) {
  const size_t rank = extent_of(dataset).size();
  if (rank == 0) return {};
  if (has_attribute(dataset, "DIMENSION_LIST")) {
    return attached_scales(dataset, rank, scales, where);
  }
  if (string_attribute(dataset, "CLASS") != "DIMENSION_SCALE") return {};
  // A coordinate variable is the scale of its first axis; a multi-dimensional one names the
  // others by netCDF dimension id.
  std::vector<std::optional<DimensionScale>> dims(rank);
  if (auto address = address_of(dataset)) dims[0] = scale_info(dataset, *address, scales);
  if (rank > 1) {
    const auto dimids = integer_attribute(dataset, "_Netcdf4Coordinates");
    if (!dimids || dimids->size() != rank) return dims;
    const auto& by_dimid = scales_by_dimid(file, scales);
    for (size_t axis = 1; axis < rank; ++axis) {
      auto found = by_dimid.find((*dimids)[axis]);
      if (found == by_dimid.end()) continue;
      Handle scale(H5Oopen_by_addr(file, found->second));
      if (!scale.valid()) {
        take_error_stack();
        continue;
      }
      dims[axis] = scale_info(scale.get(), found->second, scales);
    }
  }
  return dims;
}

}  // namespace chute::hdf5
