#include "chute/store/caching_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

#include "chute/store/cache_entry.h"
#include "chute/store/io_executor.h"
#include "chute/store/open_file_cache.h"
#include "chute/store/unstarted_reads.h"
#include "chute/util/error.h"
#include "chute/util/fork_safe_mutex.h"

namespace chute {
namespace {

constexpr std::string_view kEntrySuffix = ".chc";
constexpr std::string_view kTempPrefix = ".tmp-";
constexpr time_t kTouchAfterSeconds = 60;   // mtime is refreshed at most once a minute per hit
constexpr time_t kStaleTempSeconds = 3600;  // a temp file this old is abandoned whoever wrote it

uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

bool pread_exact(int fd, std::span<std::byte> out, uint64_t offset) {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Fills `first` then `second` from offset 0 of the file: one preadv() in the common case.
bool preadv_exact(int fd, std::span<std::byte> first, std::span<std::byte> second) {
  iovec parts[2] = {{first.data(), first.size()}, {second.data(), second.size()}};
  ssize_t n = 0;
  do {
    n = ::preadv(fd, parts, 2, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return false;
  const auto done = static_cast<size_t>(n);
  if (done >= first.size() + second.size()) return true;
  if (done < first.size()) {  // a short read: finish piece by piece
    return pread_exact(fd, first.subspan(done), done) && pread_exact(fd, second, first.size());
  }
  const size_t into_second = done - first.size();
  return pread_exact(fd, second.subspan(into_second), done);
}

bool write_all(int fd, std::span<const std::byte> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Sets mtime (the LRU clock) to now with nanoseconds: the kernel's own timestamps move in
// scheduler ticks, too coarse to order entries written in a burst.
bool set_mtime_now(int fd) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const timespec times[2] = {now, now};
  return ::futimens(fd, times) == 0;
}

// The range a request really asks for: an open-ended range into a fixed buffer is a range of
// that buffer's length (as read_blocking() treats it).
ByteRange effective_range(const ReadRequest& request) {
  ByteRange range = request.range;
  if (!range.suffix && !range.length && !request.into.empty()) {
    range.length = request.into.size();
  }
  return range;
}

// Zarr metadata documents are small and may be rewritten in place (attributes, consolidated
// metadata): they are always read from the inner store, never cached.
bool is_metadata_key(std::string_view key) {
  const size_t slash = key.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  return name == "zarr.json" || name.starts_with(".z");
}

bool is_whole(const ByteRange& range) {
  return !range.suffix && range.offset == 0 && !range.length;
}

using detail::CacheEntryHeader;
using detail::kCacheEntryHeaderBytes;

// Checks the head of an entry file (fixed header then identity) against the identity wanted and
// the file's size, with the fuzzed parser of cache_entry.h.
std::optional<CacheEntryHeader> parse_entry_head(std::span<const std::byte> head,
                                                 std::string_view identity, uint64_t file_size) {
  std::optional<CacheEntryHeader> header = detail::parse_cache_entry_header(head, file_size);
  if (!header || header->identity_len != identity.size() ||
      head.size() < header->payload_offset()) {
    return std::nullopt;
  }
  const std::string_view stored(reinterpret_cast<const char*>(head.data()) + kCacheEntryHeaderBytes,
                                header->identity_len);
  if (!detail::cache_entry_identity_matches(*header, stored, identity)) return std::nullopt;
  return header;
}

// Reads a whole entry with one preadv(), the payload straight into `payload` (sized to what
// the file's size leaves for it), and checks head and payload. The header when all is well.
std::optional<CacheEntryHeader> read_entry(int fd, uint64_t file_size, std::string_view identity,
                                           std::span<std::byte> payload) {
  const size_t head_size = kCacheEntryHeaderBytes + identity.size();
  if (file_size != head_size + payload.size()) return std::nullopt;
  std::vector<std::byte> head(head_size);
  if (!preadv_exact(fd, head, payload)) return std::nullopt;
  std::optional<CacheEntryHeader> header = parse_entry_head(head, identity, file_size);
  if (!header || detail::cache_crc32(payload) != header->payload_crc) return std::nullopt;
  return header;
}

}  // namespace

const std::vector<OptionField<CacheOptions>>& CacheOptions::fields() {
  using O = CacheOptions;
  static const std::vector<OptionField<O>> table = {
      {"cache",
       &O::dir,
       "node-local cache folder: the stored bytes of every chunk read are kept there, so later "
       "runs read them locally",
       {.none = "no cache", .default_none = true, .path = true}},
      {"cache_size",
       &O::max_bytes,
       "size limit of the cache folder in bytes",
       {.low = 1,
        .high = static_cast<long double>(UINT64_MAX),
        .none = "16 GiB",
        .default_none = true}},
      {"cache_fsync",
       &O::fsync,
       "fsync each entry before renaming it into place",
       {.internal = true}},
  };
  return table;
}

void validate(const CacheOptions& options) {
  if (options.dir.find('\0') != std::string::npos) {
    fail(ErrorCode::kInvalidArgument, "cache: cache = '{}' holds a NUL byte",
         options.dir.substr(0, options.dir.find('\0')) + "\\0...");
  }
  if (options.max_bytes < 1) {
    fail(ErrorCode::kInvalidArgument,
         "cache: cache_size = {} is outside [1, 18446744073709551615] (the folder's size limit)",
         options.max_bytes);
  }
}

CachingStore::CachingStore(StorePtr inner, CacheOptions options)
    : inner_(std::move(inner)),
      options_(std::move(options)),
      inner_name_(inner_->describe()),
      open_files_(std::make_unique<detail::OpenFileCache>(detail::default_open_file_capacity())) {
  if (options_.dir.empty()) {
    fail(ErrorCode::kInvalidArgument, "cache: dir is empty (no folder given)");
  }
  validate(options_);
  std::error_code error;
  std::filesystem::create_directories(options_.dir, error);
  struct stat st {};
  if (::lstat(options_.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    fail(ErrorCode::kIoError, "cache folder '{}' is not a directory{}", options_.dir,
         error ? ": " + error.message() : "");
  }
  if (::access(options_.dir.c_str(), W_OK | X_OK) != 0) {
    fail(ErrorCode::kPermissionDenied, "cache folder '{}' is not writable", options_.dir);
  }
  remove_stale_temp_files();
  std::lock_guard lock(evict_mutex_);
  evict_to_limit();
}

CachingStore::~CachingStore() = default;

uint64_t CachingStore::entry_files_opened() const { return open_files_->opens(); }

std::string CachingStore::identity(std::string_view key, const ByteRange& range) const {
  std::string id = inner_name_;
  id += '\n';
  id += key;
  id += '\n';
  if (range.suffix) {
    id += fmt::format("suffix {}", *range.length);
  } else if (range.length) {
    id += fmt::format("{}+{}", range.offset, *range.length);
  } else {
    id += fmt::format("{}+", range.offset);
  }
  return id;
}

std::string CachingStore::entry_path(std::string_view key, const ByteRange& range) const {
  return entry_path_of(identity(key, range));
}

std::string CachingStore::entry_path_of(std::string_view identity) const {
  return fmt::format("{}/{:016x}{}", options_.dir, fnv1a64(identity), kEntrySuffix);
}

bool CachingStore::serve_from_cache(const ReadRequest& request, uint64_t& nbytes) const {
  if (is_metadata_key(request.key)) return false;
  const ByteRange range = effective_range(request);
  // The exact entry first; a bounded range can also be cut from the whole value's entry.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool exact = attempt == 0;
    if (!exact && (is_whole(range) || range.suffix || !range.length)) break;
    const ByteRange wanted = exact ? range : ByteRange::whole();
    const std::string id = identity(request.key, wanted);
    const std::string path = entry_path_of(id);
    std::shared_ptr<const detail::OpenFile> fd;
    struct stat st {};
    const auto found = open_files_->open(path, fd, st);
    // Absent, or the system out of descriptors or memory: a miss, never a reason to unlink.
    if (found == detail::OpenFileCache::Found::kAbsent ||
        found == detail::OpenFileCache::Found::kUnavailable) {
      continue;
    }
    const auto file_size = static_cast<uint64_t>(st.st_size);
    const size_t head_size = kCacheEntryHeaderBytes + id.size();
    bool ok = false;
    if (found == detail::OpenFileCache::Found::kRegular && file_size >= head_size) {
      const uint64_t payload_len = file_size - head_size;
      if (exact) {
        std::span<std::byte> into = request.into;
        if (into.empty()) {
          request.buffer->resize(static_cast<size_t>(payload_len));
          into = request.buffer->span();
        }
        ok = into.size() == payload_len && read_entry(fd->fd(), file_size, id, into);
        nbytes = payload_len;
      } else if (range.offset + *range.length <= payload_len) {
        // Verifying needs the whole value: read it, check it, then copy the slice out.
        ByteBuffer whole(static_cast<size_t>(payload_len));
        ok = read_entry(fd->fd(), file_size, id, whole.span()).has_value();
        if (ok) {
          std::span<std::byte> into = request.into;
          if (into.empty()) {
            request.buffer->resize(static_cast<size_t>(*range.length));
            into = request.buffer->span();
          }
          std::memcpy(into.data(), whole.data() + range.offset, into.size());
          nbytes = *range.length;
        }
      } else {
        continue;  // the whole value is shorter than the range: let the inner store say so
      }
    }
    if (!ok) {
      open_files_->drop(path);
      if (::unlink(path.c_str()) == 0) ++discarded_;
      continue;
    }
    if (std::time(nullptr) - st.st_mtime >= kTouchAfterSeconds) {
      set_mtime_now(fd->fd());  // recently used: evicted last
    }
    ++hits_;
    bytes_from_cache_ += nbytes;
    return true;
  }
  ++misses_;
  return false;
}

void CachingStore::store_entry(std::string_view key, const ByteRange& range,
                               std::span<const std::byte> bytes) const {
  if (is_metadata_key(key)) return;
  const std::string id = identity(key, range);
  const uint64_t entry_bytes = kCacheEntryHeaderBytes + id.size() + bytes.size();
  if (id.size() > detail::kMaxCacheIdentityBytes || entry_bytes > options_.max_bytes) return;
  const std::string prefix = detail::encode_cache_entry_prefix(id, bytes);

  const std::string path = entry_path_of(id);
  const std::string temp = fmt::format("{}/{}{}-{}-{:016x}", options_.dir, kTempPrefix, ::getpid(),
                                       temp_counter_.fetch_add(1), fnv1a64(id));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  bool ok = write_all(fd, std::as_bytes(std::span(prefix.data(), prefix.size()))) &&
            write_all(fd, bytes) && set_mtime_now(fd) && (!options_.fsync || ::fsync(fd) == 0);
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return;
  }
  bytes_written_ += bytes.size();
  account_written(entry_bytes);
}

void CachingStore::remember(const ReadRequest& request, uint64_t nbytes) const {
  try {
    std::span<const std::byte> bytes =
        request.into.empty() ? request.buffer->span().first(static_cast<size_t>(nbytes))
                             : std::span<const std::byte>(request.into);
    store_entry(request.key, effective_range(request), bytes);
  } catch (...) {
    // A cache that cannot write misses next time; the read itself succeeded.
  }
}

void CachingStore::account_written(uint64_t entry_bytes) const {
  std::lock_guard lock(evict_mutex_);
  estimated_bytes_ += entry_bytes;
  written_since_scan_ += entry_bytes;
  if (estimated_bytes_ > options_.max_bytes || written_since_scan_ >= options_.max_bytes / 16) {
    evict_to_limit();
  }
}

void CachingStore::evict_to_limit() const {
  struct Entry {
    timespec mtime;
    uint64_t bytes;
    std::string name;
  };
  written_since_scan_ = 0;
  std::vector<Entry> entries;
  uint64_t total = 0;
  DIR* dir = ::opendir(options_.dir.c_str());
  if (dir == nullptr) return;
  const int dir_fd = ::dirfd(dir);
  while (const dirent* item = ::readdir(dir)) {
    std::string_view name = item->d_name;
    if (!name.ends_with(kEntrySuffix)) continue;
    struct stat st {};
    if (::fstatat(dir_fd, item->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    entries.push_back({st.st_mtim, static_cast<uint64_t>(st.st_size), std::string(name)});
    total += static_cast<uint64_t>(st.st_size);
  }
  if (total > options_.max_bytes) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec) < std::tie(b.mtime.tv_sec, b.mtime.tv_nsec);
    });
    const uint64_t target = options_.max_bytes / 10 * 9;
    for (const Entry& entry : entries) {
      if (total <= target) break;
      if (::unlinkat(dir_fd, entry.name.c_str(), 0) == 0) ++evicted_;
      open_files_->drop(options_.dir + "/" + entry.name);  // its space is freed now
      total -= entry.bytes;  // gone either way: removed by us or by another process
    }
  }
  ::closedir(dir);
  estimated_bytes_ = total;
}

void CachingStore::remove_stale_temp_files() const {
  DIR* dir = ::opendir(options_.dir.c_str());
  if (dir == nullptr) return;
  const int dir_fd = ::dirfd(dir);
  const time_t now = std::time(nullptr);
  while (const dirent* item = ::readdir(dir)) {
    std::string_view name = item->d_name;
    if (!name.starts_with(kTempPrefix)) continue;
    // ".tmp-<pid>-<n>-<hash>": the writer is gone when its pid is, or after an hour anyway.
    const long pid = std::strtol(item->d_name + kTempPrefix.size(), nullptr, 10);
    const bool writer_gone =
        pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
    struct stat st {};
    if (::fstatat(dir_fd, item->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (writer_gone || now - st.st_mtime > kStaleTempSeconds) ::unlinkat(dir_fd, item->d_name, 0);
  }
  ::closedir(dir);
}

uint64_t CachingStore::folder_bytes() const {
  uint64_t total = 0;
  std::error_code error;
  for (const auto& item : std::filesystem::directory_iterator(options_.dir, error)) {
    if (item.path().filename().string().ends_with(kEntrySuffix) && item.is_regular_file(error)) {
      total += item.file_size(error);
    }
  }
  return total;
}

std::optional<uint64_t> CachingStore::size(std::string_view key) const {
  const std::string id = identity(key, ByteRange::whole());
  std::shared_ptr<const detail::OpenFile> file;
  struct stat st {};
  if (open_files_->open(entry_path_of(id), file, st) == detail::OpenFileCache::Found::kRegular) {
    std::vector<std::byte> head(kCacheEntryHeaderBytes + id.size());
    if (pread_exact(file->fd(), head, 0)) {
      const auto header = parse_entry_head(head, id, static_cast<uint64_t>(st.st_size));
      if (header) return header->payload_len;
    }
  }
  return inner_->size(key);
}

bool CachingStore::read(std::string_view key, ByteBuffer& out) const {
  if (is_metadata_key(key)) return inner_->read(key, out);
  ReadRequest request{std::string(key), ByteRange::whole(), {}, &out};
  uint64_t nbytes = 0;
  if (serve_from_cache(request, nbytes)) return true;
  if (!inner_->read(key, out)) return false;
  bytes_fetched_ += out.size();
  remember(request, out.size());
  return true;
}

// A range read (a partial blosc read, the samples of an uncompressed chunk) of a value up to
// this size fetches and caches the whole value: the next epoch's batches group samples
// differently and ask for other ranges of the same chunk. Ranges of larger values (a shard's
// inner chunks, a shard index read as a suffix) are cached by (key, offset, length): whole
// shards would multiply the first epoch's traffic, and inner-chunk ranges come from the shard
// index, the same every epoch. Costs one size() call per range miss.
constexpr uint64_t kWholeObjectBytes = uint64_t{16} << 20;

bool should_fetch_whole(const Store& inner, const ReadRequest& request) {
  const ByteRange range = effective_range(request);
  if (is_metadata_key(request.key) || is_whole(range) || range.suffix || !range.length) {
    return false;
  }
  try {
    const std::optional<uint64_t> size = inner.size(request.key);
    return size && *size <= kWholeObjectBytes;
  } catch (...) {
    return false;  // the range read itself will say what is wrong
  }
}

// Copies the requested range of a whole value into the request's destination.
ReadOutcome slice_into(const ReadRequest& request, std::span<const std::byte> whole) {
  const ByteRange range = effective_range(request);
  if (range.offset + *range.length > whole.size()) {
    ReadOutcome outcome;
    outcome.error = std::make_exception_ptr(
        Error(ErrorCode::kCorruptData,
              fmt::format("'{}': expected at least {} bytes, found {}", request.key,
                          range.offset + *range.length, whole.size())));
    return outcome;
  }
  std::span<std::byte> into = request.into;
  if (into.empty()) {
    request.buffer->resize(static_cast<size_t>(*range.length));
    into = request.buffer->span();
  }
  std::memcpy(into.data(), whole.data() + range.offset, into.size());
  return {ReadStatus::kOk, into.size(), nullptr};
}

ReadOutcome CachingStore::keep_whole_and_slice(const ReadRequest& request,
                                               std::span<const std::byte> whole) const {
  bytes_fetched_ += whole.size();
  try {
    store_entry(request.key, ByteRange::whole(), whole);
  } catch (...) {
    // A cache that cannot write misses next time; the read itself succeeded.
  }
  try {
    return slice_into(request, whole);
  } catch (...) {  // e.g. no memory for the caller's buffer: an outcome, never a throw
    return {ReadStatus::kFailed, 0, std::current_exception()};
  }
}

bool CachingStore::read_range(std::string_view key, uint64_t offset,
                              std::span<std::byte> out) const {
  if (is_metadata_key(key)) return inner_->read_range(key, offset, out);
  ReadRequest request{std::string(key), ByteRange::at(offset, out.size()), out, nullptr};
  uint64_t nbytes = 0;
  if (serve_from_cache(request, nbytes)) return true;
  if (should_fetch_whole(*inner_, request)) {
    ByteBuffer whole;
    if (!inner_->read(key, whole)) return false;
    return check_outcome(keep_whole_and_slice(request, whole.span()));
  }
  if (!inner_->read_range(key, offset, out)) return false;
  bytes_fetched_ += out.size();
  remember(request, out.size());
  return true;
}

// One submitted batch: each request is looked up in the folder on the I/O executor (hits are
// read there, in parallel, like the inner store's own reads); once every lookup has finished
// the misses go to the inner store together, so it still sees one batch (HttpStore coalesces
// nearby ranges within a batch).
struct CachingStore::Batch {
  std::span<const ReadRequest> callers;  // alive until the last callback (submit's contract)
  ReadCallback done;
  std::vector<char> missed;         // per caller request, written by its lookup
  std::vector<char> whole;          // missed and fetched as the whole value (small objects)
  std::vector<ByteBuffer> buffers;  // per caller request, for whole fetches
  std::atomic<size_t> lookups_left{0};
  // The misses as forwarded, in the callers' order.
  std::vector<ReadRequest> requests;
  std::vector<size_t> original;
};

void CachingStore::look_up(const std::shared_ptr<Batch>& batch, size_t i) const {
  const ReadRequest& request = batch->callers[i];
  uint64_t nbytes = 0;
  bool hit = false;
  try {
    hit = serve_from_cache(request, nbytes);
  } catch (...) {
    hit = false;  // e.g. out of memory for a buffer: let the inner store try
  }
  if (hit) {
    batch->done(i, {ReadStatus::kOk, nbytes, nullptr});
  } else {
    batch->missed[i] = 1;
    batch->whole[i] = should_fetch_whole(*inner_, request);
  }
  if (batch->lookups_left.fetch_sub(1, std::memory_order_acq_rel) == 1) forward_misses(batch);
}

void CachingStore::forward_misses(const std::shared_ptr<Batch>& batch) const {
  for (size_t i = 0; i < batch->callers.size(); ++i) {
    if (!batch->missed[i]) continue;
    const ReadRequest& caller = batch->callers[i];
    if (batch->whole[i]) {
      batch->requests.push_back({caller.key, ByteRange::whole(), {}, &batch->buffers[i]});
    } else {
      batch->requests.push_back(caller);
    }
    batch->original.push_back(i);
  }
  if (batch->requests.empty()) return;
  inner_->submit(batch->requests, [this, batch](size_t index, ReadOutcome outcome) {
    const size_t i = batch->original[index];
    const ReadRequest& caller = batch->callers[i];
    if (outcome.status == ReadStatus::kOk && !is_metadata_key(caller.key)) {
      if (batch->whole[i]) {
        outcome = keep_whole_and_slice(caller, batch->buffers[i].span());
      } else {
        bytes_fetched_ += outcome.nbytes;
        remember(caller, outcome.nbytes);
      }
    }
    batch->done(i, std::move(outcome));
  });
}

void CachingStore::submit(std::span<const ReadRequest> requests, const ReadCallback& done) const {
  if (requests.empty()) return;
  auto batch = std::make_shared<Batch>();
  batch->callers = requests;
  batch->done = done;
  batch->missed.assign(requests.size(), 0);
  batch->whole.assign(requests.size(), 0);
  batch->buffers.resize(requests.size());
  batch->lookups_left = requests.size();
  size_t i = 0;
  try {
    const std::shared_ptr<IoExecutor> executor = IoExecutor::shared();
    for (; i < requests.size(); ++i) executor->run([this, batch, i] { look_up(batch, i); });
  } catch (...) {  // out of memory: the lookups not queued fail, the ones queued complete
    const size_t unstarted = requests.size() - i;
    fail_unstarted(requests, i, done);
    if (batch->lookups_left.fetch_sub(unstarted, std::memory_order_acq_rel) == unstarted) {
      forward_misses(batch);
    }
  }
}

CacheStats CachingStore::stats() const {
  return {hits_, misses_, bytes_from_cache_, bytes_fetched_, bytes_written_, evicted_, discarded_};
}

StorePtr with_cache(StorePtr store, const CacheOptions& options) {
  validate(options);
  if (!options.enabled()) return store;
  return std::make_shared<const CachingStore>(std::move(store), options);
}

namespace {
detail::ForkSafeMutex g_default_mutex;
CacheOptions g_default_options;
}  // namespace

CacheOptions default_cache_options() {
  std::lock_guard lock(g_default_mutex);
  return g_default_options;
}

void set_default_cache_options(const CacheOptions& options) {
  validate(options);
  std::lock_guard lock(g_default_mutex);
  g_default_options = options;
}

std::optional<CacheStats> cache_stats_of(const Store& store) {
  if (const auto* cache = dynamic_cast<const CachingStore*>(&store)) return cache->stats();
  return std::nullopt;
}

}  // namespace chute
