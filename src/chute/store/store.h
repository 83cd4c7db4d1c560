#pragma once
// Bytes by key. Keys are '/'-separated paths relative to the store's root ("c/0/1",
// "temp/.zarray"). A missing key is not an error: reads return false / nullopt / kMissing.
//
// Two ways to read:
// - the blocking calls (read, read_range), one key and one range per call;
// - submit(): a batch of range requests that may complete asynchronously and in any order. A
//   store whose reads are slow (object stores, a cold parallel file system) keeps many of them
//   in flight at once; the read engine submits a plan's I/O ahead of decoding. The default
//   submit() serves the batch with the blocking calls on the caller's thread, so a simple store
//   only implements those.

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chute/util/byte_buffer.h"

namespace chute {

/// Which bytes of a value a request wants.
struct ByteRange {
  /// First byte; with `suffix`, ignored.
  uint64_t offset = 0;
  /// Number of bytes; nullopt: up to the end of the value.
  std::optional<uint64_t> length;
  /// The last `length` bytes of the value (an HTTP suffix range, "bytes=-N"): a shard index
  /// is read without first asking for the object's size. Requires `length`.
  bool suffix = false;

  static ByteRange whole() { return {}; }
  static ByteRange at(uint64_t offset, uint64_t length) { return {offset, length, false}; }
  static ByteRange last(uint64_t length) { return {0, length, true}; }
};

/// One request of a batch. The bytes go to `into` when it is non-empty (then the range's
/// length, when given, must equal into.size(), and fewer bytes than that is kCorruptData), or
/// else to `buffer`, resized to the bytes read. A suffix range longer than the value gives the
/// whole value (as HTTP does), so it needs `buffer`.
struct ReadRequest {
  std::string key;
  ByteRange range;
  std::span<std::byte> into;
  ByteBuffer* buffer = nullptr;
};

enum class ReadStatus { kOk, kMissing, kFailed };

struct ReadOutcome {
  ReadStatus status = ReadStatus::kFailed;
  uint64_t nbytes = 0;       // bytes delivered (kOk)
  std::exception_ptr error;  // kFailed: a chute::Error; see is_transient()
};

/// Called once per request, from any thread, possibly before submit() returns. Must not throw.
using ReadCallback = std::function<void(size_t index, ReadOutcome outcome)>;

class Store {
 public:
  virtual ~Store() = default;

  /// Size in bytes of the value at `key`, or nullopt when it does not exist.
  virtual std::optional<uint64_t> size(std::string_view key) const = 0;

  /// Reads the whole value into `out` (resized to fit). Returns false when the key is missing.
  virtual bool read(std::string_view key, ByteBuffer& out) const = 0;

  /// Reads exactly out.size() bytes starting at `offset`. Returns false when the key is missing;
  /// throws kCorruptData when the value is shorter than offset + out.size().
  virtual bool read_range(std::string_view key, uint64_t offset,
                          std::span<std::byte> out) const = 0;

  /// Starts every request of `requests` and calls `done(i, outcome)` once for each, in any
  /// order, from any thread. The requests (and their buffers) must stay alive until the last
  /// call. Never throws for a failed read: the outcome carries the error. Should not throw at
  /// all; one that does (out of memory) must have started none of the requests it has not
  /// completed: the caller completes those with the exception. Default: serves the requests one
  /// by one with read()/read_range() before returning.
  virtual void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const;

  /// Reads a batch and waits for all of it; returns one outcome per request, in order.
  std::vector<ReadOutcome> read_all(std::span<const ReadRequest> requests) const;

  /// How many reads this store should have in flight to be served at its speed (tens for local
  /// files, more for object stores). A hint for the read engine's io_concurrency default.
  virtual int preferred_concurrency() const { return 1; }

  /// Names (not full keys) of the direct children of `prefix` ("" for the root): files and folders.
  virtual std::vector<std::string> list(std::string_view prefix) const = 0;

  /// Where the store lives, for messages ("/scratch/era5.zarr", "memory", "s3://bucket/x").
  virtual std::string describe() const = 0;
};

using StorePtr = std::shared_ptr<const Store>;

/// Serves one request with the blocking calls (what the default submit() does per request).
ReadOutcome read_blocking(const Store& store, const ReadRequest& request);

/// Rethrows a kFailed outcome's error; returns false for kMissing, true for kOk.
bool check_outcome(const ReadOutcome& outcome);

/// Joins key parts with '/', skipping empty parts.
std::string join_key(std::string_view a, std::string_view b);

}  // namespace chute
