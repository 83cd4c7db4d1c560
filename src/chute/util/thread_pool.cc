#include "chute/util/thread_pool.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <system_error>
#include <thread>

#include "chute/util/error.h"

namespace chute {

size_t default_thread_count() {
  // The CPUs this process may run on (taskset, Slurm's --cpus-per-task, mpirun --bind-to), not
  // every core of the node: more threads than that only contend for the same cores.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<size_t>(n);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

size_t max_reader_threads() { return std::max<size_t>(64, 16 * default_thread_count()); }

ThreadPool::ThreadPool(size_t threads) : pid_(::getpid()) {
  if (threads == 0) threads = default_thread_count();
  workers_.reserve(threads);
  for (size_t w = 0; w < threads; ++w) {
    try {
      workers_.emplace_back([this, w] { worker_loop(w); });
    } catch (const std::system_error& e) {
      // The OS refused a thread (ulimit -u, RLIMIT_AS too small for another stack): stop the
      // ones already started and say so, instead of leaving them waiting forever.
      stop_workers();
      fail(ErrorCode::kIoError,
           "cannot start thread {} of {}: {} (the OS refused a thread: see ulimit -u and the "
           "address-space limit); ask for fewer threads",
           w + 1, threads, e.what());
    }
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(size_t worker) {
  for (;;) {
    std::function<void(size_t)> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job(worker);
  }
}

namespace {
struct Job {
  size_t n = 0;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mutex;
  std::condition_variable done_cv;
  size_t runners_left = 0;
};
}  // namespace

void ThreadPool::parallel_for(size_t n,
                              const std::function<void(size_t index, size_t worker)>& task) {
  if (n == 0) return;
  if (::getpid() != pid_) {
    fail(ErrorCode::kUnsupported,
         "a thread pool made in process {} was used after fork() in process {}: its threads do "
         "not exist here",
         pid_, ::getpid());
  }
  auto job = std::make_shared<Job>();
  job->n = n;
  size_t runners = std::min(n, workers_.size());
  job->runners_left = runners;
  auto runner = [job, &task](size_t worker) {
    for (;;) {
      if (job->failed.load(std::memory_order_relaxed)) break;
      size_t i = job->next.fetch_add(1, std::memory_order_relaxed);
      if (i >= job->n) break;
      try {
        task(i, worker);
      } catch (...) {
        std::lock_guard lock(job->mutex);
        if (!job->error) job->error = std::current_exception();
        job->failed.store(true);
      }
    }
    std::lock_guard lock(job->mutex);
    if (--job->runners_left == 0) job->done_cv.notify_all();
  };
  {
    std::lock_guard lock(mutex_);
    for (size_t r = 0; r < runners; ++r) queue_.emplace_back(runner);
  }
  if (runners == 1) {
    wake_.notify_one();
  } else {
    wake_.notify_all();
  }
  std::exception_ptr error;
  {
    std::unique_lock lock(job->mutex);
    job->done_cv.wait(lock, [&] { return job->runners_left == 0; });
    // Take the error out of the job: a worker may drop the last reference to the job later,
    // and the exception must then belong to this thread alone.
    error = std::move(job->error);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace chute
