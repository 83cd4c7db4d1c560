#pragma once
// A fixed pool of worker threads. parallel_for() runs n independent tasks on the workers and
// blocks until all are done; the first exception stops the remaining tasks and is rethrown to
// the caller. Each task learns its worker index, so callers keep per-worker scratch state
// (decompression contexts, staging buffers) without locks.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace chute {

/// After fork(), the child has none of the workers: parallel_for() there throws, and the pool
/// must not be destroyed there either (its condition variable still counts the parent's
/// waiting workers, so destroying it would block): owners leak it in a fork child.
class ThreadPool {
 public:
  /// threads == 0 means default_thread_count() (the process's CPU affinity). Throws kIoError
  /// when the OS refuses a thread (the ones started are joined first).
  explicit ThreadPool(size_t threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size(); }

  /// Runs task(i, worker) for i in [0, n) and waits. worker is in [0, size()).
  /// Safe to call from several threads at once; not from inside a task of the same pool.
  /// Throws kUnsupported in a fork() child of the process that made the pool.
  void parallel_for(size_t n, const std::function<void(size_t index, size_t worker)>& task);

 private:
  void worker_loop(size_t worker);
  void stop_workers();

  const int pid_;  // the process the workers run in
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void(size_t)>> queue_;
  bool stopping_ = false;
};

/// The default worker count: the CPUs in the calling thread's affinity mask (sched_getaffinity),
/// else the hardware threads; at least 1.
size_t default_thread_count();

/// The most reader threads chute accepts for a Loader or set_threads(): 16 per hardware
/// thread, at least 64 (more only adds stacks and contention).
size_t max_reader_threads();

}  // namespace chute
