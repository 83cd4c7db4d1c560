#include "chute/store/single_file_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "chute/store/file_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

constexpr uint32_t kSizeCheckEvery = 64;
thread_local uint32_t t_copies_since_size_check = 0;

}  // namespace

SingleFileStore::SingleFileStore(std::string path) : path_(std::move(path)) {
  // Without blocking: opening a FIFO for reading would wait for a writer forever.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) fail_errno(errno, "open", path_);
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fail_errno(err, "stat", path_);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    fail(ErrorCode::kInvalidArgument, "'{}' is a folder, expected a file", path_);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fail(ErrorCode::kIoError, "'{}' is {}, expected a regular file", path_,
         S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)" : "a socket or device");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

SingleFileStore::~SingleFileStore() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
  if (fd_ >= 0) ::close(fd_);
}

bool SingleFileStore::read(std::string_view key, ByteBuffer& out) const {
  out.resize_for_overwrite(size_);
  return read_range(key, 0, out.span());
}

bool SingleFileStore::read_range(std::string_view key, uint64_t offset,
                                 std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(errno, "read", path_);
    }
    if (n == 0) {
      fail(ErrorCode::kCorruptData,
           "'{}' is truncated: expected {} bytes at offset {}, the file ends at {}", path_,
           out.size(), offset, offset + done);
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

void SingleFileStore::submit(std::span<const ReadRequest> requests,
                             const ReadCallback& done) const {
  submit_on_executor(*this, *executor_, requests, done);
}

const std::byte* SingleFileStore::mapping() const {
  std::call_once(mapped_, [&] {
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) fail_errno(errno, "mmap", path_);
    mapping_ = p;
    const long page = ::sysconf(_SC_PAGESIZE);
    region_ = {static_cast<const std::byte*>(p),
               static_cast<const std::byte*>(p) + (size_ + page - 1) / page * page, &truncated_};
    detail::install_mapped_read_guard();
  });
  return static_cast<const std::byte*>(mapping_);
}

void SingleFileStore::release_mapped_pages() const {
  const std::byte* base = mapping();
  if (base != nullptr) ::madvise(const_cast<std::byte*>(base), size_, MADV_DONTNEED);
}

void SingleFileStore::read_mapped(const std::function<void()>& copy) const {
  if (!truncated_.load()) {
    {
      detail::MappedReadScope scope(&region_);
      copy();
    }
    // A file cut inside a page reads zeros past its new end there, without a fault: compare
    // its size on each thread's first copy and every kSizeCheckEvery-th after (an fstat costs
    // about 5 us on this VM, as much as copying 20 KiB; a crop is ~100 copies).
    if (t_copies_since_size_check++ % kSizeCheckEvery == 0) {
      struct stat st;
      if (::fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) < size_) truncated_ = true;
    }
    if (!truncated_.load()) return;
  }
  struct stat st;
  const int64_t now = ::fstat(fd_, &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  fail(ErrorCode::kCorruptData,
       "'{}' was truncated after it was opened (it held {} bytes, now {}): open it again once "
       "it is whole",
       path_, size_, now);
}

}  // namespace chute
