#pragma once
// Local files under a root folder, read with pread() straight into caller-provided memory.

#include <string>

#include "chute/store/store.h"

namespace chute {

class FileStore final : public Store {
 public:
  explicit FileStore(std::string root);

  std::optional<uint64_t> size(std::string_view key) const override;
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  std::vector<std::string> list(std::string_view prefix) const override;
  std::string describe() const override { return root_; }

  const std::string& root() const { return root_; }

 private:
  std::string path_of(std::string_view key) const;
  std::string root_;
};

}  // namespace chute
