#include "chute/util/byte_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
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

TEST(ByteBuffer, ResizeForOverwriteGrowsToTheSizeAndHoldsWhatIsWrittenAfter) {
  ByteBuffer buffer(10);
  std::memcpy(buffer.data(), "0123456789", 10);
  buffer.resize_for_overwrite(100000);
  EXPECT_EQ(buffer.size(), 100000u);
  EXPECT_GE(buffer.capacity(), 100000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 4096, 0u);  // page-aligned, as resize
  for (size_t i = 0; i < buffer.size(); ++i) buffer.data()[i] = static_cast<std::byte>(i * 7);
  for (size_t i = 0; i < buffer.size(); i += 997) {
    ASSERT_EQ(buffer.data()[i], static_cast<std::byte>(i * 7)) << i;
  }
}

TEST(ByteBuffer, ResizeForOverwriteWithinTheCapacityKeepsTheMemory) {
  ByteBuffer buffer(50000);
  const std::byte* memory = buffer.data();
  const size_t capacity = buffer.capacity();
  buffer.resize_for_overwrite(10);
  EXPECT_EQ(buffer.size(), 10u);
  buffer.resize_for_overwrite(capacity);  // no allocation: the same memory, the same capacity
  EXPECT_EQ(buffer.size(), capacity);
  EXPECT_EQ(buffer.data(), memory);
  EXPECT_EQ(buffer.capacity(), capacity);
  buffer.resize_for_overwrite(0);
  EXPECT_TRUE(buffer.empty());
  EXPECT_EQ(buffer.capacity(), capacity);  // never shrinks
}

TEST(ByteBuffer, AMovedFromBufferGrowsForOverwriteAfresh) {
  ByteBuffer source(5000);
  ByteBuffer moved(std::move(source));
  source.resize_for_overwrite(8192);  // NOLINT(bugprone-use-after-move): what it says is the test
  EXPECT_EQ(source.size(), 8192u);
  EXPECT_GE(source.capacity(), 8192u);
  EXPECT_NE(source.data(), moved.data());
  std::memset(source.data(), 3, 8192);
  EXPECT_EQ(static_cast<int>(source.data()[8191]), 3);
  EXPECT_EQ(moved.size(), 5000u);
}

}  // namespace
}  // namespace chute
