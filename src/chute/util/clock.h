#pragma once
// The clock the read path times its steps with (ReadStats, loader statistics).

#include <chrono>
#include <cstdint>

namespace chute {

using Clock = std::chrono::steady_clock;

/// Nanoseconds from `since` to now.
inline int64_t elapsed_ns(Clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - since).count();
}

}  // namespace chute
