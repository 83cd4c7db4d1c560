#include "chute/format/hdf5_netcdf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "chute/format/hdf5_file.h"
#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

using h5native::Attribute;
using h5native::Datatype;
using Class = h5native::Datatype::Class;

constexpr std::string_view kDimensionOnly = "This is a netCDF dimension but not a netCDF variable";
constexpr std::string_view kNonCoordPrefix = "_nc4_non_coord_";

const Attribute* find(const std::vector<Attribute>& attributes, std::string_view name) {
  for (const Attribute& a : attributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

uint64_t little_endian(std::span<const std::byte> bytes, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t b = 0; b < n; ++b) v |= static_cast<uint64_t>(bytes[at + b]) << (8 * b);
  return v;
}

// Errors of the file's structures end the open; others (an attribute of an unexpected type)
// only leave a dimension unnamed.
template <typename F>
auto quietly(F&& f) -> std::optional<decltype(f())> {
  try {
    return f();
  } catch (const Error& e) {
    if (is_transient(e.code())) throw;
    return std::nullopt;
  }
}

std::optional<std::vector<int64_t>> integer_attribute(const std::vector<Attribute>& attributes,
                                                      std::string_view name) {
  const Attribute* a = find(attributes, name);
  if (!a || a->type.cls != Class::kFixedPoint || a->space.count() > 1024) return std::nullopt;
  return quietly([&] {
    std::vector<int64_t> out;
    for (double v : h5native::numeric_values(a->type, a->data, a->name)) {
      if (!(std::fabs(v) < 9.2e18)) {  // past int64 (a huge uint64): not a dimension id or size
        fail(ErrorCode::kCorruptData, "attribute '{}': {} is no int64", a->name, v);
      }
      out.push_back(static_cast<int64_t>(v));
    }
    return out;
  });
}

const std::vector<uint64_t>& extent_of(const h5native::File& file, uint64_t address,
                                       NetcdfScales& scales) {
  auto it = scales.extents.find(address);
  if (it == scales.extents.end()) {
    std::vector<uint64_t> dims;
    if (auto d = quietly([&] {
          const h5native::Object object = file.object(address, fmt::format("<{}>", address));
          return file.dataset(object).space.dims;
        })) {
      dims = std::move(*d);
    }
    it = scales.extents.emplace(address, std::move(dims)).first;
  }
  return it->second;
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// The name of the object at `address`: a link to it in the group of `near` or one above (where
// netCDF puts dimensions), else anywhere in the file; empty when no link names it.
std::string link_name(const h5native::File& file, uint64_t address, const std::string& near,
                      NetcdfScales& scales) {
  for (std::string group = parent_of(near);; group = parent_of(group)) {
    auto it = scales.links.find(group);
    if (it == scales.links.end()) {
      std::map<uint64_t, std::string> by_address;
      quietly([&] {
        const h5native::File::Resolved r = file.resolve(group);
        if (r.file.get() == &file && r.object.kind == h5native::Object::Kind::kGroup) {
          for (const h5native::Link& l : file.links(r.object)) {
            if (l.kind == h5native::Link::Kind::kHard) by_address.emplace(l.address, l.name);
          }
        }
        return 0;
      });
      it = scales.links.emplace(group, std::move(by_address)).first;
    }
    if (auto found = it->second.find(address); found != it->second.end()) return found->second;
    if (group == "/") break;
  }
  if (!scales.names) {
    scales.names.emplace();
    for (const Member& m : walk_members(file, file.root())) {
      scales.names->emplace(m.object.header.address, m.path.substr(m.path.rfind('/') + 1));
    }
  }
  auto found = scales.names->find(address);
  return found == scales.names->end() ? std::string() : found->second;
}

// The longest extent along axis 0 of the scale and, for every dataset its REFERENCE_LIST
// names, along the axis it is attached by.
int64_t scale_length(const h5native::File& file, uint64_t address,
                     const std::vector<Attribute>& attributes, NetcdfScales& scales) {
  const std::vector<uint64_t>& own = extent_of(file, address, scales);
  int64_t length = own.empty() ? 0 : static_cast<int64_t>(own[0]);
  const Attribute* list = find(attributes, "REFERENCE_LIST");
  if (!list || list->type.cls != Class::kCompound || list->space.count() > (1 << 20)) return length;
  const Datatype::Field* ref = nullptr;
  const Datatype::Field* dim = nullptr;
  for (const Datatype::Field& f : list->type.fields) {
    if (f.type->cls == Class::kReference && f.type->reference_type == 0 && !ref) ref = &f;
    if (f.type->cls == Class::kFixedPoint && !dim) dim = &f;
  }
  if (!ref || !dim || ref->type->size > 8 || dim->type->size > 8 || dim->type->big_endian) {
    return length;
  }
  const size_t size = list->type.size;
  for (size_t at = 0; size > 0 && at + size <= list->data.size(); at += size) {
    const uint64_t target = little_endian(list->data, at + ref->offset, ref->type->size);
    const auto axis = little_endian(list->data, at + dim->offset, dim->type->size);
    const std::vector<uint64_t>& extent = extent_of(file, target, scales);
    if (axis < extent.size()) length = std::max(length, static_cast<int64_t>(extent[axis]));
  }
  return length;
}

const DimensionScale& scale_info(const h5native::File& file, const h5native::Object& scale,
                                 const std::string& near, NetcdfScales& scales,
                                 const std::vector<Attribute>* known_attributes = nullptr) {
  const uint64_t address = scale.header.address;
  auto it = scales.by_address.find(address);
  if (it != scales.by_address.end()) return it->second;
  std::vector<Attribute> read;
  if (!known_attributes) read = file.attributes(scale);
  const std::vector<Attribute>& attributes = known_attributes ? *known_attributes : read;
  DimensionScale info;
  info.name = link_name(file, address, near, scales);
  if (info.name.empty()) {
    // An anonymous scale: its NAME (unless it is netCDF's placeholder text).
    auto name = string_attribute(file, attributes, "NAME");
    if (name && name->rfind(kDimensionOnly, 0) != 0) info.name = *name;
  }
  if (info.name.rfind(kNonCoordPrefix, 0) == 0)
    info.name = info.name.substr(kNonCoordPrefix.size());
  info.length = scale_length(file, address, attributes, scales);
  return scales.by_address.emplace(address, std::move(info)).first->second;
}

const std::map<int64_t, uint64_t>& scales_by_dimid(const h5native::File& file,
                                                   NetcdfScales& scales) {
  if (!scales.by_dimid) {
    scales.by_dimid.emplace();
    for (const Member& m : walk_members(file, file.root())) {
      if (m.object.kind != h5native::Object::Kind::kDataset) continue;
      auto attributes = quietly([&] { return file.attributes(m.object); });
      if (!attributes) continue;
      if (auto dimid = integer_attribute(*attributes, "_Netcdf4Dimid");
          dimid && dimid->size() == 1) {
        scales.by_dimid->emplace((*dimid)[0], m.object.header.address);
      }
    }
  }
  return *scales.by_dimid;
}

// DIMENSION_LIST: one variable-length list of object references per axis.
std::vector<std::optional<DimensionScale>> attached_scales(const h5native::File& file,
                                                           const h5native::Object& dataset,
                                                           const Attribute& list, size_t rank,
                                                           NetcdfScales& scales,
                                                           const std::string& where) {
  const Datatype& type = list.type;
  if (type.cls != Class::kVarLen || type.vlen_string || !type.base ||
      type.base->cls != Class::kReference || type.base->reference_type != 0 ||
      type.base->size == 0 || type.base->size > 8 || list.space.count() != rank) {
    return {};
  }
  const size_t ref_size = type.base->size;
  const size_t offset_size = static_cast<size_t>(file.reader().offset_size());
  const size_t element = 4 + offset_size + 4;
  if (list.data.size() < rank * element) return {};
  std::vector<std::optional<DimensionScale>> dims(rank);
  for (size_t axis = 0; axis < rank; ++axis) {
    const size_t at = axis * element;
    const uint64_t count = little_endian(list.data, at, 4);
    uint64_t collection = little_endian(list.data, at + 4, offset_size);
    const auto index = static_cast<uint32_t>(little_endian(list.data, at + 4 + offset_size, 4));
    if (count == 0) continue;
    if (offset_size < 8 && collection == (uint64_t{1} << (8 * offset_size)) - 1) {
      collection = h5native::kUndefined;
    }
    try {
      const std::vector<std::byte> refs =
          file.global_object(collection, index, where + ": DIMENSION_LIST");
      if (refs.size() < ref_size) {
        fail(ErrorCode::kCorruptData, "{}: DIMENSION_LIST of axis {} holds {} bytes", where, axis,
             refs.size());
      }
      const uint64_t address = little_endian(refs, 0, ref_size);
      const h5native::Object scale = file.object(address, fmt::format("<{}>", address));
      dims[axis] = scale_info(file, scale, dataset.path, scales);
    } catch (const Error& e) {
      if (is_transient(e.code())) throw;
      fail(ErrorCode::kCorruptData, "{}: the dimension scale of axis {} does not open: {}", where,
           axis, e.what());
    }
  }
  return dims;
}

}  // namespace

std::optional<std::string> string_attribute(const h5native::File& file,
                                            const std::vector<Attribute>& attributes,
                                            std::string_view name) {
  const Attribute* a = find(attributes, name);
  if (!a || a->space.count() != 1) return std::nullopt;
  if (a->type.cls == Class::kString) {
    std::string value(reinterpret_cast<const char*>(a->data.data()),
                      std::min<size_t>(a->type.size, a->data.size()));
    value.resize(std::min(value.find('\0'), value.size()));
    return value;
  }
  if (a->type.cls != Class::kVarLen || !a->type.vlen_string) return std::nullopt;
  auto values = quietly([&] { return file.strings(*a, a->name); });
  if (!values || values->size() != 1) return std::nullopt;
  return (*values)[0];
}

bool is_dimension_only(const h5native::File& file, const std::vector<Attribute>& attributes) {
  auto name = string_attribute(file, attributes, "NAME");
  return name && name->rfind(kDimensionOnly, 0) == 0 &&
         string_attribute(file, attributes, "CLASS") == "DIMENSION_SCALE";
}

std::vector<std::optional<DimensionScale>> dataset_dimensions(
    const h5native::File& file, const h5native::Object& dataset, size_t rank,
    const std::vector<Attribute>& attributes, NetcdfScales& scales, const std::string& where) {
  if (rank == 0) return {};
  if (scales.file != &file) {
    scales = NetcdfScales{};
    scales.file = &file;
  }
  if (const Attribute* list = find(attributes, "DIMENSION_LIST")) {
    return attached_scales(file, dataset, *list, rank, scales, where);
  }
  if (string_attribute(file, attributes, "CLASS") != "DIMENSION_SCALE") return {};
  // A coordinate variable is the scale of its first axis; a multi-dimensional one names the
  // others by netCDF dimension id.
  std::vector<std::optional<DimensionScale>> dims(rank);
  dims[0] = scale_info(file, dataset, dataset.path, scales, &attributes);
  if (rank > 1) {
    const auto dimids = integer_attribute(attributes, "_Netcdf4Coordinates");
    if (!dimids || dimids->size() != rank) return dims;
    const auto& by_dimid = scales_by_dimid(file, scales);
    for (size_t axis = 1; axis < rank; ++axis) {
      auto found = by_dimid.find((*dimids)[axis]);
      if (found == by_dimid.end()) continue;
      auto scale =
          quietly([&] { return file.object(found->second, fmt::format("<{}>", found->second)); });
      if (scale) dims[axis] = scale_info(file, *scale, dataset.path, scales);
    }
  }
  return dims;
}

}  // namespace chute::hdf5
