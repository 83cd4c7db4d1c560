#include "chute/store/io_executor.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "chute/util/fork_safe_mutex.h"

namespace chute {

IoExecutor::IoExecutor(size_t max_threads)
    : pid_(::getpid()), max_threads_(max_threads < 1 ? 1 : max_threads) {}

IoExecutor::~IoExecutor() {
  if (::getpid() != pid_) {
    for (std::thread& t : threads_) t.detach();  // never started in this process
    return;
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

size_t IoExecutor::threads() const {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

void IoExecutor::run(std::function<void()> job) {
  if (::getpid() != pid_) {
    job();
    return;
  }
  std::unique_lock lock(mutex_);
  queue_.push_back(std::move(job));
  if (idle_ == 0 && threads_.size() < max_threads_) {
    try {
      threads_.emplace_back([this] { loop(); });
    } catch (...) {            // no thread (or no memory for one): the job is queued all the same
      if (threads_.empty()) {  // nobody would ever run it
        std::function<void()> mine = std::move(queue_.back());
        queue_.pop_back();
        lock.unlock();
        mine();
        return;
      }
    }
  }
  lock.unlock();
  wake_.notify_one();
}

void IoExecutor::loop() {
  // A name tools (and tests counting the loader's own threads) can tell apart.
  ::pthread_setname_np(::pthread_self(), "chute-io");
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, nothing left
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // release what it captured before waiting again
    lock.lock();
  }
}

std::shared_ptr<IoExecutor> IoExecutor::shared() {
  static detail::ForkSafeMutex mutex;
  // Leaked on purpose: I/O threads may still be parked at exit, and a fork() child must not
  // destroy the parent's executor.
  static auto* executor = new std::shared_ptr<IoExecutor>();
  static int owner = 0;
  std::lock_guard lock(mutex);
  if (!*executor || owner != ::getpid()) {
    size_t threads = kDefaultIoThreads;
    if (const char* env = std::getenv("CHUTE_IO_THREADS")) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(env, &end, 10);
      if (end != env && *end == '\0' && n >= 1 && n <= 4096) threads = static_cast<size_t>(n);
    }
    if (*executor && owner != ::getpid()) {
      new std::shared_ptr<IoExecutor>(std::move(*executor));  // the parent's: never destroyed
    }
    *executor = std::make_shared<IoExecutor>(threads);
    owner = ::getpid();
  }
  return *executor;
}

}  // namespace chute
