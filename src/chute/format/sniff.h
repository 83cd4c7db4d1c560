#pragma once
// What formats look at to recognise a path: a few bytes of a local file, and the leading part of
// a path that is a file ("data/era5.nc/t2m" -> "data/era5.nc", "t2m").

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "chute/format/format.h"

namespace chute {

/// Size of the regular file at `path`; nullopt when there is none (a folder, nothing).
std::optional<uint64_t> regular_file_size(const std::string& path);

/// Bytes [offset, offset + n) of the regular file at `path`; nullopt when it is not one or is
/// shorter.
std::optional<std::string> read_file_bytes(const std::string& path, uint64_t offset, size_t n);

/// The first leading part of `path` (ending at a '/' or at the end) that is a regular file
/// `accepts` takes, as (file, the rest after its '/'); nullopt when none.
std::optional<FormatMatch> split_at_file(const std::string& path,
                                         const std::function<bool(const std::string&)>& accepts);

}  // namespace chute
