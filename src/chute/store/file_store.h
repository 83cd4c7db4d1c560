#pragma once
// Local files under a root folder, read with pread() straight into caller-provided memory.
//
// Only regular files are values: a key is opened without blocking (O_NONBLOCK, so a FIFO or a
// device cannot hang the open) and then checked with fstat(); a FIFO, socket, device or
// directory at a key is a kIoError naming the path, never "missing" and never a hang.
// Symbolic links are followed by default, as zarr-python does; with follow_symlinks = false a
// key whose path inside the root passes through a symlink is refused (openat2 with
// RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH), so a store cannot read outside its folder.
//
// Files stay open between reads in an OpenFileCache (bounded by the process's descriptor
// limit): reading a file read before costs one stat() (lstat() with follow_symlinks = false)
// instead of open() + fstat() + close(), and that check notices a file replaced by a rename or
// removed. The cache only checks identity; what may be opened stays this store's rule above.
// CHUTE_OPEN_FILES=N keeps at most N per store (0: none; read when the store is made).

#include <memory>
#include <optional>
#include <string>

#include "chute/store/store.h"

namespace chute {

class IoExecutor;  // chute/store/io_executor.h (internal)
namespace detail {
class OpenFile;  // chute/store/open_file_cache.h (internal)
class OpenFileCache;
}  // namespace detail

struct FileStoreOptions {
  bool follow_symlinks = true;
};

class FileStore final : public Store {
 public:
  /// Options default to default_file_store_options().
  explicit FileStore(std::string root);
  FileStore(std::string root, FileStoreOptions options);
  /// Reads submitted in batches run on `executor` (default: IoExecutor::shared()).
  FileStore(std::string root, FileStoreOptions options, std::shared_ptr<IoExecutor> executor);

  std::optional<uint64_t> size(std::string_view key) const override;
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  std::vector<std::string> list(std::string_view prefix) const override;
  std::string describe() const override { return root_; }
  /// Each request runs on the I/O executor (blocking pread on its threads), so a batch's reads
  /// are in flight at once; neighbouring requests for ranges of one file into caller buffers
  /// (the touched rows of one chunk) run as one task that opens the file once. The store must
  /// outlive the batch's last callback.
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override;
  int preferred_concurrency() const override { return kPreferredConcurrency; }
  static constexpr int kPreferredConcurrency = 32;

  const std::string& root() const { return root_; }
  const FileStoreOptions& options() const { return options_; }
  /// Descriptors this store keeps open now, and files it has opened (reads of kept ones not
  /// counted): for tests and measurements.
  size_t kept_open_files() const;
  uint64_t files_opened() const;

 private:
  std::string path_of(std::string_view key) const;
  /// The regular file at `key` open for reading (kept, or opened under this store's rules),
  /// with its size in `*size` when given; null when it does not exist.
  std::shared_ptr<const detail::OpenFile> open_file(std::string_view key, const std::string& path,
                                                    uint64_t* size) const;
  /// Serves ranges of one file (requests[i].key, each with `into`) with one open; calls
  /// done(first + i, outcome) for each.
  void read_ranges(std::span<const ReadRequest> requests, size_t first,
                   const ReadCallback& done) const;
  /// submit()'s work: queues the requests from `i` on, advancing `i` past each one queued.
  void submit_groups(std::span<const ReadRequest> requests, const ReadCallback& done,
                     size_t& i) const;

  std::string root_;
  FileStoreOptions options_;
  std::shared_ptr<IoExecutor> executor_;
  std::shared_ptr<detail::OpenFileCache> open_files_;
};

/// Serves each request of `requests` on `executor` with the store's blocking calls; what
/// FileStore and SingleFileStore do in submit().
void submit_on_executor(const Store& store, IoExecutor& executor,
                        std::span<const ReadRequest> requests, const ReadCallback& done);

/// The options every FileStore made without explicit options gets (process-wide; chute's
/// openers create their stores this way). Thread-safe.
FileStoreOptions default_file_store_options();
void set_default_file_store_options(const FileStoreOptions& options);

/// While alive, FileStores made on this thread without explicit options take `options` instead
/// of the process-wide default: a per-call choice (Python `chute.open(path,
/// follow_symlinks=False)`) that other threads opening at the same time do not see.
class ScopedFileStoreOptions {
 public:
  explicit ScopedFileStoreOptions(FileStoreOptions options);
  ~ScopedFileStoreOptions();
  ScopedFileStoreOptions(const ScopedFileStoreOptions&) = delete;
  ScopedFileStoreOptions& operator=(const ScopedFileStoreOptions&) = delete;

 private:
  std::optional<FileStoreOptions> previous_;
};

}  // namespace chute
