#include "chute/store/open_file_cache.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <utility>
#include <vector>

namespace chute::detail {

namespace {

/// Descriptors kept by every OpenFileCache of the process.
std::atomic<size_t> process_kept{0};

/// open()/lstat() failures that say nothing about the file itself.
bool is_unavailable(int error) { return error != ENOENT && error != ELOOP && error != ENXIO; }

}  // namespace

OpenFile::~OpenFile() {
  if (fd_ >= 0) ::close(fd_);
}

OpenFileCache::OpenFileCache(size_t capacity, uint64_t max_bytes)
    : capacity_(max_bytes == 0 ? 0 : capacity), max_bytes_(max_bytes) {}

OpenFileCache::~OpenFileCache() { process_kept -= entries_.size(); }

OpenFileCache::Found OpenFileCache::open(const std::string& path,
                                         std::shared_ptr<const OpenFile>& file, struct stat& st) {
  file.reset();
  if (capacity_ > 0) {
    bool sweep = false;
    {
      std::lock_guard lock(mutex_);
      sweep = ++calls_ % kSweepEvery == 0;
    }
    if (sweep) drop_unlinked();
    // The path must still name the kept inode: a rename over it or an unlink makes it another.
    if (::lstat(path.c_str(), &st) != 0) {
      const int error = errno;
      drop(path);
      if (error == ENOENT) return Found::kAbsent;
      return is_unavailable(error) ? Found::kUnavailable : Found::kDamaged;
    }
    std::shared_ptr<const OpenFile> closing;  // closed outside the lock
    std::lock_guard lock(mutex_);
    auto it = entries_.find(path);
    if (it != entries_.end()) {
      if (it->second.dev == st.st_dev && it->second.ino == st.st_ino && S_ISREG(st.st_mode)) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        file = it->second.file;
        return Found::kRegular;
      }
      erase_locked(it, closing);
    }
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return Found::kAbsent;
    return is_unavailable(error) ? Found::kUnavailable : Found::kDamaged;
  }
  auto opened = std::make_shared<const OpenFile>(fd);
  {
    std::lock_guard lock(mutex_);
    ++opens_;
  }
  if (::fstat(fd, &st) != 0) return Found::kUnavailable;
  if (!S_ISREG(st.st_mode)) return Found::kDamaged;
  keep(path, opened, st);
  file = std::move(opened);
  return Found::kRegular;
}

std::shared_ptr<const OpenFile> OpenFileCache::find(const std::string& path, bool follow,
                                                    struct stat& st) {
  if (capacity_ == 0) return nullptr;
  bool sweep = false;
  {
    std::lock_guard lock(mutex_);
    // Nothing kept for the path: no stat() (a first read costs what it cost without the cache).
    if (entries_.find(path) == entries_.end()) return nullptr;
    // A sweep fstat()s every kept file: at most one per 4 calls on average, however many.
    if (++finds_since_sweep_ >= std::max<uint64_t>(kSweepEvery, 4 * entries_.size())) {
      finds_since_sweep_ = 0;
      sweep = true;
    }
  }
  if (sweep) drop_unlinked();
  const int found = follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  std::shared_ptr<const OpenFile> closing;  // closed outside the lock
  std::lock_guard lock(mutex_);
  auto it = entries_.find(path);
  if (it == entries_.end()) return nullptr;
  if (found == 0 && it->second.dev == st.st_dev && it->second.ino == st.st_ino &&
      S_ISREG(st.st_mode)) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.file;
  }
  erase_locked(it, closing);
  return nullptr;
}

std::shared_ptr<const OpenFile> OpenFileCache::adopt(const std::string& path, int fd,
                                                     const struct stat& st) {
  std::shared_ptr<const OpenFile> file;
  try {
    file = std::make_shared<const OpenFile>(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  {
    std::lock_guard lock(mutex_);
    ++opens_;
  }
  if (S_ISREG(st.st_mode)) keep(path, file, st);
  return file;
}

void OpenFileCache::erase_locked(std::unordered_map<std::string, Entry>::iterator it,
                                 std::shared_ptr<const OpenFile>& closing) {
  closing = std::move(it->second.file);
  kept_bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  entries_.erase(it);
  --process_kept;
}

void OpenFileCache::keep(const std::string& path, std::shared_ptr<const OpenFile> file,
                         const struct stat& st) {
  if (capacity_ == 0) return;
  std::vector<std::shared_ptr<const OpenFile>> closing;  // closed outside the lock
  std::lock_guard lock(mutex_);
  auto [it, inserted] = entries_.try_emplace(path);
  if (inserted) {
    lru_.push_front(path);
    it->second.lru = lru_.begin();
    ++process_kept;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    kept_bytes_ -= it->second.bytes;
    closing.push_back(std::move(it->second.file));
  }
  it->second.file = std::move(file);
  it->second.dev = st.st_dev;
  it->second.ino = st.st_ino;
  it->second.bytes = static_cast<uint64_t>(std::max<off_t>(0, st.st_size));
  kept_bytes_ += it->second.bytes;
  // The least recently used go (each closed once its last reader lets go).
  const size_t process_cap = default_open_file_capacity();
  while (!entries_.empty() &&
         (entries_.size() > capacity_ || kept_bytes_ > max_bytes_ || process_kept > process_cap)) {
    erase_locked(entries_.find(lru_.back()), closing.emplace_back());
  }
}

void OpenFileCache::drop(const std::string& path) {
  std::shared_ptr<const OpenFile> closing;  // closed outside the lock
  std::lock_guard lock(mutex_);
  auto it = entries_.find(path);
  if (it != entries_.end()) erase_locked(it, closing);
}

void OpenFileCache::drop_unlinked() {
  std::vector<std::pair<std::string, std::shared_ptr<const OpenFile>>> kept;
  {
    std::lock_guard lock(mutex_);
    kept.reserve(entries_.size());
    for (const auto& [path, entry] : entries_) kept.emplace_back(path, entry.file);
  }
  std::vector<std::shared_ptr<const OpenFile>> closing;  // closed outside the lock
  for (const auto& [path, file] : kept) {
    struct stat st {};
    if (::fstat(file->fd(), &st) != 0 || st.st_nlink > 0) continue;
    std::lock_guard lock(mutex_);
    auto it = entries_.find(path);
    if (it != entries_.end() && it->second.file == file) erase_locked(it, closing.emplace_back());
  }
}

size_t OpenFileCache::kept() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

uint64_t OpenFileCache::opens() const {
  std::lock_guard lock(mutex_);
  return opens_;
}

size_t default_open_file_capacity() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  return static_cast<size_t>(std::min<rlim_t>(4096, limit.rlim_cur / 4));
}

}  // namespace chute::detail
