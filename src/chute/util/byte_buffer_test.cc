#include "chute/util/byte_buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>

namespace chute {
namespace {

TEST(ByteBuffer, GrowingKeepsTheContents) {
  ByteBuffer buffer(10);
  std::memcpy(buffer.data(), "0123456789", 10);
  buffer.resize(100000);
  EXPECT_GE(buffer.capacity(), 100000u);
  EXPECT_EQ(std::memcmp(buffer.data(), "0123456789", 10), 0);
}

TEST(ByteBuffer, AMovedFromBufferIsEmptyAndUsable) {
  ByteBuffer source(5000);
  std::memset(source.data(), 7, 5000);
  ByteBuffer moved(std::move(source));
  EXPECT_EQ(moved.size(), 5000u);
  EXPECT_EQ(source.size(), 0u);      // NOLINT(bugprone-use-after-move): what it says is the test
  EXPECT_EQ(source.capacity(), 0u);  // NOLINT(bugprone-use-after-move)
  source.resize(16);                 // allocates afresh, no write through a null pointer
  std::memset(source.data(), 1, 16);

  ByteBuffer assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.size(), 5000u);
  EXPECT_EQ(moved.capacity(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(static_cast<int>(assigned.data()[4999]), 7);
}

}  // namespace
}  // namespace chute
