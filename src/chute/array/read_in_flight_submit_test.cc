// ReadPlan with reads in flight when a store's submit() throws (out of memory, a store that
// fails synchronously): the reads it never started fail with that error, so the plan neither
// waits for them forever nor lets a callback outlive it, and the caller gets the error naming
// array and chunk key. Plans sharing the window with the failed one still complete. Each
// plan runs under a bounded wait, so a regression fails the test instead of hanging it.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <new>
#include <optional>
#include <thread>

#include "chute/array/array.h"
#include "chute/array/array_test_support.h"
#include "chute/array/read_plan.h"
#include "chute/store/latency_store.h"
#include "chute/store/memory_store.h"

namespace chute {
namespace {

using namespace chute::testing;

StridedView submit_test_view(std::vector<float>& buffer, Coords shape) {
  return StridedView::contiguous(reinterpret_cast<std::byte*>(buffer.data()), std::move(shape),
                                 sizeof(float));
}

/// Serves submit() through the inner store, except that call number `throw_at` (from 1)
/// completes the first `complete_first` requests of its batch and then throws `error` without
/// starting the rest. Counts the requests the inner store started and completed.
class ThrowingSubmitStore final : public Store {
 public:
  ThrowingSubmitStore(StorePtr inner, std::exception_ptr error)
      : inner_(std::move(inner)), error_(std::move(error)) {}
  int throw_at = 1;
  size_t complete_first = 0;

  std::optional<uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  bool read(std::string_view key, ByteBuffer& out) const override { return inner_->read(key, out); }
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override {
    return inner_->read_range(key, offset, out);
  }
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override {
    const int call = ++submits_;
    std::span<const ReadRequest> started = requests;
    if (call == throw_at) started = requests.first(std::min(complete_first, requests.size()));
    started_ += started.size();
    inner_->submit(started, [this, &done](size_t k, ReadOutcome outcome) {
      ++completed_;
      done(k, std::move(outcome));
    });
    if (call == throw_at) std::rethrow_exception(error_);
  }
  int preferred_concurrency() const override { return 4; }
  std::vector<std::string> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  std::string describe() const override { return "throwing"; }

  int submits() const { return submits_.load(); }
  size_t started() const { return started_.load(); }
  size_t completed() const { return completed_.load(); }
  void reset() { submits_ = 0, started_ = 0, completed_ = 0; }

