#pragma once
// For tests that fork(): whether this build runs under a sanitizer (which does not support
// fork() of a threaded process), and a child run under a hang guard.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace chute::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

/// Runs `child` in a fork()ed process, which SIGALRM kills after `hang_guard_s` seconds;
/// returns its wait status.
inline int in_forked_child(const std::function<int()>& child, unsigned hang_guard_s = 60) {
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork() failed: the child did not run";
    return 0xFF00;  // as if it exited 255
  }
  if (pid == 0) {
    ::alarm(hang_guard_s);
    ::_exit(child());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace chute::testing
