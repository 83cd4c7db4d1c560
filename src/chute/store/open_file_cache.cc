#include "chute/store/open_file_cache.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace chute::detail {

OpenFile::~OpenFile() {
  if (fd_ >= 0) ::close(fd_);
}

OpenFileCache::OpenFileCache(size_t capacity) : capacity_(capacity) {}

OpenFileCache::Found OpenFileCache::open(const std::string& path,
                                         std::shared_ptr<const OpenFile>& file, struct stat& st) {
  file.reset();
  if (capacity_ > 0) {
    // The path must still name the kept inode: a rename over it or an unlink makes it another.
    if (::lstat(path.c_str(), &st) != 0) {
      drop(path);
      return errno == ENOENT ? Found::kAbsent : Found::kDamaged;
    }
    std::lock_guard lock(mutex_);
    auto it = entries_.find(path);
    if (it != entries_.end()) {
      if (it->second.dev == st.st_dev && it->second.ino == st.st_ino && S_ISREG(st.st_mode)) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        file = it->second.file;
        return Found::kRegular;
      }
      lru_.erase(it->second.lru);
      entries_.erase(it);
    }
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? Found::kAbsent : Found::kDamaged;
  auto opened = std::make_shared<const OpenFile>(fd);
  {
    std::lock_guard lock(mutex_);
    ++opens_;
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return Found::kDamaged;
  keep(path, opened, st);
  file = std::move(opened);
  return Found::kRegular;
}

void OpenFileCache::keep(const std::string& path, std::shared_ptr<const OpenFile> file,
                         const struct stat& st) {
  if (capacity_ == 0) return;
  std::lock_guard lock(mutex_);
  auto [it, inserted] = entries_.try_emplace(path);
  if (inserted) {
    lru_.push_front(path);
    it->second.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  it->second.file = std::move(file);
  it->second.dev = st.st_dev;
  it->second.ino = st.st_ino;
  while (entries_.size() > capacity_) {  // the least recently used goes (closed when unused)
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
}

void OpenFileCache::drop(const std::string& path) {
  std::shared_ptr<const OpenFile> closing;  // closed outside the lock
  std::lock_guard lock(mutex_);
  auto it = entries_.find(path);
  if (it == entries_.end()) return;
  closing = std::move(it->second.file);
  lru_.erase(it->second.lru);
  entries_.erase(it);
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
