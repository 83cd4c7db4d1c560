#pragma once
// Bytes by key. Keys are '/'-separated paths relative to the store's root ("c/0/1",
// "temp/.zarray"). A missing key is not an error: reads return false / nullopt.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chute/util/byte_buffer.h"

namespace chute {

class Store {
 public:
  virtual ~Store() = default;

  /// Size in bytes of the value at `key`, or nullopt when it does not exist.
  virtual std::optional<uint64_t> size(std::string_view key) const = 0;

  /// Reads the whole value into `out` (resized to fit). Returns false when the key is missing.
  virtual bool read(std::string_view key, ByteBuffer& out) const = 0;

  /// Reads exactly out.size() bytes starting at `offset`. Returns false when the key is missing;
  /// throws kCorruptData when the value is shorter than offset + out.size().
  virtual bool read_range(std::string_view key, uint64_t offset,
                          std::span<std::byte> out) const = 0;

  /// Names (not full keys) of the direct children of `prefix` ("" for the root): files and folders.
  virtual std::vector<std::string> list(std::string_view prefix) const = 0;

  /// Where the store lives, for messages ("/scratch/era5.zarr", "memory").
  virtual std::string describe() const = 0;
};

using StorePtr = std::shared_ptr<const Store>;

/// Joins key parts with '/', skipping empty parts.
std::string join_key(std::string_view a, std::string_view b);

}  // namespace chute
