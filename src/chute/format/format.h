#pragma once
// The format seam. Each format chute reads is one Format: what it recognises in a path (a
// signature in a file, a folder holding its metadata, a file name) and how it opens arrays and
// groups there. formats.cc lists them in the order they are asked; open.h's functions give a
// path to the first that recognises it. A new format is one folder with a Format and one line
// in that list.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "chute/format/group.h"
#include "chute/store/caching_store.h"

namespace chute {

/// What a format recognised in a path.
struct FormatMatch {
  std::string container;  // the leading part it opens (a file; the store for Zarr)
  std::string member;     // the path inside it ("" for the container itself)
};

class Format {
 public:
  virtual ~Format() = default;
  /// Short lower-case name ("zarr", "hdf5", "npy"), as ArrayMetadata::format and Group::format.
  virtual std::string_view name() const = 0;
  /// Whether `path` (a local path or a URL, without trailing '/') is, or lies inside, something
  /// of this format. Cheap: reads at most a few bytes of a file or looks at a name.
  virtual std::optional<FormatMatch> recognise(const std::string& path) const = 0;
  virtual ArrayPtr open_array(const FormatMatch& match, const std::string& path,
                              const CacheOptions& cache) const = 0;
  virtual Group open_group(const FormatMatch& match, const std::string& path,
                           const CacheOptions& cache) const = 0;
  /// Whether the match names a group; never throws for "no such node".
  virtual bool is_group(const FormatMatch& match, const std::string& path) const = 0;
};

/// The formats chute reads, in the order they are asked.
std::span<const Format* const> formats();

/// The first format that recognises `path` (trailing '/' stripped) and its match. Zarr, asked
/// last, takes every path the others leave (a store that may not exist yet reports itself).
std::pair<const Format*, FormatMatch> find_format(const std::string& path);

/// The built-in formats, each defined beside its opener.
const Format& npy_file_format();
const Format& hdf5_file_format();
const Format& reference_set_format();
const Format& zarr_store_format();

}  // namespace chute