 private:
  StorePtr inner_;  // completes every read before its submit() returns
  std::exception_ptr error_;
  mutable std::atomic<int> submits_{0};
  mutable std::atomic<size_t> started_{0}, completed_{0};
};

/// Runs `body` on its own thread and waits for it a bounded time: a plan that waits forever
/// for a read never started aborts the test binary with a message instead of hanging it.
void run_bounded(const std::function<void()>& body) {
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> result = finished->get_future();
  std::thread([body, finished] {
    try {
      body();
      finished->set_value();
    } catch (...) {
      finished->set_exception(std::current_exception());
    }
  }).detach();
  if (result.wait_for(std::chrono::minutes(2)) != std::future_status::ready) {
    std::fprintf(stderr, "a plan whose store's submit() threw never finished\n");
    std::abort();
  }
  result.get();
}

struct ThrowCase {
  std::exception_ptr error;
  ErrorCode code;  // what the caller sees
};

TEST(ReadsInFlightSubmitThrows, TheErrorNamesArrayAndChunkAndNothingIsLeftBehind) {
  auto memory = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({16, 16}, {1, 16});
  write_chunks<float>(*memory, "x", m);
  const std::vector<ThrowCase> cases = {
      {std::make_exception_ptr(std::bad_alloc()), ErrorCode::kInternal},
      {std::make_exception_ptr(Error(ErrorCode::kUnavailable, "the store refused the batch")),
       ErrorCode::kUnavailable}};
  for (const ThrowCase& c : cases) {
    auto store = std::make_shared<ThrowingSubmitStore>(memory, c.error);
    Array array(store, "x", m, "x");
    std::vector<float> out(16 * 16, -7.f);
    ReadPlan plan;
    plan.add(array, Coords{0, 0}, submit_test_view(out, {16, 16}), "sample 5");
    // The first submit (from start(), on the caller's thread) or a later one (from a read's
    // callback); the batch's first request completed or none; one decode thread or two.
    for (int throw_at : {1, 2}) {
      for (size_t complete_first : {size_t{0}, size_t{1}}) {
        for (size_t threads : {size_t{1}, size_t{2}}) {
          store->reset();
          store->throw_at = throw_at;
          store->complete_first = complete_first;
          ThreadPool pool(threads);
          std::vector<ReadScratch> scratch;
          std::string message;
          std::optional<ErrorCode> code;
          run_bounded([&] {
            try {
              plan.execute(&pool, scratch, nullptr, 4);
            } catch (const Error& e) {
              message = e.what();
              code = e.code();
            }
          });
          SCOPED_TRACE(::testing::Message()
                       << "throw at submit " << throw_at << ", " << complete_first << " completed, "
                       << threads << " threads: " << message);
          EXPECT_EQ(code, c.code);
          EXPECT_NE(message.find("array 'x'"), std::string::npos);
          EXPECT_NE(message.find("chunk 'x/c/"), std::string::npos);
          EXPECT_NE(message.find("sample 5"), std::string::npos);
          EXPECT_GE(store->submits(), throw_at);
          // Every read the store started completed before execute() returned.
          EXPECT_EQ(store->completed(), store->started());
        }
      }
    }
    // The same plan reads exact bytes once submit() stops throwing.
    store->reset();
    store->throw_at = 0;
    std::fill(out.begin(), out.end(), -7.f);
    ThreadPool pool(2);
    std::vector<ReadScratch> scratch;
    run_bounded([&] { plan.execute(&pool, scratch, nullptr, 4); });
    EXPECT_TRUE(
        same_elements(expected_box<float>(Coords{0, 0}, Coords{16, 16}, Coords{1, 16}, 0.f), out));
  }
}

TEST(ReadsInFlightSubmitThrows, APlanSharingTheWindowStillCompletes) {
  // Two plans share one window of 4, the first one's store throws on its second submit: the
  // first plan fails, the second one (a read-ahead batch waiting for the first to submit all
  // its reads) gets its places and reads exact bytes.
  auto memory = std::make_shared<MemoryStore>();
  auto m = make_metadata<float>({16, 16}, {1, 16});
  write_chunks<float>(*memory, "x", m);
  auto throwing = std::make_shared<ThrowingSubmitStore>(
      memory, std::make_exception_ptr(Error(ErrorCode::kUnavailable, "refused")));
  throwing->throw_at = 2;
  auto slow = std::make_shared<LatencyStore>(memory, std::chrono::milliseconds(1));
  Array first_array(throwing, "x", m, "first");
  Array second_array(slow, "x", m, "second");
  std::vector<float> first_out(16 * 16), second_out(16 * 16, -7.f);
  ReadPlan first, second;
  first.add(first_array, Coords{0, 0}, submit_test_view(first_out, {16, 16}));
  second.add(second_array, Coords{0, 0}, submit_test_view(second_out, {16, 16}));
  ThreadPool pool(2);
  std::vector<ReadScratch> first_scratch, second_scratch;
  auto budget = std::make_shared<ReadPlan::Budget>();
  std::string message;
  run_bounded([&] {
    first.start(&pool, first_scratch, nullptr, 4, budget);
    second.start(&pool, second_scratch, nullptr, 4, budget);
    try {
      first.finish(&pool, first_scratch, nullptr);
    } catch (const Error& e) {
      message = e.what();
    }
    second.finish(&pool, second_scratch, nullptr);
  });
  EXPECT_NE(message.find("array 'first'"), std::string::npos) << message;
  EXPECT_NE(message.find("refused"), std::string::npos) << message;
  EXPECT_EQ(throwing->completed(), throwing->started());
  EXPECT_EQ(second.reads_submitted(), 16u);
  EXPECT_EQ(slow->in_flight(), 0);
  EXPECT_TRUE(same_elements(expected_box<float>(Coords{0, 0}, Coords{16, 16}, Coords{1, 16}, 0.f),
                            second_out));
}

}  // namespace
}  // namespace chute
