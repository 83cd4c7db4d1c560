#include "chute/dist/all_ranks.h"

#include <charconv>
#include <string>
#include <vector>

#include "chute/util/error.h"

namespace chute::dist {
namespace {

// A failure travels as "<code number>\n<message>".
std::string encode_failure(ErrorCode code, std::string_view message) {
  return std::to_string(static_cast<int>(code)) + "\n" + std::string(message);
}

std::pair<ErrorCode, std::string> decode_failure(std::string_view text) {
  size_t newline = text.find('\n');
  int code = static_cast<int>(ErrorCode::kInternal);
  if (newline != std::string_view::npos) {
    std::from_chars(text.data(), text.data() + newline, code);
    text.remove_prefix(newline + 1);
  }
  if (code < 0 || code > static_cast<int>(ErrorCode::kTimeout))
    code = static_cast<int>(ErrorCode::kInternal);
  return {static_cast<ErrorCode>(code), std::string(text)};
}

}  // namespace

void run_on_all_ranks(Comm& comm, std::string_view what, const std::function<void()>& step) {
  std::string failure;  // empty when the step succeeded here
  try {
    step();
  } catch (const Error& error) {
    failure = encode_failure(error.code(), error.what());
  } catch (const std::exception& error) {
    failure = encode_failure(ErrorCode::kInternal, error.what());
  } catch (...) {
    failure = encode_failure(ErrorCode::kInternal, "unknown exception");
  }
  const int64_t failed_ranks = comm.allreduce_i64(failure.empty() ? 0 : 1, ReduceOp::kSum);
  if (failed_ranks == 0) return;

  // Rank 0 composes one message from the lowest failing rank and sends it to all.
  std::vector<std::string> failures = comm.gather_to_root(failure);
  std::string verdict;
  if (comm.rank() == 0) {
    for (size_t r = 0; r < failures.size(); ++r) {
      if (failures[r].empty()) continue;
      auto [code, message] = decode_failure(failures[r]);
      std::string others;
      if (failed_ranks > 1) others = fmt::format(" (and on {} other rank(s))", failed_ranks - 1);
      verdict = encode_failure(code, fmt::format("{} failed on rank {} of {}{}: {}", what, r,
                                                 comm.size(), others, message));
      break;
    }
  }
  verdict = comm.broadcast_from_root(std::move(verdict));
  auto [code, message] = decode_failure(verdict);
  throw Error(code, message);
}

}  // namespace chute::dist
