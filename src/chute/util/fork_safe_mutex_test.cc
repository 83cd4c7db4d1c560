// ForkSafeMutex: a fork() child never inherits one locked by a thread the child does not have.
#include "chute/util/fork_safe_mutex.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "chute/util/fork_test_util.h"

namespace chute::detail {
namespace {

using namespace std::chrono_literals;
using chute::testing::in_forked_child;
using chute::testing::kSanitized;

void expect_exited_zero(int status) {
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A thread that holds `first` for `hold`, then takes `second` too (if given), then lets go.
std::thread holder(ForkSafeMutex& first, ForkSafeMutex* second, std::chrono::milliseconds hold,
                   std::atomic<bool>& holding) {
  return std::thread([&first, second, hold, &holding] {
    std::lock_guard lock(first);
    holding = true;
    std::this_thread::sleep_for(hold);
    if (second != nullptr) std::lock_guard inner(*second);
  });
}

TEST(ForkSafeMutex, ChildFindsAMutexAnotherThreadHeldAtTheForkUnlocked) {
  if (kSanitized) GTEST_SKIP() << "sanitizers do not support fork() of a threaded process";
  const size_t given_up_before = ForkSafeMutex::forks_not_quiesced();
  ForkSafeMutex mutex;
  std::atomic<bool> holding{false};
  std::thread t = holder(mutex, nullptr, 100ms, holding);
  while (!holding) std::this_thread::yield();
  // With a plain std::mutex the child's try_lock fails: the holder does not exist there.
  const int status = in_forked_child([&] { return mutex.try_lock() ? 0 : 1; }, 10);
  t.join();
  expect_exited_zero(status);
  EXPECT_TRUE(mutex.try_lock());  // the parent's is free too
  mutex.unlock();
  EXPECT_EQ(ForkSafeMutex::forks_not_quiesced(), given_up_before);
}

TEST(ForkSafeMutex, AHolderThatWantsAnotherOneDoesNotDeadlockTheFork) {
  if (kSanitized) GTEST_SKIP() << "sanitizers do not support fork() of a threaded process";
  // Either order in the registry: the holder of one waits for the other while fork() runs.
  for (int order = 0; order < 2; ++order) {
    auto a = std::make_unique<ForkSafeMutex>();
    auto b = std::make_unique<ForkSafeMutex>();
    ForkSafeMutex& first = order == 0 ? *a : *b;
    ForkSafeMutex& second = order == 0 ? *b : *a;
    std::atomic<bool> holding{false};
    std::thread t = holder(first, &second, 50ms, holding);
    while (!holding) std::this_thread::yield();
    const int status = in_forked_child(
        [&] {
          if (!first.try_lock() || !second.try_lock()) return 1;
          return 0;
        },
        10);
    t.join();
    expect_exited_zero(status);
  }
}

TEST(ForkSafeMutex, ManyForksWhileThreadsChurnEveryChildLocksAll) {
  if (kSanitized) GTEST_SKIP() << "sanitizers do not support fork() of a threaded process";
  std::vector<std::unique_ptr<ForkSafeMutex>> mutexes;
  for (int i = 0; i < 8; ++i) mutexes.push_back(std::make_unique<ForkSafeMutex>());
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; !stop; ++i) {
        std::lock_guard lock(*mutexes[i % mutexes.size()]);
        // Objects made and destroyed while forks happen register and leave the list.
        ForkSafeMutex transient;
        std::lock_guard inner(transient);
      }
    });
  }
  for (int fork = 0; fork < 20; ++fork) {
    const int status = in_forked_child(
        [&] {
          for (auto& m : mutexes) {
            if (!m->try_lock()) return 1;
          }
          return 0;
        },
        10);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ADD_FAILURE() << "fork " << fork << ": a child found a mutex locked or hung";
      break;
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace chute::detail
