#pragma once
// An HDF5 file read natively: its tree of groups, datasets and attributes, each dataset's
// datatype, dataspace, fill value, filters, layout and chunk index. Opening reads the
// superblock only; objects are read as they are asked for.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chute/format/hdf5_native/bytes.h"
#include "chute/format/hdf5_native/chunk_index.h"
#include "chute/format/hdf5_native/heaps.h"
#include "chute/format/hdf5_native/messages.h"
#include "chute/format/hdf5_native/object_header.h"
#include "chute/format/hdf5_native/virtual.h"
#include "chute/util/fork_safe_mutex.h"

namespace chute::h5native {

struct Object {
  enum class Kind { kGroup, kDataset, kDatatype };
  Kind kind = Kind::kGroup;
  std::string path;  // as reached, for messages
  ObjectHeader header;
};

struct Dataset {
  Datatype type;
  Dataspace space;
  FillValue fill;
  std::vector<Filter> filters;
  Layout layout;
};

class File : public std::enable_shared_from_this<File> {
 public:
  /// Opens the file stored at `key` of `store` (`name` names it in errors). `open_relative`
  /// opens the targets of external links by the name they hold; by default, none can be.
  static std::shared_ptr<File> open(
      StorePtr store, std::string key, std::string name,
      std::function<std::shared_ptr<File>(const std::string&)> open_relative = {});
  /// Opens a local file; external links are resolved relative to its folder. `store`, when
  /// given, is the file already opened.
  static std::shared_ptr<File> open_path(const std::string& path, StorePtr store = nullptr);

  const Superblock& superblock() const { return superblock_; }
  const FileReader& reader() const { return reader_; }
  const std::string& name() const { return reader_.name(); }

  Object root() const;
  Object object(uint64_t address, const std::string& path) const;
  /// The group's links, sorted by name.
  std::vector<Link> links(const Object& group) const;
  std::vector<Attribute> attributes(const Object& object) const;
  Dataset dataset(const Object& object) const;
  ChunkIndex chunk_index(const Object& object, const Dataset& dataset) const;
  /// The mappings of a virtual dataset (its layout's global heap object).
  std::vector<VirtualMapping> virtual_mappings(const Object& object, const Dataset& dataset) const;

  struct Resolved {
    std::shared_ptr<const File> file;
    Object object;
  };
  /// Follows `path` ("/a/b", "a/b") from the root through hard, soft and external links.
  Resolved resolve(const std::string& path) const;

  /// The bytes of a global heap object (variable-length data).
  std::vector<std::byte> global_object(uint64_t collection, uint32_t index,
                                       const std::string& where) const;
  /// An attribute's elements as strings (fixed or variable-length string types).
  std::vector<std::string> strings(const Attribute& attribute, const std::string& where) const;
  /// The first `count` elements of `data`, of string type `type` (fixed-length: up to the first
  /// NUL, or without trailing spaces when space-padded; variable-length: resolved through the
  /// global heap, a null reference as ""). kCorruptData naming `where` and the element for a
  /// reference the heap does not hold or a length past its object.
  std::vector<std::string> string_elements(const Datatype& type, std::span<const std::byte> data,
                                           uint64_t count, const std::string& where) const;

 private:
  File(StorePtr store, std::string key, std::string name);
  Datatype committed_type(uint64_t address, const std::string& where) const;
  Resolved resolve_from(const std::string& path, int hops) const;

  FileReader reader_;
  Superblock superblock_;
  std::function<std::shared_ptr<File>(const std::string&)> open_relative_;
  mutable detail::ForkSafeMutex mutex_;
  mutable std::unique_ptr<GlobalHeap> global_heap_;
};

/// Numeric elements as doubles (integers, floats of 2, 4 or 8 bytes in either byte order, enum
/// through its base). kUnsupported for other classes.
std::vector<double> numeric_values(const Datatype& type, std::span<const std::byte> data,
                                   const std::string& where);

}  // namespace chute::h5native
