#include "chute/store/store.h"

#include <condition_variable>
#include <mutex>

#include "chute/store/unstarted_reads.h"
#include "chute/util/error.h"

namespace chute {
namespace {

ReadOutcome failed(std::exception_ptr error) {
  ReadOutcome outcome;
  outcome.status = ReadStatus::kFailed;
  outcome.error = std::move(error);
  return outcome;
}

ReadOutcome read_whole_then_slice(const Store& store, const ReadRequest& request) {
  // Suffix or open-ended ranges through the blocking calls need the value's size first.
  const auto size = store.size(request.key);
  if (!size) return {ReadStatus::kMissing, 0, nullptr};
  const ByteRange& range = request.range;
  uint64_t begin = 0;
  uint64_t end = *size;
  if (range.suffix) {
    begin = *range.length >= *size ? 0 : *size - *range.length;
  } else {
    begin = range.offset;
    if (range.length) end = range.offset + *range.length;
    if (begin > *size || end > *size) {
      fail(ErrorCode::kCorruptData, "'{}': expected at least {} bytes, found {}", request.key,
           end > begin ? end : begin, *size);
    }
  }
  const uint64_t nbytes = end - begin;
  std::span<std::byte> into = request.into;
  if (into.empty()) {
    request.buffer->resize(static_cast<size_t>(nbytes));
    into = request.buffer->span();
  } else if (into.size() != nbytes) {
    fail(ErrorCode::kCorruptData, "'{}': expected {} bytes, found {}", request.key, into.size(),
         nbytes);
  }
  if (!store.read_range(request.key, begin, into)) return {ReadStatus::kMissing, 0, nullptr};
  return {ReadStatus::kOk, nbytes, nullptr};
}

}  // namespace

ReadOutcome read_blocking(const Store& store, const ReadRequest& request) {
  try {
    const ByteRange& range = request.range;
    if (range.suffix && !range.length) {
      fail(ErrorCode::kInternal, "'{}': a suffix range needs a length", request.key);
    }
    if (request.into.empty() && request.buffer == nullptr) {
      fail(ErrorCode::kInternal, "'{}': a read request with nowhere to put the bytes", request.key);
    }
    const bool whole = !range.suffix && range.offset == 0 && !range.length;
    if (whole && request.into.empty()) {
      if (!store.read(request.key, *request.buffer)) return {ReadStatus::kMissing, 0, nullptr};
      return {ReadStatus::kOk, request.buffer->size(), nullptr};
    }
    if (!range.suffix && (range.length || !request.into.empty())) {
      const uint64_t length = range.length ? *range.length : request.into.size();
      if (!request.into.empty() && request.into.size() != length) {
        fail(ErrorCode::kInternal, "'{}': a request for {} bytes into a buffer of {}", request.key,
             length, request.into.size());
      }
      std::span<std::byte> into = request.into;
      if (into.empty()) {
        request.buffer->resize_for_overwrite(static_cast<size_t>(length));
        into = request.buffer->span();
      }
      if (!store.read_range(request.key, range.offset, into)) {
        return {ReadStatus::kMissing, 0, nullptr};
      }
      return {ReadStatus::kOk, length, nullptr};
    }
    return read_whole_then_slice(store, request);
  } catch (...) {
    return failed(std::current_exception());
  }
}

void fail_unstarted(std::span<const ReadRequest> requests, size_t first, const ReadCallback& done) {
  const std::exception_ptr error = std::current_exception();
  for (size_t i = first; i < requests.size(); ++i) done(i, failed(error));
}

void Store::submit(std::span<const ReadRequest> requests, const ReadCallback& done) const {
  for (size_t i = 0; i < requests.size(); ++i) done(i, read_blocking(*this, requests[i]));
}

std::vector<ReadOutcome> Store::read_all(std::span<const ReadRequest> requests) const {
  std::vector<ReadOutcome> outcomes(requests.size());
  std::mutex mutex;
  std::condition_variable finished;
  size_t remaining = requests.size();
  submit(requests, [&](size_t index, ReadOutcome outcome) {
    std::lock_guard lock(mutex);
    outcomes[index] = std::move(outcome);
    if (--remaining == 0) finished.notify_all();
  });
  std::unique_lock lock(mutex);
  finished.wait(lock, [&] { return remaining == 0; });
  return outcomes;
}

bool check_outcome(const ReadOutcome& outcome) {
  switch (outcome.status) {
    case ReadStatus::kOk:
      return true;
    case ReadStatus::kMissing:
      return false;
    case ReadStatus::kFailed:
      break;
  }
  if (outcome.error) std::rethrow_exception(outcome.error);
  fail(ErrorCode::kInternal, "a failed read without an error");
}

std::string join_key(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string key(a);
  if (key.back() != '/') key += '/';
  key += b;
  return key;
}

}  // namespace chute
