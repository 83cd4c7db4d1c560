#pragma once
// Errors inside chute are exceptions of one type, chute::Error, carrying a code that the Python
// layer maps to an exception class. Messages state what was expected and what was found; context
// (array path, chunk key, sample) is prepended as the error travels up via with_context().

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace chute {

enum class ErrorCode {
  kInvalidArgument,   // bad request or option from the caller (ValueError)
  kInvalidMetadata,   // malformed or inconsistent metadata (ValueError)
  kUnsupported,       // unknown codec, data type or feature (ValueError / NotImplemented)
  kCorruptData,       // truncated or corrupt chunk, checksum mismatch (ValueError)
  kNotFound,          // missing file, array or group (FileNotFoundError)
  kPermissionDenied,  // unreadable file (PermissionError)
  kIoError,           // other operating-system errors (OSError)
  kOutOfRange,        // index outside the array (IndexError)
  kCancelled,         // the pipeline was stopped
  kInternal,          // a bug in chute
  kTimeout,           // waited longer than the caller's timeout (TimeoutError)
  kUnavailable,       // a store failing for now: 5xx, 429, reset, stalled (still so after retries)
};

const char* error_code_name(ErrorCode code);

/// Whether a failure with this code may succeed when retried (kUnavailable, kTimeout); the
/// others (missing, denied, corrupt, bad request) fail the same way every time.
bool is_transient(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}
  ErrorCode code() const { return code_; }

  /// Returns a copy whose message is "<context>: <message>".
  Error with_context(const std::string& context) const {
    return Error(code_, context + ": " + what());
  }

 private:
  ErrorCode code_;
};

/// Throws chute::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

/// Throws an Error built from errno for an operation on `path` (ENOENT -> kNotFound, ...).
[[noreturn]] void fail_errno(int err, const std::string& operation, const std::string& path);

}  // namespace chute
