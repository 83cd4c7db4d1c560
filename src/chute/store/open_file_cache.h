#pragma once
// A bounded LRU of open read-only file descriptors (internal: not installed, see
// cmake/chute_public_headers.cmake), so that reading a file read before costs one lstat()
// instead of open() + fstat() + close(). Before a kept descriptor is handed out, the path is
// checked to still name the same file (device and inode): a file replaced by an atomic
// rename (another process rewriting it) or removed (evicted by another process) is never read
// through a descriptor of its old inode; the old descriptor is closed and the path opened
// again. Files are opened without following a symlink and without blocking (O_NOFOLLOW |
// O_NONBLOCK); only regular files are kept. Thread-safe; a descriptor in use by a reader stays
// open until that reader lets go, even when the cache drops it.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace chute::detail {

/// A read-only descriptor, closed when the last holder lets go.
class OpenFile {
 public:
  explicit OpenFile(int fd) : fd_(fd) {}
  ~OpenFile();
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

class OpenFileCache {
 public:
  /// At most `capacity` descriptors kept (0: none: every open() opens and nothing is kept).
  explicit OpenFileCache(size_t capacity);
  OpenFileCache(const OpenFileCache&) = delete;
  OpenFileCache& operator=(const OpenFileCache&) = delete;

  enum class Found { kAbsent, kDamaged, kRegular };
  /// The regular file at `path`, open for reading, and its `st` (fstat of what is read): kept
  /// when still the file at `path`, else opened (and kept). kAbsent when nothing is there;
  /// kDamaged for anything else (a symlink, a FIFO, a directory, an error), with `file` null.
  Found open(const std::string& path, std::shared_ptr<const OpenFile>& file, struct stat& st);
  /// Forgets the descriptor of `path` (its file was found damaged or was removed).
  void drop(const std::string& path);

  size_t capacity() const { return capacity_; }
  /// Descriptors kept now, and files opened since construction (kept ones not counted).
  size_t kept() const;
  uint64_t opens() const;

 private:
  struct Entry {
    std::shared_ptr<const OpenFile> file;
    dev_t dev = 0;
    ino_t ino = 0;
    std::list<std::string>::iterator lru;  // position in lru_ (front: most recent)
  };
  void keep(const std::string& path, std::shared_ptr<const OpenFile> file, const struct stat& st);

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;
  uint64_t opens_ = 0;
};

/// A default capacity: a quarter of this process's descriptor limit, at most 4096.
size_t default_open_file_capacity();

}  // namespace chute::detail
