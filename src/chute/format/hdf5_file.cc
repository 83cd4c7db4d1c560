#include "chute/format/hdf5_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <optional>
#include <vector>

#include "chute/format/hdf5_native/file.h"
#include "chute/util/error.h"

namespace chute::hdf5 {

OpenFile open_file(const std::string& path) {
  OpenFile opened;
  opened.store = std::make_shared<const SingleFileStore>(path);  // kNotFound when missing
  opened.path = path;
  auto lock = lock_library();
  silence_errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    take_error_stack();
    fail(ErrorCode::kInvalidArgument, "'{}' is not an HDF5 file (no HDF5 signature)", path);
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    const std::string stack = take_error_stack();
    if (stack.find("lock") != std::string::npos) {
      fail(ErrorCode::kIoError,
           "HDF5 file '{}' is locked: another process is writing it (close it there first, or "
           "set HDF5_USE_FILE_LOCKING=FALSE if it is only read): {}",
           path, stack);
    }
    fail(ErrorCode::kIoError, "cannot open HDF5 file '{}' (truncated or corrupt?): {}", path,
         stack);
  }
  opened.file = Handle(file);
  return opened;
}

const h5native::File& native_file(const OpenFile& opened) {
  if (!opened.native) opened.native = h5native::File::open_path(opened.path);
  return *opened.native;
}

namespace {

nlohmann::json read_attribute(hid_t attr, std::optional<DataType>* stored) {
  Handle type(H5Aget_type(attr));
  Handle space(H5Aget_space(attr));
  if (!type.valid() || !space.valid()) return nullptr;
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (count < 0 || count > (1 << 20) || rank > 1) return nullptr;
  const auto n = static_cast<size_t>(count);
  auto shaped = [&](nlohmann::json values) -> nlohmann::json {
    return rank == 0 && values.size() == 1 ? values[0] : values;
  };
  switch (H5Tget_class(type.get())) {
    case H5T_INTEGER: {
      const bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
      const size_t size = H5Tget_size(type.get());
      if (size == 1 || size == 2 || size == 4 || size == 8) {
        *stored =
            DataType{is_signed ? DTypeKind::kInt : DTypeKind::kUInt, static_cast<uint8_t>(size)};
      }
      nlohmann::json values = nlohmann::json::array();
      if (is_signed) {
        std::vector<int64_t> v(n);
        if (H5Aread(attr, H5T_NATIVE_INT64, v.data()) < 0) return nullptr;
        for (auto x : v) values.push_back(x);
      } else {
        std::vector<uint64_t> v(n);
        if (H5Aread(attr, H5T_NATIVE_UINT64, v.data()) < 0) return nullptr;
        for (auto x : v) values.push_back(x);
      }
      return shaped(values);
    }
    case H5T_FLOAT: {
      const size_t size = H5Tget_size(type.get());
      if (size == 2 || size == 4 || size == 8) {
        *stored = DataType{DTypeKind::kFloat, static_cast<uint8_t>(size)};
      }
      std::vector<double> v(n);
      if (H5Aread(attr, H5T_NATIVE_DOUBLE, v.data()) < 0) return nullptr;
      nlohmann::json values = nlohmann::json::array();
      for (auto x : v) values.push_back(x);
      return shaped(values);
    }
    case H5T_STRING: {
      nlohmann::json values = nlohmann::json::array();
      if (H5Tis_variable_str(type.get()) > 0) {
        Handle mem(H5Tcopy(H5T_C_S1));
        H5Tset_size(mem.get(), H5T_VARIABLE);
        H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
        std::vector<char*> v(n, nullptr);
        if (H5Aread(attr, mem.get(), v.data()) < 0) return nullptr;
        for (char* s : v) values.push_back(s ? std::string(s) : std::string());
        H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, v.data());
      } else {
        const size_t size = H5Tget_size(type.get());
        std::vector<char> buffer(n * size);
        if (H5Aread(attr, type.get(), buffer.data()) < 0) return nullptr;
        for (size_t i = 0; i < n; ++i) {
          std::string s(buffer.data() + i * size, size);
          s.resize(s.find('\0') == std::string::npos ? size : s.find('\0'));
          values.push_back(s);
        }
      }
      return shaped(values);
    }
    default:
      return nullptr;
  }
}

}  // namespace

nlohmann::json read_attributes(hid_t object, const std::string& where,
                               std::map<std::string, DataType>* types) {
  auto lock = lock_library();
  nlohmann::json attrs = nlohmann::json::object();
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_NUM_ATTRS) < 0) {
    take_error_stack();
    return attrs;
  }
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    Handle attr(
        H5Aopen_by_idx(object, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT));
    if (!attr.valid()) continue;
    char name[1024] = {};
    H5Aget_name(attr.get(), sizeof(name), name);
    std::optional<DataType> stored;
    nlohmann::json value = read_attribute(attr.get(), &stored);
    if (value.is_null()) continue;
    attrs[name] = std::move(value);
    if (types && stored) (*types)[name] = *stored;
  }
  take_error_stack();
  return attrs;
}

}  // namespace chute::hdf5
