#pragma once
// One local file kept open, for formats that hold a whole array in one file (HDF5, .npy): its
// one value is read with pread at any offset from many threads, or mapped read-only so that
// uncompressed boxes are copied straight out of the page cache. Every key names the file.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "chute/store/io_executor.h"
#include "chute/store/mapped_read_guard.h"
#include "chute/store/store.h"

namespace chute {

class SingleFileStore final : public Store {
 public:
  /// Opens `path` read-only; throws kNotFound naming it when it does not exist, kIo otherwise.
  explicit SingleFileStore(std::string path);
  ~SingleFileStore() override;
  SingleFileStore(const SingleFileStore&) = delete;
  SingleFileStore& operator=(const SingleFileStore&) = delete;

  std::optional<uint64_t> size(std::string_view key) const override { return size_; }
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  std::vector<std::string> list(std::string_view prefix) const override { return {}; }
  std::string describe() const override { return path_; }
  /// Each request runs on the process's I/O executor (blocking pread on its threads).
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override;
  int preferred_concurrency() const override { return 32; }

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  /// The whole file mapped read-only (mapped on first call; thread-safe). Pages come from the
  /// page cache as they are touched. Null for an empty file.
  const std::byte* mapping() const;
  /// Runs `copy`, which reads from mapping(). If the file was truncated after it was opened
  /// (by another process), throws kCorruptData naming it instead of dying of SIGBUS, then and
  /// on every later call: what was copied is not the file's content. A cut inside a page (no
  /// fault, zeros past the new end) is found by a size check on each thread's first copy and
  /// every 64th after.
  void read_mapped(const std::function<void()>& copy) const;
  /// Unmaps the mapping's pages from this process (they fault in again from the file on the
  /// next read), so that the kernel may drop them from the page cache: a page mapped by a
  /// process survives posix_fadvise(DONTNEED). For `chute bench --page-cache cold`.
  void release_mapped_pages() const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  mutable void* mapping_ = nullptr;
  mutable std::once_flag mapped_;
  mutable std::atomic<bool> truncated_{false};
  mutable detail::MappedRegion region_;
  std::shared_ptr<IoExecutor> executor_ = IoExecutor::shared();
};

}  // namespace chute
