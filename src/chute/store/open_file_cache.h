#pragma once
// A bounded LRU of open read-only file descriptors (internal: not installed, see
// cmake/chute_public_headers.cmake), so that reading a file read before costs one lstat()
// instead of open() + fstat() + close(). Before a kept descriptor is handed out, the path is
// checked to still name the same file (device and inode): a file replaced by an atomic
// rename (another process rewriting it) or removed (evicted by another process) is never read
// through a descriptor of its old inode; the old descriptor is closed and the path opened
// again. open() opens without following a symlink and without blocking (O_NOFOLLOW |
// O_NONBLOCK): the node-local cache's rule, whose entries chute writes itself, so a symlink
// there is foreign. An owner with other rules (FileStore: a dataset's symlinks are normal)
// opens files itself and uses find()/adopt(): the cache then only checks identity. Only
// regular files are kept. Thread-safe; a descriptor in use by a reader stays
// open until that reader lets go, even when the cache drops it.
//
// A kept descriptor holds its file's space on disk after another process unlinks it (a node
// cache evicting entries other ranks keep open). So the kept files are bounded in bytes as well
// as in number, every `kSweepEvery`-th open() (find(): at most every 4 × kept-th, so a sweep
// costs under one fstat() per call) drops the kept files that no longer have a name, and all
// caches of a process share one count of kept descriptors.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "chute/util/fork_safe_mutex.h"

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
  /// At most `capacity` descriptors and `max_bytes` of files kept (0: none: every open() opens
  /// and nothing is kept), and no more than default_open_file_capacity() in the whole process.
  explicit OpenFileCache(size_t capacity, uint64_t max_bytes = kDefaultMaxBytes);
  ~OpenFileCache();
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1} << 30;
  static constexpr uint64_t kSweepEvery = 256;
  OpenFileCache(const OpenFileCache&) = delete;
  OpenFileCache& operator=(const OpenFileCache&) = delete;

  enum class Found { kAbsent, kDamaged, kUnavailable, kRegular };
  /// The regular file at `path`, open for reading, and its `st` (fstat of what is read): kept
  /// when still the file at `path`, else opened (and kept). kAbsent when nothing is there;
  /// kDamaged when something other than a regular file is (a symlink, a FIFO, a directory);
  /// kUnavailable when the system refused without saying anything about the file (out of
  /// descriptors or memory, no permission): `file` null but for kRegular.
  Found open(const std::string& path, std::shared_ptr<const OpenFile>& file, struct stat& st);
  /// Forgets the descriptor of `path` (its file was found damaged or was removed).
  void drop(const std::string& path);

  /// For an owner that opens files under its own rules (FileStore: symlinks followed, or none
  /// anywhere under its root): the kept descriptor of `path` when the path still names its
  /// file, checked with stat() (`follow`: through a symlink at the end) or lstat(), with `st`
  /// set from that check; else null (nothing kept, or the file replaced, removed or now a
  /// symlink: then forgotten), and the owner opens the path itself and calls adopt().
  std::shared_ptr<const OpenFile> find(const std::string& path, bool follow, struct stat& st);
  /// Takes `fd` (open for reading on the regular file `path` names, `st` its fstat), keeps it
  /// if there is room and returns it.
  std::shared_ptr<const OpenFile> adopt(const std::string& path, int fd, const struct stat& st);

  size_t capacity() const { return capacity_; }
  /// Drops the kept descriptors of files that no longer have a name (unlinked by anyone).
  void drop_unlinked();

  /// Descriptors kept now, and files opened since construction (kept ones not counted).
  size_t kept() const;
  uint64_t opens() const;

 private:
  struct Entry {
    std::shared_ptr<const OpenFile> file;
    dev_t dev = 0;
    ino_t ino = 0;
    uint64_t bytes = 0;
    std::list<std::string>::iterator lru;  // position in lru_ (front: most recent)
  };
  void keep(const std::string& path, std::shared_ptr<const OpenFile> file, const struct stat& st);
  /// Forgets `it` under mutex_; its descriptor moves to `closing`, to be closed outside it.
  void erase_locked(std::unordered_map<std::string, Entry>::iterator it,
                    std::shared_ptr<const OpenFile>& closing);

  const size_t capacity_;
  const uint64_t max_bytes_;
  mutable detail::ForkSafeMutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;
  uint64_t kept_bytes_ = 0;
  uint64_t opens_ = 0;
  uint64_t calls_ = 0;
  uint64_t finds_since_sweep_ = 0;
};

/// A default capacity: a quarter of this process's descriptor limit, at most 4096.
size_t default_open_file_capacity();

}  // namespace chute::detail
