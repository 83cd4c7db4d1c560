#pragma once
// The message of the chute::Error a test expects, for tests that check what it names.

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "chute/util/error.h"

namespace chute::testing {

/// Runs `run` and returns the message of the chute::Error it throws, checking its code; adds a
/// failure (and returns "") when nothing is thrown.
inline std::string message_of(const std::function<void()>& run,
                              ErrorCode expected = ErrorCode::kInvalidArgument) {
  try {
    run();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

}  // namespace chute::testing
