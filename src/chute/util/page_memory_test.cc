#include "chute/util/page_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "chute/util/byte_buffer.h"

namespace chute::detail {
namespace {

uintptr_t address(const std::byte* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(PageMemory, SmallBuffersArePageAlignedLargeOnesHugePageAligned) {
  PageMemory small(allocate_pages(100, true));
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(address(small.get()) % 4096, 0u);
  std::memset(small.get(), 1, 100);

  PageMemory large(allocate_pages(kHugePageBytes + 1, true));
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(address(large.get()) % kHugePageBytes, 0u);
  std::memset(large.get(), 2, kHugePageBytes + 1);
  EXPECT_EQ(large[kHugePageBytes], std::byte{2});

  PageMemory plain(allocate_pages(kHugePageBytes + 1, false));
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(address(plain.get()) % 4096, 0u);
}

TEST(PageMemory, ByteBufferKeepsItsContentsWhenItGrowsPastAHugePage) {
  ByteBuffer buffer(10);
  std::memset(buffer.data(), 7, 10);
  buffer.resize(3 * kHugePageBytes);
  EXPECT_EQ(address(buffer.data()) % kHugePageBytes, 0u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(buffer.data()[i], std::byte{7});
  EXPECT_GE(buffer.capacity(), 3 * kHugePageBytes);
}

}  // namespace
}  // namespace chute::detail
