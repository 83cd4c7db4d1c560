#pragma once
// Helpers shared by the format/ and array/ metadata tests.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "chute/util/error.h"

namespace chute::testing {

/// Runs `fn`, expecting a chute::Error with `code` whose message contains every one of `parts`.
template <typename Fn>
void expect_error(Fn&& fn, ErrorCode code, std::initializer_list<std::string_view> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected " << error_code_name(code) << ", nothing was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (std::string_view part : parts) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(std::string(part)));
    }
  }
}

/// The fill value bytes read back as T.
template <typename T>
T bytes_as(const std::vector<std::byte>& bytes) {
  EXPECT_EQ(bytes.size(), sizeof(T));
  T value{};
  std::memcpy(&value, bytes.data(), std::min(bytes.size(), sizeof(T)));
  return value;
}

}  // namespace chute::testing
