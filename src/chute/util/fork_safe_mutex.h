#pragma once
// A mutex that fork() never leaves locked in the child. Internal (installed because
// chute/store/memory_store.h, caching_store.h and sampler/sampler.h hold one): not part of the
// stable API.
//
// A PyTorch DataLoader worker or a multiprocessing child is fork()ed from a process whose
// loader threads are reading: a thread that held a store's or a file's lock at the fork does
// not exist in the child, so the child's first read of the same object waited forever (an
// open-file cache held by a parent's reader hung a DataLoader worker about once in 80 forks).
// Objects that outlive a fork and that readers share (stores, open files, chunk index caches,
// process-wide registries) guard their state with this mutex: every one alive is registered, and
// fork() waits, in its prepare handler, until it holds them all, so the child starts with each
// unlocked and the state it guards consistent. A holder that keeps one past 10 s (an open()
// stuck on a hung file system) is not waited for: that fork goes on as without these handlers.
// Critical sections under it must be short and must never wait for the thread that forks (the
// GIL, a condition only it signals).
//
// Objects a fork child never uses (a Loader's threads, queues, buffers and sampler; the thread
// pools, replaced after fork) keep std::mutex: registering them would only slow fork() down.

#include <mutex>

namespace chute::detail {

class ForkSafeMutex {
 public:
  ForkSafeMutex();
  ~ForkSafeMutex();
  ForkSafeMutex(const ForkSafeMutex&) = delete;
  ForkSafeMutex& operator=(const ForkSafeMutex&) = delete;

  void lock() { mutex_.lock(); }
  bool try_lock() { return mutex_.try_lock(); }
  void unlock() { mutex_.unlock(); }

  /// How many fork()s gave up waiting for a mutex held past the wait limit (the child may then
  /// find that one locked). For tests and diagnostics.
  static size_t forks_not_quiesced();

 private:
  friend struct ForkSafeRegistry;
  std::mutex mutex_;
  ForkSafeMutex* previous_ = nullptr;  // the registry's intrusive list
  ForkSafeMutex* next_ = nullptr;
};

}  // namespace chute::detail
