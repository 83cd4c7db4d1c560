#include "chute/store/memory_store.h"

#include <cstring>
#include <set>

#include "chute/util/error.h"

namespace chute {

void MemoryStore::set(std::string key, std::vector<std::byte> value) {
  std::lock_guard lock(mutex_);
  values_[std::move(key)] = std::move(value);
}

void MemoryStore::set(std::string key, std::string_view text) {
  std::vector<std::byte> bytes(text.size());
  if (!text.empty()) std::memcpy(bytes.data(), text.data(), text.size());
  set(std::move(key), std::move(bytes));
}

void MemoryStore::erase(std::string_view key) {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  if (it != values_.end()) values_.erase(it);
}

std::optional<uint64_t> MemoryStore::size(std::string_view key) const {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second.size();
}

bool MemoryStore::read(std::string_view key, ByteBuffer& out) const {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  if (it == values_.end()) return false;
  out.resize_for_overwrite(it->second.size());
  if (!it->second.empty()) std::memcpy(out.data(), it->second.data(), it->second.size());
  return true;
}

bool MemoryStore::read_range(std::string_view key, uint64_t offset,
                             std::span<std::byte> out) const {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  if (it == values_.end()) return false;
  const auto& value = it->second;
  if (offset > value.size() || out.size() > value.size() - offset) {
    fail(ErrorCode::kCorruptData, "expected {} bytes at offset {} of '{}', the value has {}",
         out.size(), offset, key, value.size());
  }
  if (!out.empty()) std::memcpy(out.data(), value.data() + offset, out.size());
  return true;
}

std::vector<std::string> MemoryStore::list(std::string_view prefix) const {
  std::lock_guard lock(mutex_);
  std::string start = prefix.empty() ? std::string() : std::string(prefix) + "/";
  if (start.size() > 1 && start[start.size() - 2] == '/') start.pop_back();
  std::set<std::string> names;
  for (auto it = values_.lower_bound(start); it != values_.end(); ++it) {
    const std::string& key = it->first;
    if (key.compare(0, start.size(), start) != 0) break;
    std::string rest = key.substr(start.size());
    names.insert(rest.substr(0, rest.find('/')));
  }
  return {names.begin(), names.end()};
}

}  // namespace chute
