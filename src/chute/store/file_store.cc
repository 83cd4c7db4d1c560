#include "chute/store/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "chute/util/error.h"

namespace chute {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens for reading; returns -1 for a missing file, throws for other errors.
int open_or_missing(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return -1;
    fail_errno(errno, "open", path);
  }
  return fd;
}

// Reads exactly out.size() bytes at offset; returns the count actually read (short at EOF).
size_t pread_full(int fd, std::span<std::byte> out, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(errno, "read", path);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace

FileStore::FileStore(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string FileStore::path_of(std::string_view key) const { return join_key(root_, key); }

std::optional<uint64_t> FileStore::size(std::string_view key) const {
  std::string path = path_of(key);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    fail_errno(errno, "stat", path);
  }
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

bool FileStore::read(std::string_view key, ByteBuffer& out) const {
  std::string path = path_of(key);
  Fd fd(open_or_missing(path));
  if (fd.get() < 0) return false;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) fail_errno(errno, "stat", path);
  if (S_ISDIR(st.st_mode)) return false;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = pread_full(fd.get(), out.span(), 0, path);
  out.resize(got);
  return true;
}

bool FileStore::read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const {
  std::string path = path_of(key);
  Fd fd(open_or_missing(path));
  if (fd.get() < 0) return false;
  size_t got = pread_full(fd.get(), out, offset, path);
  if (got != out.size()) {
    fail(ErrorCode::kCorruptData, "expected {} bytes at offset {} of '{}', the file ends after {}",
         out.size(), offset, path, offset + got);
  }
  return true;
}

std::vector<std::string> FileStore::list(std::string_view prefix) const {
  std::string path = path_of(prefix);
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return names;
    fail_errno(errno, "list", path);
  }
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace chute
