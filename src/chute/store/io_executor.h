#pragma once
// Blocking reads in flight: a pool of I/O threads that serve store requests with pread while
// the decode threads decode. One executor is shared by every store of the process (shared()),
// so the number of reads in flight has one process-wide bound however many arrays, plans and
// loaders submit at once. Threads start when work arrives and none is idle, up to the bound.
//
// Measured against io_uring on this machine (docs/design/reads-in-flight.md): a pool of blocking
// pread threads is what chute uses for local files.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace chute {

class IoExecutor {
 public:
  /// At most `max_threads` (>= 1) reads run at once.
  explicit IoExecutor(size_t max_threads);
  ~IoExecutor();
  IoExecutor(const IoExecutor&) = delete;
  IoExecutor& operator=(const IoExecutor&) = delete;

  /// Runs `job` on an I/O thread (queued when all are busy). Never throws for the job: a job
  /// must not throw. In a fork() child (the threads do not exist there), or when the OS refuses
  /// the first thread, the job runs on the caller's thread.
  void run(std::function<void()> job);

  size_t max_threads() const { return max_threads_; }
  /// Threads started so far.
  size_t threads() const;

  /// The process's executor: CHUTE_IO_THREADS threads at most (default kDefaultIoThreads).
  /// A fork() child gets a fresh one.
  static std::shared_ptr<IoExecutor> shared();
  static constexpr size_t kDefaultIoThreads = 64;

 private:
  void loop();

  const int pid_;
  const size_t max_threads_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace chute
