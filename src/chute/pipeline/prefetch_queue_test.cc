// The bounded queue: order, the bound, errors after queued batches, and close() releasing a
// blocked producer.

#include "chute/pipeline/prefetch_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "chute/util/error.h"

namespace chute {
namespace {

Batch numbered(int64_t index) {
  Batch batch;
  batch.index = index;
  return batch;
}

TEST(PrefetchQueue, DeliversInOrderWithinTheBound) {
  PrefetchQueue queue(2);
  std::atomic<size_t> max_size{0};
  std::thread producer([&] {
    for (int64_t i = 0; i < 50; ++i) {
      ASSERT_TRUE(queue.push(numbered(i)));
      size_t size = queue.size();
      if (size > max_size) max_size = size;
    }
    queue.finish();
  });
  for (int64_t i = 0; i < 50; ++i) {
    auto batch = queue.pop();
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->index, i);
  }
  EXPECT_FALSE(queue.pop().has_value());
  producer.join();
  EXPECT_LE(max_size.load(), 2u);
}

TEST(PrefetchQueue, EpochMarksSplitTheStreamWithoutTakingCapacity) {
  PrefetchQueue queue(2);
  ASSERT_TRUE(queue.push(numbered(0)));
  queue.end_epoch();
  ASSERT_TRUE(queue.push(numbered(1)));  // the mark did not use a place
  EXPECT_EQ(queue.size(), 2u);
  queue.end_epoch();
  queue.finish();
  EXPECT_EQ(queue.pop()->index, 0);
  EXPECT_FALSE(queue.pop().has_value());  // end of the first epoch
  EXPECT_FALSE(queue.done());
  EXPECT_EQ(queue.pop()->index, 1);
  EXPECT_FALSE(queue.pop().has_value());
  EXPECT_FALSE(queue.pop().has_value());  // finished and drained
  EXPECT_TRUE(queue.done());
}

TEST(PrefetchQueue, ErrorComesAfterQueuedBatchesOnce) {
  PrefetchQueue queue(4);
  ASSERT_TRUE(queue.push(numbered(0)));
  queue.finish(std::make_exception_ptr(Error(ErrorCode::kCorruptData, "bad chunk c/0")));
  EXPECT_FALSE(queue.push(numbered(1)));
  EXPECT_EQ(queue.pop()->index, 0);
  try {
    queue.pop();
    FAIL() << "expected the stored error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
    EXPECT_NE(std::string(e.what()).find("c/0"), std::string::npos);
  }
  EXPECT_FALSE(queue.pop().has_value());
}

TEST(PrefetchQueue, CloseReleasesBlockedProducer) {
  PrefetchQueue queue(1);
  ASSERT_TRUE(queue.push(numbered(0)));
  std::atomic<bool> pushed{true};
  std::thread producer([&] { pushed = queue.push(numbered(1)); });  // blocks: queue is full
  queue.close();
  producer.join();
  EXPECT_FALSE(pushed.load());
  EXPECT_FALSE(queue.pop().has_value());
  EXPECT_EQ(queue.size(), 0u);
}

TEST(PrefetchQueue, ReportsWaitTime) {
  PrefetchQueue queue(1);
  ASSERT_TRUE(queue.push(numbered(3)));
  int64_t wait = -1;
  EXPECT_EQ(queue.pop(&wait)->index, 3);
  EXPECT_EQ(wait, 0);  // it was ready
  EXPECT_THROW(PrefetchQueue(0), Error);
}

}  // namespace
}  // namespace chute
