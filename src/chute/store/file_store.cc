#include "chute/store/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <utility>

#include "chute/store/io_executor.h"
#include "chute/store/open_file_cache.h"
#include "chute/store/unstarted_reads.h"
#include "chute/util/error.h"
#include "chute/util/unique_fd.h"

namespace chute {
namespace {

using Fd = detail::UniqueFd;

std::atomic<bool> g_follow_symlinks{true};
thread_local std::optional<FileStoreOptions> t_options;  // a ScopedFileStoreOptions' choice

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// A path for a message: a NUL would end the message there (what() is a C string).
std::string printable(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c == '\0') {
      out += "\\0";
    } else {
      out += c;
    }
  }
  return out;
}

[[noreturn]] void fail_not_regular(mode_t mode, const std::string& path) {
  fail(ErrorCode::kIoError, "'{}' is {}, expected a regular file", path, file_kind(mode));
}

[[noreturn]] void fail_symlink(const std::string& path) {
  fail(ErrorCode::kPermissionDenied,
       "'{}' passes through a symbolic link and follow_symlinks is off (the store is confined "
       "to its folder)",
       path);
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

/// Fills `out` from `offset` or fails naming the file: a file shorter than the range is corrupt.
void pread_exact(int fd, std::span<std::byte> out, uint64_t offset, const std::string& path) {
  const size_t got = pread_full(fd, out, offset, path);
  if (got != out.size()) {
    fail(ErrorCode::kCorruptData, "expected {} bytes at offset {} of '{}', the file ends after {}",
         out.size(), offset, path, offset + got);
  }
}

// An fd open for reading on the regular file at `key` under `root` (`st`: its fstat), or -1
// when it does not exist.
int open_regular(const std::string& root, bool follow_symlinks, std::string_view key,
                 const std::string& path, struct stat& st) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  int fd = -1;
  if (follow_symlinks) {
    fd = ::open(path.c_str(), kFlags);
  } else {
    Fd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (root_fd.get() < 0) {
      if (errno == ENOENT || errno == ENOTDIR) return -1;
      fail_errno(errno, "open", root);
    }
    open_how how{};
    how.flags = kFlags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
    const std::string relative = key.empty() ? std::string(".") : std::string(key);
    fd =
        static_cast<int>(::syscall(SYS_openat2, root_fd.get(), relative.c_str(), &how, sizeof how));
    if (fd < 0 && errno == ENOSYS) {  // kernels before 5.6: refuse a link at the last step only
      fd = ::open(path.c_str(), kFlags | O_NOFOLLOW);
    }
    if (fd < 0 && (errno == ELOOP || errno == EXDEV)) fail_symlink(path);
  }
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return -1;
    fail_errno(errno, "open", path);
  }
  Fd owned(fd);
  if (::fstat(fd, &st) != 0) fail_errno(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) fail_not_regular(st.st_mode, path);
  // O_NONBLOCK has no effect on reads of regular files (open(2)): nothing to undo.
  return owned.release();
}

// How many files a FileStore keeps open: CHUTE_OPEN_FILES (0: none, every read opens its
// file) up to the process's own bound, else that bound.
size_t open_files_capacity() {
  const size_t bound = detail::default_open_file_capacity();
  const char* env = std::getenv("CHUTE_OPEN_FILES");
  if (env == nullptr || *env == '\0') return bound;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(env, &end, 10);
  if (errno != 0 || *end != '\0' || env[0] == '-') {
    fail(ErrorCode::kInvalidArgument, "CHUTE_OPEN_FILES='{}' is not a count of files", env);
  }
  return static_cast<size_t>(std::min<unsigned long long>(value, bound));
}

}  // namespace

FileStoreOptions default_file_store_options() {
  if (t_options) return *t_options;
  return FileStoreOptions{g_follow_symlinks.load(std::memory_order_relaxed)};
}

void set_default_file_store_options(const FileStoreOptions& options) {
  g_follow_symlinks.store(options.follow_symlinks, std::memory_order_relaxed);
}

ScopedFileStoreOptions::ScopedFileStoreOptions(FileStoreOptions options)
    : previous_(std::exchange(t_options, options)) {}

ScopedFileStoreOptions::~ScopedFileStoreOptions() { t_options = previous_; }

FileStore::FileStore(std::string root) : FileStore(std::move(root), default_file_store_options()) {}

FileStore::FileStore(std::string root, FileStoreOptions options)
    : FileStore(std::move(root), options, IoExecutor::shared()) {}

FileStore::FileStore(std::string root, FileStoreOptions options,
                     std::shared_ptr<IoExecutor> executor)
    : root_(std::move(root)),
      options_(options),
      executor_(std::move(executor)),
      open_files_(std::make_shared<detail::OpenFileCache>(open_files_capacity())) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.find('\0') != std::string::npos) {
    fail(ErrorCode::kInvalidArgument, "path '{}' holds a NUL byte", printable(root_));
  }
}

std::string FileStore::path_of(std::string_view key) const {
  // The kernel would read a path only up to a NUL: "a\0b" must not silently become "a".
  if (key.find('\0') != std::string_view::npos) {
    fail(ErrorCode::kInvalidArgument, "key '{}' of '{}' holds a NUL byte", printable(key), root_);
  }
  return join_key(root_, key);
}

