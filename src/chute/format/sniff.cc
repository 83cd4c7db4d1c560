#include "chute/format/sniff.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace chute {

std::optional<uint64_t> regular_file_size(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

std::optional<std::string> read_file_bytes(const std::string& path, uint64_t offset, size_t n) {
  const auto size = regular_file_size(path);
  if (!size || offset > *size || n > *size - offset) return std::nullopt;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string bytes(n, '\0');
  size_t done = 0;
  while (done < n) {
    const ssize_t got =
        ::pread(fd, bytes.data() + done, n - done, static_cast<off_t>(offset + done));
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  if (done != n) return std::nullopt;
  return bytes;
}

std::optional<FormatMatch> split_at_file(const std::string& path,
                                         const std::function<bool(const std::string&)>& accepts) {
  for (size_t slash = 0;; ++slash) {
    slash = path.find('/', slash);
    const std::string file = slash == std::string::npos ? path : path.substr(0, slash);
    if (!file.empty() && regular_file_size(file) && accepts(file)) {
      return FormatMatch{file, slash == std::string::npos ? std::string() : path.substr(slash + 1)};
    }
    if (slash == std::string::npos) return std::nullopt;
  }
}

}  // namespace chute
