#include "chute/store/reference_store.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>

#include "chute/store/file_store.h"
#include "chute/store/open_store.h"
#include "chute/store/single_file_store.h"
#include "chute/util/error.h"
#include "chute/util/fork_safe_mutex.h"
#include "chute/util/interrupt.h"

namespace chute {

namespace {

std::string strip_file_scheme(std::string url) {
  if (url.starts_with("file://")) url.erase(0, 7);
  return url;
}

// "a/b/c.nc" -> ("a/b", "c.nc"); "c.nc" -> (".", "c.nc"); a URL splits at its last '/'.
std::pair<std::string, std::string> split_dir(const std::string& location) {
  const size_t slash = location.rfind('/');
  if (slash == std::string::npos) return {".", location};
  if (slash == 0) return {"/", location.substr(1)};
  return {location.substr(0, slash), location.substr(slash + 1)};
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

detail::ForkSafeMutex g_registry_mutex;
std::map<std::string, StorePtr>& reference_registry() {
  static std::map<std::string, StorePtr> sets;
  return sets;
}

StorePtr registered(const std::string& location) {
  std::lock_guard lock(g_registry_mutex);
  auto it = reference_registry().find(location);
  return it == reference_registry().end() ? nullptr : it->second;
}

}  // namespace

struct ReferenceStore::Stores {
  detail::ForkSafeMutex mutex;
  std::map<std::string, StorePtr> by_dir;
  std::vector<StorePtr> by_target;
};

ReferenceStore::ReferenceStore(std::vector<Reference> references, std::string name,
                               std::string base_dir)
    : name_(std::move(name)), stores_(std::make_shared<Stores>()) {
  std::map<std::string, int32_t> target_index;
  InterruptPoll poll;
  for (Reference& ref : references) {
    poll();
    Entry entry;
    if (ref.url.empty()) {
      entry.data = std::move(ref.data);
    } else {
      std::string url = strip_file_scheme(std::move(ref.url));
      if (!is_url(url) && !url.starts_with('/') && !base_dir.empty()) {
        url = base_dir + "/" + url;
      }
      auto [it, added] = target_index.try_emplace(url, static_cast<int32_t>(targets_.size()));
      if (added) {
        auto [dir, file] = split_dir(url);
        targets_.push_back({url, std::move(dir), std::move(file)});
      }
      entry.target = it->second;
      entry.offset = ref.offset;
      entry.length = ref.length;
    }
    entries_.insert_or_assign(std::move(ref.key), std::move(entry));
  }
  stores_->by_target.resize(targets_.size());
}

const ReferenceStore::Entry* ReferenceStore::find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

const Store& ReferenceStore::target_store(int32_t t) const {
  std::lock_guard lock(stores_->mutex);
  StorePtr& store = stores_->by_target[static_cast<size_t>(t)];
  if (!store) {
    const Target& target = targets_[static_cast<size_t>(t)];
    if (!is_url(target.url)) {
      // A local file kept open: no path lookup per read (a store over its folder would stat).
      store = std::make_shared<const SingleFileStore>(target.url);
    } else {
      StorePtr& shared = stores_->by_dir[target.dir];
      if (!shared) shared = open_store(target.dir);
      store = shared;
    }
  }
  return *store;
}

std::exception_ptr ReferenceStore::name_target(std::string_view key, const Entry& entry,
                                               std::exception_ptr error) const {
  const std::string context =
      entry.length ? fmt::format("reference file '{}': key '{}' -> '{}' bytes [{}, {})", name_, key,
                                 targets_[static_cast<size_t>(entry.target)].url, entry.offset,
                                 entry.offset + *entry.length)
                   : fmt::format("reference file '{}': key '{}' -> '{}'", name_, key,
                                 targets_[static_cast<size_t>(entry.target)].url);
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    const char* why =
        e.code() == ErrorCode::kCorruptData ? " (the range runs past the target's end?)" : "";
    return std::make_exception_ptr(
        Error(e.code(), fmt::format("{}: {}{}", context, e.what(), why)));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(
        Error(ErrorCode::kIoError, fmt::format("{}: {}", context, e.what())));
  } catch (...) {
    return error;
  }
}

void ReferenceStore::fail_missing_target(std::string_view key, const Entry& entry) const {
  fail(ErrorCode::kNotFound, "reference file '{}': key '{}' refers to '{}', which does not exist",
       name_, key, targets_[static_cast<size_t>(entry.target)].url);
}

std::optional<uint64_t> ReferenceStore::size(std::string_view key) const {
  const Entry* entry = find(key);
  if (!entry) return std::nullopt;
  if (entry->target < 0) return entry->data.size();
  if (entry->length) return *entry->length;
  std::optional<uint64_t> size;
  try {
    size = target_store(entry->target).size(targets_[static_cast<size_t>(entry->target)].file);
  } catch (...) {
    std::rethrow_exception(name_target(key, *entry, std::current_exception()));
  }
  if (!size) fail_missing_target(key, *entry);
  return size;
}

bool ReferenceStore::read(std::string_view key, ByteBuffer& out) const {
  const Entry* entry = find(key);
  if (!entry) return false;
  if (entry->target < 0) {
    out.resize(entry->data.size());
    if (!entry->data.empty()) std::memcpy(out.data(), entry->data.data(), entry->data.size());
    return true;
  }
  if (entry->length) {
    out.resize_for_overwrite(static_cast<size_t>(*entry->length));
    return read_range(key, 0, out.span());
  }
  bool found = false;
  try {
    found =
        target_store(entry->target).read(targets_[static_cast<size_t>(entry->target)].file, out);
  } catch (...) {
    std::rethrow_exception(name_target(key, *entry, std::current_exception()));
  }
  if (!found) fail_missing_target(key, *entry);
  return true;
}

bool ReferenceStore::read_range(std::string_view key, uint64_t offset,
                                std::span<std::byte> out) const {
  const Entry* entry = find(key);
  if (!entry) return false;
  const uint64_t limit =
      entry->target < 0 ? entry->data.size() : entry->length.value_or(UINT64_MAX);
  if (offset > limit || out.size() > limit - offset) {
    fail(ErrorCode::kCorruptData,
         "reference file '{}': key '{}' holds {} bytes, asked for [{}, {})", name_, key, limit,
         offset, offset + out.size());
  }
  if (entry->target < 0) {
    if (!out.empty()) std::memcpy(out.data(), entry->data.data() + offset, out.size());
    return true;
  }
  bool found = false;
  try {
    found = target_store(entry->target)
                .read_range(targets_[static_cast<size_t>(entry->target)].file,
                            entry->offset + offset, out);
  } catch (...) {
    std::rethrow_exception(name_target(key, *entry, std::current_exception()));
  }
  if (!found) fail_missing_target(key, *entry);
  return true;
}

void ReferenceStore::submit(std::span<const ReadRequest> requests, const ReadCallback& done) const {
  struct Forwarded {
    std::vector<ReadRequest> requests;
    std::vector<size_t> original;
    std::vector<const Entry*> entries;
    std::vector<std::string> keys;  // the reference keys asked for, for messages
  };
  std::map<const Store*, Forwarded> groups;
  for (size_t i = 0; i < requests.size(); ++i) {
    const ReadRequest& request = requests[i];
    const Entry* entry = find(request.key);
    if (!entry) {
      done(i, {ReadStatus::kMissing, 0, nullptr});
      continue;
    }
    if (entry->target < 0 || !entry->length) {
      // Inline values and whole-file references: the blocking calls (a whole target's size
      // is needed for its ranges).
      done(i, read_blocking(*this, request));
      continue;
    }
    const uint64_t length = *entry->length;
    const ByteRange& range = request.range;
    uint64_t begin = range.offset;
    uint64_t count = 0;
    if (range.suffix) {
      begin = *range.length >= length ? 0 : length - *range.length;
      count = length - begin;
    } else {
      count = range.length
                  ? *range.length
                  : (request.into.empty() ? length - std::min(begin, length) : request.into.size());
    }
    if (begin > length || count > length - begin) {
      done(i, {ReadStatus::kFailed, 0,
               std::make_exception_ptr(Error(
                   ErrorCode::kCorruptData,
                   fmt::format("reference file '{}': key '{}' holds {} bytes, asked for [{}, {})",
                               name_, request.key, length, begin, begin + count)))});
      continue;
    }
    const Store* store = nullptr;
    try {
      store = &target_store(entry->target);
    } catch (...) {
      done(i, {ReadStatus::kFailed, 0, name_target(request.key, *entry, std::current_exception())});
      continue;
    }
    Forwarded& group = groups[store];
    group.requests.push_back({targets_[static_cast<size_t>(entry->target)].file,
                              ByteRange::at(entry->offset + begin, count), request.into,
                              request.buffer});
    group.original.push_back(i);
    group.entries.push_back(entry);
    group.keys.push_back(request.key);
  }
  for (auto& [store, forwarded] : groups) {
    // The forwarded requests live until the target store's last callback, which holds them.
    struct State {
      Forwarded batch;
      ReadCallback done;
      std::vector<std::atomic<bool>> completed;
      explicit State(Forwarded b, const ReadCallback& d)
          : batch(std::move(b)), done(d), completed(batch.requests.size()) {}
    };
    auto state = std::make_shared<State>(std::move(forwarded), done);
    auto callback = [this, state](size_t j, ReadOutcome outcome) {
      state->completed[j].store(true, std::memory_order_relaxed);
      const Entry& entry = *state->batch.entries[j];
      const std::string& key = state->batch.keys[j];
      if (outcome.status == ReadStatus::kMissing) {
        try {
          fail_missing_target(key, entry);
        } catch (...) {
          outcome = {ReadStatus::kFailed, 0, std::current_exception()};
        }
      } else if (outcome.status == ReadStatus::kFailed) {
        outcome.error = name_target(key, entry, outcome.error);
      }
      state->done(state->batch.original[j], std::move(outcome));
    };
    try {
      store->submit(state->batch.requests, callback);
    } catch (...) {
      for (size_t j = 0; j < state->batch.requests.size(); ++j) {
        if (!state->completed[j].load(std::memory_order_relaxed)) {
          done(state->batch.original[j], {ReadStatus::kFailed, 0, std::current_exception()});
        }
      }
    }
  }
}

std::vector<std::string> ReferenceStore::list(std::string_view prefix) const {
  std::string start = prefix.empty() ? std::string() : std::string(prefix) + "/";
  if (start.size() > 1 && start[start.size() - 2] == '/') start.pop_back();
  std::vector<std::string> names;
  for (auto it = entries_.lower_bound(start); it != entries_.end(); ++it) {
    const std::string& key = it->first;
    if (key.compare(0, start.size(), start) != 0) break;
    std::string rest = key.substr(start.size());
    std::string child = rest.substr(0, rest.find('/'));
    if (names.empty() || names.back() != child) names.push_back(std::move(child));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

StorePtr open_reference_store(const std::string& location) {
  if (StorePtr store = registered(location)) return store;
  ByteBuffer bytes;
  std::string base_dir;
  auto [dir, file] = split_dir(location);
  bool found = false;
  if (is_url(location)) {
    found = open_store(dir)->read(file, bytes);
    base_dir = dir;
  } else {
    if (is_directory(location)) {
      fail(ErrorCode::kInvalidArgument, "'{}' is a folder, not a JSON reference file", location);
    }
    found = FileStore(dir).read(file, bytes);
    base_dir = dir;
  }
  if (!found) fail(ErrorCode::kNotFound, "reference file '{}' does not exist", location);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return std::make_shared<const ReferenceStore>(parse_json_references(text, location), location,
                                                base_dir);
}

bool is_reference_location(const std::string& location) {
  if (registered(location)) return true;
  if (!location.ends_with(".json") || location.ends_with("/zarr.json") || location == "zarr.json") {
    return false;
  }
  return is_url(location) || is_regular_file(location);
}

void register_reference_set(const std::string& location, StorePtr store) {
  std::lock_guard lock(g_registry_mutex);
  reference_registry()[location] = std::move(store);
}

bool is_parquet_reference_folder(const std::string& path) {
  if (is_url(path) || !is_directory(path)) return false;
  // kerchunk writes {"metadata": {...}, "record_size": N}: the tail tells, without parsing a
  // Zarr store's (possibly large) consolidated metadata.
  FileStore folder(path);
  const auto size = folder.size(".zmetadata");
  if (!size) return false;
  const uint64_t tail = std::min<uint64_t>(*size, 256);
  std::string end(tail, '\0');
  folder.read_range(".zmetadata", *size - tail,
                    std::span(reinterpret_cast<std::byte*>(end.data()), end.size()));
  if (end.find("\"record_size\"") == std::string::npos) return false;
  ByteBuffer bytes;
  if (!folder.read(".zmetadata", bytes)) return false;
  const auto doc = nlohmann::json::parse(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), nullptr, false);
  return doc.is_object() && doc.contains("record_size");
}

}  // namespace chute
