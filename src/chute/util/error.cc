#include "chute/util/error.h"

#include <cerrno>
#include <cstring>

namespace chute {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kInvalidMetadata:
      return "invalid metadata";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kCorruptData:
      return "corrupt data";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kPermissionDenied:
      return "permission denied";
    case ErrorCode::kIoError:
      return "I/O error";
    case ErrorCode::kOutOfRange:
      return "out of range";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kUnavailable:
      return "unavailable";
  }
  return "error";
}

bool is_transient(ErrorCode code) {
  return code == ErrorCode::kUnavailable || code == ErrorCode::kTimeout;
}

void fail_errno(int err, const std::string& operation, const std::string& path) {
  ErrorCode code = ErrorCode::kIoError;
  if (err == ENOENT || err == ENOTDIR) code = ErrorCode::kNotFound;
  if (err == EACCES || err == EPERM) code = ErrorCode::kPermissionDenied;
  throw Error(code, fmt::format("cannot {} '{}': {}", operation, path, std::strerror(err)));
}

}  // namespace chute
