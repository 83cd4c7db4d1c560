// HttpStore::submit keeps Store::submit's contract when starting a transfer fails: it does not
// throw, every request completes exactly once, and a request completes only after each of its
// transfers that did start has ended. The transfers are real (libcurl, the process's client)
// to a closed port on 127.0.0.1, so each one that starts fails fast with a refused connection.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "chute/store/http/http_client.h"
#include "chute/store/http/http_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

// A port on 127.0.0.1 that nothing listens on (bound once to find it, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ADD_FAILURE() << "no loopback socket";
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// Starts transfers through the real client, throws std::bad_alloc at the `fail_at`-th start,
// and counts the transfers of each key that started and have not ended.
class StartFailingStore final : public HttpStore {
 public:
  StartFailingStore(std::string url, size_t fail_at,
                    std::function<std::string(std::string_view)> make_url = {})
      : HttpStore(std::move(url), {}, std::move(make_url)), fail_at_(fail_at) {}

  void start_transfer(http::HttpRequest request, http::BodySink sink,
                      http::Completion done) const override {
    std::string url = request.url;
    {
      std::lock_guard lock(mutex_);
      if (starts_++ == fail_at_) throw std::bad_alloc();
      ++running_[url];
      ++started_;
    }
    HttpStore::start_transfer(std::move(request), sink,
                              [this, url, done = std::move(done)](http::HttpResult result) {
                                {
                                  std::lock_guard lock(mutex_);
                                  --running_[url];
                                  ++ended_;
                                }
                                done(std::move(result));
                              });
  }

  int running(const std::string& url) const {
    std::lock_guard lock(mutex_);
    auto it = running_.find(url);
    return it == running_.end() ? 0 : it->second;
  }
  size_t started() const {
    std::lock_guard lock(mutex_);
    return started_;
  }
  size_t ended() const {
    std::lock_guard lock(mutex_);
    return ended_;
  }

 private:
  const size_t fail_at_;
  mutable std::mutex mutex_;
  mutable size_t starts_ = 0;
  mutable size_t started_ = 0;
  mutable size_t ended_ = 0;
  mutable std::map<std::string, int> running_;
};

// The outcome's error code (std::bad_alloc as kInternal); nullopt for anything else.
std::optional<ErrorCode> code_of(const ReadOutcome& outcome) {
  if (!outcome.error) return std::nullopt;
  try {
    std::rethrow_exception(outcome.error);
  } catch (const Error& e) {
    return e.code();
  } catch (const std::bad_alloc&) {
    return ErrorCode::kInternal;
  } catch (...) {
  }
  return std::nullopt;
}

struct Completions {
  explicit Completions(size_t n) : count(n, 0), outcomes(n), codes(n) {}
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> count;
  std::vector<ReadOutcome> outcomes;
  // code_of(outcome), taken in the callback on the thread that completed it: the client thread
  // may drop the last reference to the error after the callback, and libstdc++'s reference
  // count is invisible to ThreadSanitizer, so the main thread must not read the exception.
  std::vector<std::optional<ErrorCode>> codes;
  std::vector<int> running_at_completion = std::vector<int>(count.size(), -1);
  size_t total = 0;

  bool wait_for_all() {
    std::unique_lock lock(mutex);
    // Not a speed limit: a hang detector (each transfer is refused at once).
    return changed.wait_for(lock, std::chrono::minutes(2), [&] { return total >= count.size(); });
  }
};

class HttpStoreSubmit : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = http::options();
    http::HttpOptions fast = saved_;
    fast.max_retries = 0;
    fast.connect_timeout_s = 30;
    fast.split_size = 4096;
    http::set_options(fast);
  }
  void TearDown() override {
    http::set_options(saved_);
    http::shutdown();
  }
  http::HttpOptions saved_;
};

const char* const kKeys[] = {"whole", "suffix", "near", "near", "long", "empty", "nowhere"};