std::shared_ptr<const detail::OpenFile> FileStore::open_file(std::string_view key,
                                                             const std::string& path,
                                                             uint64_t* size) const {
  struct stat st;
  std::shared_ptr<const detail::OpenFile> file =
      open_files_->find(path, options_.follow_symlinks, st);
  if (!file) {
    const int fd = open_regular(root_, options_.follow_symlinks, key, path, st);
    if (fd < 0) return nullptr;
    file = open_files_->adopt(path, fd, st);
  }
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return file;
}

size_t FileStore::kept_open_files() const { return open_files_->kept(); }
uint64_t FileStore::files_opened() const { return open_files_->opens(); }

std::optional<uint64_t> FileStore::size(std::string_view key) const {
  const std::string path = path_of(key);
  if (options_.follow_symlinks) {  // stat() never blocks, whatever the file is
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
      fail_errno(errno, "stat", path);
    }
    if (!S_ISREG(st.st_mode)) fail_not_regular(st.st_mode, path);
    return static_cast<uint64_t>(st.st_size);
  }
  uint64_t size = 0;
  if (!open_file(key, path, &size)) return std::nullopt;
  return size;
}

bool FileStore::read(std::string_view key, ByteBuffer& out) const {
  const std::string path = path_of(key);
  uint64_t size = 0;
  const auto file = open_file(key, path, &size);
  if (!file) return false;
  out.resize_for_overwrite(static_cast<size_t>(size));
  const size_t got = pread_full(file->fd(), out.span(), 0, path);
  out.resize(got);
  return true;
}

bool FileStore::read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const {
  const std::string path = path_of(key);
  const auto file = open_file(key, path, nullptr);
  if (!file) return false;
  pread_exact(file->fd(), out, offset, path);
  return true;
}

void submit_on_executor(const Store& store, IoExecutor& executor,
                        std::span<const ReadRequest> requests, const ReadCallback& done) {
  if (requests.empty()) return;
  // The caller's callback may be a temporary: completions after submit() returns use a copy.
  size_t i = 0;
  try {
    auto callback = std::make_shared<const ReadCallback>(done);
    for (; i < requests.size(); ++i) {
      const ReadRequest* request = &requests[i];
      executor.run(
          [&store, request, i, callback] { (*callback)(i, read_blocking(store, *request)); });
    }
  } catch (...) {  // out of memory: the ones not queued fail, the ones queued complete
    fail_unstarted(requests, i, done);
  }
}

namespace {

// A range with a caller buffer of its size: served by pread alone.
bool plain_range(const ReadRequest& request) {
  return !request.into.empty() && !request.range.suffix &&
         request.range.length.value_or(request.into.size()) == request.into.size();
}

}  // namespace

void FileStore::read_ranges(std::span<const ReadRequest> requests, size_t first,
                            const ReadCallback& done) const {
  size_t next = 0;  // requests before it have had their callback
  try {
    const std::string path = path_of(requests[0].key);
    const auto file = open_file(requests[0].key, path, nullptr);
    for (; next < requests.size(); ++next) {
      const ReadRequest& request = requests[next];
      if (!file) {
        done(first + next, {ReadStatus::kMissing, 0, nullptr});
        continue;
      }
      ReadOutcome outcome{ReadStatus::kOk, request.into.size(), nullptr};
      try {
        pread_exact(file->fd(), request.into, request.range.offset, path);
      } catch (...) {
        outcome = {ReadStatus::kFailed, 0, std::current_exception()};
      }
      done(first + next, std::move(outcome));
    }
  } catch (...) {  // the open failed: every request fails with its error
    for (; next < requests.size(); ++next) {
      done(first + next, {ReadStatus::kFailed, 0, std::current_exception()});
    }
  }
}

void FileStore::submit(std::span<const ReadRequest> requests, const ReadCallback& done) const {
  if (requests.empty()) return;
  size_t i = 0;
  try {
    submit_groups(requests, done, i);
  } catch (...) {  // out of memory: the groups not queued fail, the ones queued complete
    fail_unstarted(requests, i, done);
  }
}

void FileStore::submit_groups(std::span<const ReadRequest> requests, const ReadCallback& done,
                              size_t& i) const {
  // The caller's callback may be a temporary: completions after submit() returns use a copy.
  auto callback = std::make_shared<const ReadCallback>(done);
  while (i < requests.size()) {
    size_t j = i + 1;
    if (plain_range(requests[i])) {
      while (j < requests.size() && plain_range(requests[j]) &&
             requests[j].key == requests[i].key) {
        ++j;
      }
    }
    const ReadRequest* request = &requests[i];
    if (j - i == 1) {
      executor_->run(
          [this, request, i, callback] { (*callback)(i, read_blocking(*this, *request)); });
    } else {
      const std::span<const ReadRequest> group = requests.subspan(i, j - i);
      executor_->run([this, group, i, callback] { read_ranges(group, i, *callback); });
    }
    i = j;
  }
}

std::vector<std::string> FileStore::list(std::string_view prefix) const {
  // opendir() opens with O_DIRECTORY: a FIFO at `prefix` fails with ENOTDIR instead of blocking.
  const std::string path = path_of(prefix);
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
