#pragma once
// A node-local cache in front of a slow store (an object store, a cold parallel file system):
// the stored (still compressed) bytes of every value read through it are kept as files under a
// local folder, up to a size limit, so epochs after the first read them from local disk.
//
// What is cached: exactly what was asked for. A whole-value read is cached as the whole value;
// a range read (a shard's inner chunk, a shard index read as a suffix, a partial blosc read) is
// cached under (key, offset, length) or (key, suffix length). A range is also served from a
// cached whole value. Caching whole objects on a range miss would multiply the first epoch's
// remote traffic (a shard holds many chunks, most of which a crop never touches); the read
// plan is a pure function of the sample, so the next epoch asks for the same ranges and hits.
// Zarr metadata documents (zarr.json, .zarray, .zattrs, .zgroup, .zmetadata) are not cached.
// Entries are keyed by location, key and range, not by a content version: a dataset rewritten
// in place needs a fresh cache folder.
//
// Several processes (the ranks of a node) may share the folder:
// - an entry is written to a temp file in the same folder and renamed into place (atomic), so a
//   reader sees a whole entry or none; temp files of dead writers are removed when a cache opens;
// - every entry carries a header with its identity (the inner store's describe(), the key and the
//   range), its length and a CRC-32C of the bytes; an entry is verified before any byte of it is
//   returned, and a corrupt, truncated or foreign entry is deleted and fetched again;
// - no fsync: a power loss can leave a renamed entry with missing data, which verification
//   catches, so durability would only cost write latency (option `fsync` turns it on);
// - the size limit is shared through the folder: each process rescans the folder after writing
//   1/16 of the limit (or when its own estimate exceeds the limit) and deletes the least
//   recently used entries (by mtime, refreshed on every hit) until it is under 90% of the limit.
//   With P processes writing at once the folder can exceed the limit by about P/16 of it.
// - submit() looks each request up on the I/O executor (a hit is one lstat, one preadv of header
//   and payload into the caller's buffer, and a CRC-32C), then forwards the batch's misses to
//   the inner store as one batch. Entry files stay open between hits (a bounded LRU of
//   descriptors, a quarter of the process's limit, at most 4096); the lstat checks that the
//   path still names the kept inode, so an entry replaced by another process's rename, or
//   removed by its eviction, is opened again, never read through the old descriptor.
// Cache files are regular files opened with O_NOFOLLOW | O_NONBLOCK and checked with fstat(): a
// symlink, FIFO or device in the folder is never read (it is treated as a corrupt entry).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "chute/store/store.h"
#include "chute/util/fork_safe_mutex.h"
#include "chute/util/option_table.h"

namespace chute {
namespace detail {
class OpenFileCache;  // chute/store/open_file_cache.h (internal)
}  // namespace detail

struct CacheOptions {
  /// Folder for the cache files (created when missing). Empty: no cache.
  std::string dir;
  /// Size limit of the folder in bytes (entries and their headers).
  uint64_t max_bytes = uint64_t{16} << 30;
  /// fsync each entry before renaming it into place.
  bool fsync = false;

  bool enabled() const { return !dir.empty(); }
  /// Name, help and check of every field (option_table.h).
  static const std::vector<OptionField<CacheOptions>>& fields();
};

/// Checks every field: dir holds no NUL byte (the kernel would cut the path there), max_bytes
/// >= 1. Throws kInvalidArgument naming the field, the value and the allowed range. The
/// CachingStore constructor, set_default_cache_options() and the dataset openers call it.
void validate(const CacheOptions& options);

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_from_cache = 0;  // payload bytes served from cache files
  uint64_t bytes_fetched = 0;     // payload bytes read from the inner store
  uint64_t bytes_written = 0;     // payload bytes written to cache files
  uint64_t evicted = 0;           // entries removed to stay under the size limit
  uint64_t discarded = 0;         // corrupt, truncated or foreign entries removed
};

class CachingStore final : public Store {
 public:
  /// Opens (creates) the folder and removes temp files left by writers that no longer run.
  CachingStore(StorePtr inner, CacheOptions options);
  ~CachingStore() override;

  std::optional<uint64_t> size(std::string_view key) const override;
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override;
  int preferred_concurrency() const override { return inner_->preferred_concurrency(); }
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return inner_->describe(); }

  CacheStats stats() const;
  const CacheOptions& options() const { return options_; }
  const StorePtr& inner() const { return inner_; }

  /// The cache file that holds (key, range); exposed for tests that damage entries.
  std::string entry_path(std::string_view key, const ByteRange& range) const;

  /// Entry files opened so far; a hit through a descriptor kept open opens none. For tests.
  uint64_t entry_files_opened() const;

  /// Total bytes of the entries in the folder now (a scan).
  uint64_t folder_bytes() const;

 private:
  std::string entry_path_of(std::string_view identity) const;  // identity(key, range)
  struct Batch;
  /// Serves `request` from a cache entry when a valid one exists, counting the hit or miss.
  bool serve_from_cache(const ReadRequest& request, uint64_t& nbytes) const;
  /// submit()'s steps: look request i up (on an I/O thread), then forward the batch's misses.
  void look_up(const std::shared_ptr<Batch>& batch, size_t i) const;
  void forward_misses(const std::shared_ptr<Batch>& batch) const;
  /// Writes the bytes a request brought into the cache (errors are swallowed: a cache that
  /// cannot write is a cache that misses).
  void remember(const ReadRequest& request, uint64_t nbytes) const;
  /// A miss fetched as the whole value (a small object read by range): counts and caches it
  /// (a failed write is only a later miss), then copies the request's range out.
  ReadOutcome keep_whole_and_slice(const ReadRequest& request,
                                   std::span<const std::byte> whole) const;
  void store_entry(std::string_view key, const ByteRange& range,
                   std::span<const std::byte> bytes) const;
  void account_written(uint64_t entry_bytes) const;
  void evict_to_limit() const;
  void remove_stale_temp_files() const;
  std::string identity(std::string_view key, const ByteRange& range) const;

  StorePtr inner_;
  CacheOptions options_;
  std::string inner_name_;
  mutable std::atomic<uint64_t> hits_{0}, misses_{0}, bytes_from_cache_{0}, bytes_fetched_{0},
      bytes_written_{0}, evicted_{0}, discarded_{0};
  mutable std::atomic<uint64_t> temp_counter_{0};
  // Entry files stay open between hits (a bounded LRU, checked against the path's inode).
  std::unique_ptr<detail::OpenFileCache> open_files_;
  mutable detail::ForkSafeMutex evict_mutex_;
  mutable uint64_t estimated_bytes_ = 0;     // guarded by evict_mutex_
  mutable uint64_t written_since_scan_ = 0;  // guarded by evict_mutex_
};

/// `store` wrapped in a CachingStore when `options` names a folder, else `store` itself.
StorePtr with_cache(StorePtr store, const CacheOptions& options);

/// The cache every opener uses when it is given none (process-wide, like
/// default_file_store_options(); the CLI's --cache sets it). Thread-safe. Default: no cache.
CacheOptions default_cache_options();
void set_default_cache_options(const CacheOptions& options);

/// The cache statistics of `store` when it is a CachingStore, else nullopt.
std::optional<CacheStats> cache_stats_of(const Store& store);

}  // namespace chute