// 7 requests: a whole read, a suffix range, two nearby ranges (one coalesced GET), a long
// range (split into 4 parts), an empty range and one with nowhere to put it (completed at
// once). 7 transfers in all.
struct Batch {
  std::vector<ByteBuffer> buffers = std::vector<ByteBuffer>(7);
  std::vector<std::byte> near_a = std::vector<std::byte>(100);
  std::vector<ByteRange> ranges;
  std::vector<ReadRequest> requests;
  Batch() {
    requests.push_back({"whole", ByteRange::whole(), {}, &buffers[0]});
    requests.push_back({"suffix", ByteRange::last(10), {}, &buffers[1]});
    requests.push_back({"near", ByteRange::at(0, 100), near_a, nullptr});
    requests.push_back({"near", ByteRange::at(200, 100), {}, &buffers[3]});
    requests.push_back({"long", ByteRange::at(0, 3 * 4096 + 5), {}, &buffers[4]});
    requests.push_back({"empty", ByteRange::at(7, 0), {}, &buffers[5]});
    requests.push_back({"nowhere", ByteRange::at(0, 4), {}, nullptr});
  }
};

void submit_and_wait(const HttpStore& store, const Batch& batch, Completions& completions,
                     const std::string& base) {
  const StartFailingStore* failing = dynamic_cast<const StartFailingStore*>(&store);
  EXPECT_NO_THROW(store.submit(batch.requests, [&](size_t i, ReadOutcome outcome) {
    const int running = failing ? failing->running(base + "/" + kKeys[i]) : 0;
    std::lock_guard lock(completions.mutex);
    ++completions.count[i];
    completions.codes[i] = code_of(outcome);
    completions.outcomes[i] = std::move(outcome);
    completions.running_at_completion[i] = running;
    ++completions.total;
    completions.changed.notify_all();
  }));
  ASSERT_TRUE(completions.wait_for_all()) << "a request never completed";
}

TEST_F(HttpStoreSubmit, AStartThatFailsAfterOthersStartedCompletesEveryRequestOnce) {
  const std::string base = "http://127.0.0.1:" + std::to_string(closed_port());
  constexpr size_t kTransfers = 7;
  for (size_t fail_at = 0; fail_at <= kTransfers; ++fail_at) {
    SCOPED_TRACE("start " + std::to_string(fail_at) + " throws");
    StartFailingStore store(base, fail_at);
    Batch batch;
    Completions completions(batch.requests.size());
    submit_and_wait(store, batch, completions, base);
    for (size_t i = 0; i < batch.requests.size(); ++i) {
      SCOPED_TRACE(kKeys[i]);
      EXPECT_EQ(completions.count[i], 1);
      // A request completes after every transfer of it that started has ended.
      EXPECT_EQ(completions.running_at_completion[i], 0);
    }
    EXPECT_EQ(completions.outcomes[5].status, ReadStatus::kOk);
    EXPECT_EQ(completions.codes[6], ErrorCode::kInternal);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(completions.outcomes[i].status, ReadStatus::kFailed) << kKeys[i];
      const std::optional<ErrorCode> code = completions.codes[i];
      ASSERT_TRUE(code.has_value()) << kKeys[i];
      EXPECT_TRUE(*code == ErrorCode::kUnavailable || *code == ErrorCode::kInternal)
          << kKeys[i] << ": " << error_code_name(*code);
    }
    // Nothing left behind: every transfer that started has ended, and the client is idle.
    const size_t started = store.started();
    EXPECT_EQ(started, fail_at < kTransfers ? kTransfers - 1 : kTransfers);
    EXPECT_EQ(store.ended(), started);
    EXPECT_EQ(http::HttpClient::instance().queued(), 0u);
  }
  http::shutdown();
  EXPECT_FALSE(http::running());
}

TEST_F(HttpStoreSubmit, AFailureWhilePreparingStartsNothingAndFailsTheRest) {
  const std::string base = "http://127.0.0.1:" + std::to_string(closed_port());
  StartFailingStore store(base, /*fail_at=*/100, [&](std::string_view key) -> std::string {
    if (key == "long") throw Error(ErrorCode::kInvalidArgument, "no URL for 'long'");
    return base + "/" + std::string(key);
  });
  Batch batch;
  Completions completions(batch.requests.size());
  submit_and_wait(store, batch, completions, base);
  EXPECT_EQ(store.started(), 0u);  // the URL of the last key failed before any transfer began
  for (size_t i = 0; i < batch.requests.size(); ++i) EXPECT_EQ(completions.count[i], 1) << i;
  EXPECT_EQ(completions.outcomes[5].status, ReadStatus::kOk);
  EXPECT_EQ(completions.codes[6], ErrorCode::kInternal);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(completions.codes[i], ErrorCode::kInvalidArgument) << kKeys[i];
  }
}

}  // namespace
}  // namespace chute
