#include "chute/util/fork_safe_mutex.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace chute::detail {

// Every ForkSafeMutex alive, and the fork handlers that take them all. Leaked on purpose: a
// static ForkSafeMutex may be destroyed after any other static.
struct ForkSafeRegistry {
  // A holder that does not let go within this long (a read stuck in an open() on a hung file
  // system) is not waited for: the fork goes on, as it did before these handlers.
  static constexpr auto kWaitLimit = std::chrono::seconds(10);

  std::mutex mutex;  // guards the list; held from prepare to parent/child
  ForkSafeMutex* head = nullptr;
  bool holding_all = false;  // prepare took every mutex (else only `mutex`)
  std::atomic<size_t> not_quiesced{0};

  static ForkSafeRegistry& get() {
    static ForkSafeRegistry* registry = [] {
      auto* r = new ForkSafeRegistry();
      ::pthread_atfork(&prepare, &release, &release);
      return r;
    }();
    return *registry;
  }

  // Takes every registered mutex. Holding some while waiting for the next could deadlock with
  // a thread that holds that one and wants one already taken, so a busy mutex makes prepare
  // let go of all and try again.
  static void prepare() {
    ForkSafeRegistry& r = get();
    const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
    for (unsigned attempt = 0;; ++attempt) {
      r.mutex.lock();
      ForkSafeMutex* busy = nullptr;
      for (ForkSafeMutex* m = r.head; m != nullptr; m = m->next_) {
        if (!m->mutex_.try_lock()) {
          busy = m;
          break;
        }
      }
      if (busy == nullptr) {
        r.holding_all = true;
        return;
      }
      for (ForkSafeMutex* m = r.head; m != busy; m = m->next_) m->mutex_.unlock();
      if (std::chrono::steady_clock::now() >= deadline) {
        r.holding_all = false;
        r.not_quiesced.fetch_add(1, std::memory_order_relaxed);
        return;  // keeps the list's mutex only
      }
      r.mutex.unlock();
      if (attempt < 16) {
        ::sched_yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  // In the parent and in the child alike: the forking thread owns what prepare took.
  static void release() {
    ForkSafeRegistry& r = get();
    if (r.holding_all) {
      for (ForkSafeMutex* m = r.head; m != nullptr; m = m->next_) m->mutex_.unlock();
      r.holding_all = false;
    }
    r.mutex.unlock();
  }
};

ForkSafeMutex::ForkSafeMutex() {
  ForkSafeRegistry& r = ForkSafeRegistry::get();
  std::lock_guard lock(r.mutex);
  next_ = r.head;
  if (r.head != nullptr) r.head->previous_ = this;
  r.head = this;
}

ForkSafeMutex::~ForkSafeMutex() {
  ForkSafeRegistry& r = ForkSafeRegistry::get();
  std::lock_guard lock(r.mutex);
  if (previous_ != nullptr) {
    previous_->next_ = next_;
  } else {
    r.head = next_;
  }
  if (next_ != nullptr) next_->previous_ = previous_;
}

size_t ForkSafeMutex::forks_not_quiesced() {
  return ForkSafeRegistry::get().not_quiesced.load(std::memory_order_relaxed);
}

}  // namespace chute::detail
