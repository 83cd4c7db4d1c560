// Buffer recycling: released buffers come back, the pool does not grow while the consumer
// releases, buffers outlive the pool safely, and concurrent use is race-free.

#include "chute/pipeline/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "chute/util/error.h"
#include "chute/util/thread_pool.h"

namespace chute {
namespace {

TEST(BufferPool, RecyclesReleasedBuffers) {
  BufferPool pool(1000);
  EXPECT_EQ(pool.buffer_bytes(), 1024u);  // rounded up to the alignment
  std::byte* first = nullptr;
  {
    auto buffer = pool.acquire();
    first = buffer.get();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    std::memset(first, 1, 1000);
  }
  EXPECT_EQ(pool.idle(), 1u);
  for (int i = 0; i < 100; ++i) {
    auto a = pool.acquire();
    auto b = pool.acquire();
    EXPECT_TRUE(a.get() == first || b.get() == first);
  }
  EXPECT_EQ(pool.allocations(), 2u);
  EXPECT_EQ(pool.allocated(), 2u);
}

TEST(BufferPool, CapsIdleBuffers) {
  BufferPool pool(64, 2);
  {
    std::vector<std::shared_ptr<std::byte>> held;
    for (int i = 0; i < 5; ++i) held.push_back(pool.acquire());
    EXPECT_EQ(pool.allocated(), 5u);
  }
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(pool.allocated(), 2u);
}

TEST(BufferPool, BufferOutlivesPool) {
  std::shared_ptr<std::byte> kept;
  {
    BufferPool pool(256);
    kept = pool.acquire();
    auto other = pool.acquire();
  }
  std::memset(kept.get(), 7, 256);  // still valid (ASan would flag a use after free)
  kept.reset();                     // freed, not recycled into a dead pool
}

TEST(BufferPool, ConcurrentAcquireRelease) {
  BufferPool pool(128, 8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 200; ++i) {
        auto buffer = pool.acquire();
        std::memset(buffer.get(), t, 128);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(pool.allocated(), 4u);
  EXPECT_EQ(pool.allocated(), pool.idle());
}

TEST(BufferPool, ReserveAllocatesUpFrontAndAcquireReusesThem) {
  ThreadPool threads(2);
  BufferPool pool((size_t{70} << 20) + 100, 3);  // three 32 MiB pieces per buffer, one partial
  pool.reserve(5, &threads);                     // capped at max_idle
  EXPECT_EQ(pool.allocated(), 3u);
  EXPECT_EQ(pool.idle(), 3u);
  EXPECT_EQ(pool.allocations(), 3u);
  std::vector<std::shared_ptr<std::byte>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(pool.acquire());
    std::memset(held.back().get(), i, pool.buffer_bytes());  // every byte is ours
  }
  EXPECT_EQ(pool.allocations(), 3u);  // no new allocation
  pool.reserve(2);                    // already there: nothing to do
  EXPECT_EQ(pool.allocated(), 3u);
  held.clear();
  EXPECT_EQ(pool.idle(), 3u);
}

}  // namespace
}  // namespace chute

namespace chute {
namespace {

// An allocator that counts, to check the pool takes all its memory from the one it was given.
class PoolCountingAllocator final : public BufferAllocator {
 public:
  std::byte* allocate(size_t bytes) override {
    if (fail_next) fail(ErrorCode::kIoError, "counting allocator: refused");
    ++allocations;
    live += static_cast<int64_t>(bytes);
    return pageable_allocator()->allocate(bytes);
  }
  void deallocate(std::byte* memory, size_t bytes) noexcept override {
    live -= static_cast<int64_t>(bytes);
    pageable_allocator()->deallocate(memory, bytes);
  }
  void prefault(std::byte* memory, size_t bytes) override { prefaulted += 1; }
  std::string describe() const override { return "counting"; }
  bool reuse_oldest_first() const override { return oldest_first; }
  bool oldest_first = false;
  int allocations = 0;
  int prefaulted = 0;
  int64_t live = 0;
  bool fail_next = false;
};

TEST(BufferPool, TakesItsMemoryFromTheGivenAllocator) {
  auto allocator = std::make_shared<PoolCountingAllocator>();
  {
    BufferPool pool(1000, 2, allocator);
    EXPECT_EQ(pool.allocator().describe(), "counting");
    pool.reserve(2);
    EXPECT_EQ(allocator->allocations, 2);
    EXPECT_EQ(allocator->prefaulted, 2);
    EXPECT_EQ(allocator->live, 2 * 1024);
    auto a = pool.acquire();
    auto b = pool.acquire();
    allocator->fail_next = true;
    EXPECT_THROW(pool.acquire(), Error);  // the allocator's error, and nothing counted
    EXPECT_EQ(pool.allocated(), 2u);
    allocator->fail_next = false;
  }
  EXPECT_EQ(allocator->live, 0);  // everything given back to the allocator it came from
}

TEST(BufferPool, ReusesOldestFirstWhenTheMemorysReleaseIsOrdered) {
  // Page-locked or device memory released behind a consumer's queued work: the buffer released
  // first is the likeliest free; the one released last would wait for the newest work.
  for (bool oldest_first : {false, true}) {
    auto allocator = std::make_shared<PoolCountingAllocator>();
    allocator->oldest_first = oldest_first;
    BufferPool pool(1000, 4, allocator);
    auto a = pool.acquire();
    auto b = pool.acquire();
    auto c = pool.acquire();
    std::byte* const first = a.get();
    std::byte* const last = c.get();
    a.reset();
    b.reset();
    c.reset();
    EXPECT_EQ(pool.acquire().get(), oldest_first ? first : last) << oldest_first;
    EXPECT_EQ(allocator->allocations, 3);
  }
}

}  // namespace
}  // namespace chute
