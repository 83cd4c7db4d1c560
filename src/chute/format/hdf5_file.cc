#include "chute/format/hdf5_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <set>
#include <vector>

#include "chute/format/hdf5.h"
#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

constexpr int kMaxGroupDepth = 256;

// libhdf5 takes a shared flock on a file it opens read-only and an exclusive one while it
// writes, failing the open when the other is held; chute asks the same way, so a file h5py or
// netCDF-C is still writing is refused instead of read half-written. HDF5_USE_FILE_LOCKING=FALSE
// turns it off, as it does for libhdf5; file systems without locks are not refused.
void refuse_if_locked(const std::string& path) {
  const char* env = std::getenv("HDF5_USE_FILE_LOCKING");
  if (env && (std::string_view(env) == "FALSE" || std::string_view(env) == "0")) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;  // the store reports what is wrong
  const int status = ::flock(fd, LOCK_SH | LOCK_NB);
  const int error = errno;
  if (status == 0) ::flock(fd, LOCK_UN);
  ::close(fd);
  if (status != 0 && error == EWOULDBLOCK) {
    fail(ErrorCode::kIoError,
         "HDF5 file '{}' is locked: another process is writing it (close it there first, or set "
         "HDF5_USE_FILE_LOCKING=FALSE if it is only read)",
         path);
  }
}

std::string join_path(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

void walk(const h5native::File& file, const h5native::Object& group, const std::string& prefix,
          int depth, std::set<uint64_t>& seen, std::vector<Member>& out) {
  if (depth > kMaxGroupDepth) {
    fail(ErrorCode::kCorruptData, "{}: {}: groups nested more than {} deep", file.name(),
         group.path, kMaxGroupDepth);
  }
  for (const h5native::Link& link : file.links(group)) {
    if (link.kind != h5native::Link::Kind::kHard) continue;
    if (!seen.insert(link.address).second) continue;
    h5native::Object object = file.object(link.address, join_path(group.path, link.name));
    const std::string path = prefix + link.name;
    if (object.kind == h5native::Object::Kind::kGroup) {
      out.push_back({path, object});
      walk(file, object, path + "/", depth + 1, seen, out);
    } else if (object.kind == h5native::Object::Kind::kDataset) {
      out.push_back({path, std::move(object)});
    }
  }
}

/// Integers of an attribute, exactly (not through doubles).
nlohmann::json integers(const h5native::Attribute& a) {
  const uint32_t size = a.type.size;
  nlohmann::json values = nlohmann::json::array();
  for (size_t at = 0; at + size <= a.data.size(); at += size) {
    uint64_t bits = 0;
    for (uint32_t b = 0; b < size; ++b) {
      const uint32_t from = a.type.big_endian ? b : size - 1 - b;
      bits = (bits << 8) | static_cast<uint64_t>(a.data[at + from]);
    }
    if (a.type.is_signed) {
      const int shift = 64 - 8 * static_cast<int>(size);
      values.push_back(static_cast<int64_t>(bits << shift) >> shift);
    } else {
      values.push_back(bits);
    }
  }
  return values;
}

}  // namespace

OpenFile open_file(const std::string& path) {
  OpenFile opened;
  opened.store = std::make_shared<const SingleFileStore>(path);  // kNotFound when missing
  opened.path = path;
  if (!has_hdf5_signature(path)) {
    fail(ErrorCode::kInvalidArgument, "'{}' is not an HDF5 file (no HDF5 signature)", path);
  }
  refuse_if_locked(path);
  const std::string where = fmt::format("HDF5 file '{}'", path);
  try {
    opened.native = h5native::File::open_path(path, opened.store);
  } catch (const Error& e) {
    throw native_error(e, path, "", where);
  }
  const h5native::Superblock& sb = opened.native->superblock();
  const uint64_t size = opened.native->reader().size();
  // libhdf5's test: the end-of-file address, with the user block counted, past the file's size.
  if (sb.end_of_file != h5native::kUndefined && sb.end_of_file > size) {
    fail(ErrorCode::kCorruptData,
         "{} is truncated: its superblock says it ends at byte {}, the file holds {} bytes", where,
         sb.end_of_file, size);
  }
  return opened;
}

std::vector<Member> walk_members(const h5native::File& file, const h5native::Object& group) {
  std::vector<Member> out;
  std::set<uint64_t> seen{group.header.address};
  walk(file, group, "", 0, seen, out);
  return out;
}

nlohmann::json read_attributes(const h5native::File& file,
                               const std::vector<h5native::Attribute>& attributes,
                               const std::string& where, std::map<std::string, DataType>* types) {
  using Class = h5native::Datatype::Class;
  nlohmann::json attrs = nlohmann::json::object();
  for (const h5native::Attribute& a : attributes) {
    if (a.space.dims.size() > 1 || a.space.count() > (1u << 20)) continue;
    const uint32_t size = a.type.size;
    const bool whole = size == 1 || size == 2 || size == 4 || size == 8;
    nlohmann::json values = nlohmann::json::array();
    std::optional<DataType> stored;
    try {
      if (a.type.cls == Class::kString) {
        // As stored, up to the first NUL (padding spaces kept, as h5py and netCDF-C give them).
        for (uint64_t i = 0; size > 0 && (i + 1) * size <= a.data.size(); ++i) {
          std::string s(reinterpret_cast<const char*>(a.data.data()) + i * size, size);
          s.resize(std::min(s.find('\0'), s.size()));
          values.push_back(std::move(s));
        }
      } else if (a.type.cls == Class::kVarLen && a.type.vlen_string) {
        for (std::string& v : file.strings(a, where)) values.push_back(std::move(v));
      } else if (a.type.cls == Class::kFixedPoint && whole) {
        values = integers(a);
        stored = DataType{a.type.is_signed ? DTypeKind::kInt : DTypeKind::kUInt,
                          static_cast<uint8_t>(size)};
      } else if (a.type.cls == Class::kFloat && whole && size >= 2) {
        for (double v : h5native::numeric_values(a.type, a.data, where)) values.push_back(v);
        stored = DataType{DTypeKind::kFloat, static_cast<uint8_t>(size)};
      } else {
        continue;
      }
    } catch (const Error& e) {
      if (is_transient(e.code())) throw;
      continue;  // an attribute that does not read is left out, as libhdf5's reader did
    }
    const bool scalar = a.space.kind == h5native::Dataspace::Kind::kScalar;
    attrs[a.name] = scalar && values.size() == 1 ? values[0] : values;
    if (types && stored) (*types)[a.name] = *stored;
  }
  return attrs;
}

Error native_error(const Error& error, const std::string& file, const std::string& path,
                   const std::string& where) {
  std::string message = error.what();
  if (message.rfind(where, 0) == 0) return error;
  // The native reader names the file and the object ("<file>: <path>: ..."): said once, as
  // every other HDF5 error says it.
  for (const std::string& prefix : {file + ": " + path + ": ", file + ": "}) {
    if (message.rfind(prefix, 0) == 0) {
      message.erase(0, prefix.size());
      break;
    }
  }
  return Error(error.code(), where + ": " + message);
}

}  // namespace chute::hdf5
