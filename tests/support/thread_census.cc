// Which tests start threads. With CHUTE_THREAD_CENSUS=FILE, chute_tests writes to FILE the name
// of every test during which a thread was created (std::thread, ThreadPool, the Loader's
// producer...), one per line, and `Suite.*` for a suite whose set-up made threads outside its
// tests. scripts/test.sh runs exactly those under ThreadSanitizer: the selection follows what
// the tests do, so it cannot go stale as tests are added or renamed.
//
// Counting works by defining pthread_create in the test executable (it takes precedence over
// libc's for every caller, libstdc++ included) and forwarding to the real one. Only built
// without sanitizers, whose runtimes define pthread_create themselves.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::atomic<int64_t> g_threads_created{0};

using CreateFunction = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

class ThreadCensus : public testing::EmptyTestEventListener {
 public:
  explicit ThreadCensus(std::string path) : path_(std::move(path)) {}

  void OnTestSuiteStart(const testing::TestSuite&) override {
    outside_tests_ = false;
    mark_ = g_threads_created.load();
  }
  void OnTestStart(const testing::TestInfo&) override {
    outside_tests_ = outside_tests_ || g_threads_created.load() != mark_;
    mark_ = g_threads_created.load();
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    if (g_threads_created.load() != mark_) {
      names_.push_back(std::string(info.test_suite_name()) + "." + info.name());
    }
    mark_ = g_threads_created.load();
  }
  void OnTestSuiteEnd(const testing::TestSuite& suite) override {
    if (outside_tests_ || g_threads_created.load() != mark_) {
      names_.push_back(std::string(suite.name()) + ".*");
    }
  }
  void OnTestProgramEnd(const testing::UnitTest&) override {
    std::ofstream out(path_);
    for (const std::string& name : names_) out << name << "\n";
  }

 private:
  std::string path_;
  std::vector<std::string> names_;
  int64_t mark_ = 0;
  bool outside_tests_ = false;
};

// Registered before main() runs; gtest_main's RUN_ALL_TESTS then reports to it.
const bool g_registered = [] {
  if (const char* path = std::getenv("CHUTE_THREAD_CENSUS"); path != nullptr && *path != '\0') {
    testing::UnitTest::GetInstance()->listeners().Append(new ThreadCensus(path));
  }
  return true;
}();

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attributes,
                              void* (*start)(void*), void* argument) {
  static const auto real = reinterpret_cast<CreateFunction>(dlsym(RTLD_NEXT, "pthread_create"));
  g_threads_created.fetch_add(1, std::memory_order_relaxed);
  return real(thread, attributes, start, argument);
}
