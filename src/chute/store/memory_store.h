#pragma once
// Values held in memory; for tests and for small generated data.

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "chute/store/store.h"
#include "chute/util/fork_safe_mutex.h"

namespace chute {

class MemoryStore final : public Store {
 public:
  /// Adds or replaces a value.
  void set(std::string key, std::vector<std::byte> value);
  void set(std::string key, std::string_view text);
  void erase(std::string_view key);

  std::optional<uint64_t> size(std::string_view key) const override;
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  std::vector<std::string> list(std::string_view prefix) const override;
  std::string describe() const override { return "memory"; }

 private:
  mutable detail::ForkSafeMutex mutex_;
  std::map<std::string, std::vector<std::byte>, std::less<>> values_;
};

}  // namespace chute
