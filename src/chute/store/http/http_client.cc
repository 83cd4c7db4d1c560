// The event thread behind HttpClient: one curl multi handle, a queue of transfers waiting for
// a slot in the process-wide in-flight budget, and a timer list of retries waiting out their
// backoff.

#include "chute/store/http/http_client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "chute/store/http/http_parse.h"
#include "chute/util/error.h"
#include "chute/util/fork_safe_mutex.h"
#include "chute/util/option_check.h"
#include "chute/util/stream_copy.h"

namespace chute::http {
namespace {

// libcurl's receive buffer per transfer (its default is 16 KiB). A 1.1 MB chunk took about 70
// recvfrom() and 70 poll() calls at 16 KiB, 6 of each at 256 KiB: a W1 run from loopback S3
// made 9,400 instead of 91,000 such calls, and chute's CPU per sample fell by 8-10%. Each easy
// handle keeps its buffer: at most max_in_flight x 256 KiB (16 MiB at the default 64).
constexpr long kReceiveBufferBytes = 256L * 1024;

using Clock = std::chrono::steady_clock;
constexpr size_t kErrorBodyLimit = 64 << 10;

detail::ForkSafeMutex g_options_mutex;
HttpOptions g_options;

struct Transfer {
  HttpRequest original;  // what the caller asked; each attempt signs a fresh copy
  HttpRequest attempt_request;
  BodySink sink;
  Completion done;
  int attempt = 0;  // attempts started so far
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  char curl_error[CURL_ERROR_SIZE] = {};
  // One attempt's response.
  long status = 0;
  Headers headers;
  uint64_t received = 0;
  bool body_started = false;
  std::string mismatch;  // why the response was refused (set by the body callback)
  std::string body;      // kept body (no sink, or an error response)
  std::optional<ContentRange> content_range;
  std::optional<uint64_t> content_length;

  void reset_response() {
    status = 0;
    headers.clear();
    received = 0;
    body_started = false;
    mismatch.clear();
    body.clear();
    content_range.reset();
    content_length.reset();
    curl_error[0] = '\0';
  }
  bool to_sink() const { return status >= 200 && status < 300; }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  if (auto status = parse_status_line(line)) {
    // A new response (after 100 Continue or a redirect) replaces the previous one.
    t->reset_response();
    t->status = *status;
  } else if (auto header = parse_header_line(line)) {
    t->headers.push_back(std::move(*header));
  }
  return size * count;
}

// Checks the response once, before its first body byte is stored.
bool accept_response(Transfer* t) {
  t->body_started = true;
  if (auto value = find_header(t->headers, "Content-Length")) {
    t->content_length = parse_decimal(*value);
  }
  if (auto value = find_header(t->headers, "Content-Range")) {
    t->content_range = parse_content_range(*value);
    if (!t->content_range) {
      t->mismatch = "malformed Content-Range '" + std::string(*value) + "'";
      return false;
    }
  }
  if (!t->to_sink()) return true;
  if (t->original.method != "HEAD") {
    t->mismatch =
        check_range_response(t->original.range, t->status, t->content_range, t->content_length);
    if (!t->mismatch.empty()) return false;
  }
  const BodySink& sink = t->sink;
  if (!sink.into.empty() && t->content_length && *t->content_length != sink.into.size()) {
    t->mismatch = "expected " + std::to_string(sink.into.size()) + " bytes, Content-Length says " +
                  std::to_string(*t->content_length);
    return false;
  }
  if (sink.buffer) sink.buffer->resize(t->content_length ? size_t(*t->content_length) : 0);
  return true;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (!t->body_started && !accept_response(t)) return 0;  // aborts: CURLE_WRITE_ERROR
  if (!t->to_sink()) {
    if (t->body.size() < kErrorBodyLimit) {
      t->body.append(data, std::min(n, kErrorBodyLimit - t->body.size()));
    }
    t->received += n;
    return n;
  }
  // The body goes to a chunk's buffer that a decode thread reads later, after the other reads
  // in flight (tens of MB): streamed, the copy out of libcurl's receive buffer does not first
  // read each destination line into the cache, and the fence makes the bytes visible before
  // the transfer completes on this thread.
  const BodySink& sink = t->sink;
  if (!sink.into.empty()) {
    if (t->received + n > sink.into.size()) {
      t->mismatch = "more than the " + std::to_string(sink.into.size()) + " bytes asked for";
      return 0;
    }
    stream_bytes(sink.into.data() + t->received, reinterpret_cast<const std::byte*>(data), n);
    stream_fence();
  } else if (sink.buffer) {
    if (t->received + n > sink.buffer->size()) sink.buffer->resize(size_t(t->received + n));
    stream_bytes(sink.buffer->data() + t->received, reinterpret_cast<const std::byte*>(data), n);
    stream_fence();
  } else {
    t->body.append(data, n);
  }
  t->received += n;
  return n;
}

bool transient_curl_code(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WRITE_ERROR:  // our own refusal of a mismatched response (see mismatch)
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_WEIRD_SERVER_REPLY:
      return true;
    default:
      return false;
  }
}

class CurlClient final : public HttpClient {
 public:
  CurlClient() {
    static std::once_flag global_init;
    std::call_once(global_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi_ = curl_multi_init();
    share_ = curl_share_init();
    if (!multi_ || !share_) fail(ErrorCode::kInternal, "libcurl could not be initialised");
    // Only the event thread uses these handles, so the share needs no locks.
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    thread_ = std::thread([this] { run(); });
  }

  ~CurlClient() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    curl_multi_wakeup(multi_);
    if (thread_.joinable()) thread_.join();
    for (CURL* easy : spare_) curl_easy_cleanup(easy);
    curl_multi_cleanup(multi_);
    curl_share_cleanup(share_);
  }

  void start(HttpRequest request, BodySink sink, Completion done) override {
    auto transfer = std::make_unique<Transfer>();
    const std::string range = range_header_value(request.range);
    if (!range.empty()) request.headers.emplace_back("Range", range);
    transfer->original = std::move(request);
    transfer->sink = sink;
    transfer->done = std::move(done);
    {
      std::lock_guard lock(mutex_);
      if (!stopping_) {
        incoming_.push_back(std::move(transfer));
        ++queued_;
      }
    }
    if (transfer) {
      finish_with(*transfer,
                  make_error(ErrorCode::kCancelled, *transfer, "the HTTP client is shut down"));
      return;
    }
    curl_multi_wakeup(multi_);
  }

  size_t in_flight() const override { return running_count_.load(); }
  size_t queued() const override { return queued_.load(); }
  bool on_event_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  static std::exception_ptr make_error(ErrorCode code, const Transfer& t, const std::string& why) {
    std::string message = t.original.method + " " + t.original.url;
    if (!t.original.what.empty()) message += " (" + t.original.what + ")";
    message += ": " + why;
    return std::make_exception_ptr(Error(code, message));
  }

  static void finish_with(Transfer& t, std::exception_ptr error) {
    HttpResult result;
    result.status = t.status;
    result.headers = std::move(t.headers);
    result.nbytes = t.received;
    result.body = std::move(t.body);
    result.attempts = t.attempt;
    result.error = std::move(error);
    if (t.content_range && t.content_range->size) {
      result.object_size = t.content_range->size;
    } else if (t.status == 200 && t.content_length) {
      result.object_size = t.content_length;
    }
    Completion done = std::move(t.done);
    done(std::move(result));
  }

  void run() {
    pthread_setname_np(pthread_self(), "chute-http");
    std::mt19937_64 random(std::random_device{}());
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (;;) {
      HttpOptions opts;
      {
        std::lock_guard options_lock(g_options_mutex);
        opts = g_options;
      }
      {
        std::lock_guard lock(mutex_);
        if (stopping_) break;
        for (auto& t : incoming_) waiting_.push_back(std::move(t));
        incoming_.clear();
      }
      const auto now = Clock::now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        waiting_.push_back(std::move(timers_.begin()->second));
        timers_.erase(timers_.begin());
      }
      while (running_.size() < size_t(std::max(1, opts.max_in_flight)) && !waiting_.empty()) {
        auto t = std::move(waiting_.front());
        waiting_.pop_front();
        --queued_;
        start_attempt(std::move(t), opts);
      }
      int still_running = 0;
      curl_multi_perform(multi_, &still_running);
      int left = 0;
      while (CURLMsg* message = curl_multi_info_read(multi_, &left)) {
        if (message->msg != CURLMSG_DONE) continue;
        CURL* easy = message->easy_handle;
        const CURLcode code = message->data.result;
        curl_multi_remove_handle(multi_, easy);
        auto it = running_.find(easy);
        if (it == running_.end()) continue;
        auto t = std::move(it->second);
        running_.erase(it);
        running_count_ = running_.size();
        release_easy(*t);
        complete_attempt(std::move(t), code, opts, uniform(random));
      }
      int timeout_ms = 1000;
      if (!timers_.empty()) {
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
            timers_.begin()->first - Clock::now());
        timeout_ms = int(std::clamp<int64_t>(wait.count() + 1, 0, 1000));
      }
      if (!waiting_.empty() && running_.size() < size_t(std::max(1, opts.max_in_flight))) {
        timeout_ms = 0;
      }
      curl_multi_poll(multi_, nullptr, 0, timeout_ms, nullptr);
    }
    // Shutting down: everything not finished fails as cancelled.
    std::vector<std::unique_ptr<Transfer>> pending;
    for (auto& [easy, t] : running_) {
      curl_multi_remove_handle(multi_, easy);
      release_easy(*t);
      pending.push_back(std::move(t));
    }
    running_.clear();
    running_count_ = 0;
    for (auto& t : waiting_) pending.push_back(std::move(t));
    for (auto& [when, t] : timers_) pending.push_back(std::move(t));
    {
      std::lock_guard lock(mutex_);
      for (auto& t : incoming_) pending.push_back(std::move(t));
      incoming_.clear();
    }
    waiting_.clear();
    timers_.clear();
    queued_ = 0;
    for (auto& t : pending) {
      finish_with(*t, make_error(ErrorCode::kCancelled, *t, "the HTTP client was shut down"));
    }
  }

  CURL* take_easy() {
    if (!spare_.empty()) {
      CURL* easy = spare_.back();
      spare_.pop_back();
      curl_easy_reset(easy);
      return easy;
    }
    return curl_easy_init();
  }

  void release_easy(Transfer& t) {
    if (t.header_list) curl_slist_free_all(t.header_list);
    t.header_list = nullptr;
    if (t.easy) spare_.push_back(t.easy);
    t.easy = nullptr;
  }

  void start_attempt(std::unique_ptr<Transfer> t, const HttpOptions& opts) {
    ++t->attempt;
    t->reset_response();
    t->attempt_request = t->original;
    if (t->attempt_request.sign) {
      try {
        t->attempt_request.sign(t->attempt_request);
      } catch (const Error& e) {
        finish_with(*t, make_error(e.code(), *t, std::string("signing failed: ") + e.what()));
        return;
      } catch (const std::exception& e) {
        finish_with(
            *t, make_error(ErrorCode::kInternal, *t, std::string("signing failed: ") + e.what()));
        return;
      }
    }
    if (t->sink.buffer) t->sink.buffer->resize(0);
    CURL* easy = take_easy();
    if (!easy) {
      finish_with(*t, make_error(ErrorCode::kInternal, *t, "curl_easy_init failed"));
      return;
    }
    t->easy = easy;
    const HttpRequest& r = t->attempt_request;
    curl_easy_setopt(easy, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(easy, CURLOPT_SHARE, share_);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, long(CURL_HTTP_VERSION_1_1));
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, kReceiveBufferBytes);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, long(opts.connect_timeout_s * 1000));
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, long(opts.request_timeout_s * 1000));
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT,
                     long(std::max<int64_t>(1, opts.stall_min_bytes_per_s)));
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME,
                     long(std::max(1.0, std::ceil(opts.stall_timeout_s))));
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, opts.verify_tls ? 1L : 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, opts.verify_tls ? 2L : 0L);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->curl_error);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(easy, CURLOPT_PRIVATE, t.get());
    if (r.method == "HEAD") {
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else if (r.method != "GET") {
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    if (!r.body.empty() || r.method == "PUT" || r.method == "POST") {
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(r.body.size()));
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, r.body.data());
    }
    curl_slist* list = curl_slist_append(nullptr, "Expect:");
    for (const auto& [name, value] : r.headers) {
      list = curl_slist_append(list, (name + ": " + value).c_str());
    }
    t->header_list = list;
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, list);
    Transfer* raw = t.get();
    running_[easy] = std::move(t);
    running_count_ = running_.size();
    if (curl_multi_add_handle(multi_, easy) != CURLM_OK) {
      auto owned = std::move(running_[easy]);
      running_.erase(easy);
      running_count_ = running_.size();
      release_easy(*owned);
      finish_with(*raw, make_error(ErrorCode::kInternal, *raw, "curl_multi_add_handle failed"));
    }
  }

  // Decides what a finished attempt means: success, a permanent failure, or a retry.
  void complete_attempt(std::unique_ptr<Transfer> t, CURLcode code, const HttpOptions& opts,
                        double jitter) {
    std::string why;
    ErrorCode final_code = ErrorCode::kUnavailable;
    bool retry = false;
    if (code == CURLE_OK && !t->body_started && t->to_sink() && t->original.method != "HEAD" &&
        !accept_response(t.get())) {
      code = CURLE_WRITE_ERROR;  // an empty body that does not fit the range
    } else if (code == CURLE_OK && !t->body_started) {
      accept_response(t.get());
    }
    if (code != CURLE_OK) {
      if (code == CURLE_WRITE_ERROR && !t->mismatch.empty()) {
        why = "HTTP " + std::to_string(t->status) +
              ": response does not match the request: " + t->mismatch;
        final_code = ErrorCode::kCorruptData;
      } else {
        why = std::string("curl error ") + std::to_string(int(code)) + " (" +
              (t->curl_error[0] ? t->curl_error : curl_easy_strerror(code)) + ")";
        if (t->status) why = "HTTP " + std::to_string(t->status) + ", " + why;
      }
      retry = transient_curl_code(code);
      if (code == CURLE_PEER_FAILED_VERIFICATION) {
        why +=
            ": the server's certificate is not trusted (add its CA to the system's, or "
            "set_http_options(verify_tls=False) for a test server)";
        final_code = ErrorCode::kPermissionDenied;
      } else if (!retry) {
        final_code = ErrorCode::kInvalidArgument;
      }
    } else if (t->to_sink()) {
      const bool head = t->original.method == "HEAD";
      std::optional<uint64_t> expected;
      if (!t->sink.into.empty()) expected = t->sink.into.size();
      if (!head && t->content_length) expected = expected.value_or(*t->content_length);
      if (!head && expected && t->received != *expected) {
        why = "HTTP " + std::to_string(t->status) + ": short body, " + std::to_string(t->received) +
              " of " + std::to_string(*expected) + " bytes";
        retry = true;
        final_code = ErrorCode::kCorruptData;
      } else {
        if (t->sink.buffer) t->sink.buffer->resize(size_t(t->received));
        finish_with(*t, nullptr);
        return;
      }
    } else {
      const long status = t->status;
      const bool retryable = t->original.retryable_status ? t->original.retryable_status(status)
                                                          : is_retryable_status(status);
      why = "HTTP " + std::to_string(status);
      if (retryable) {
        retry = true;
      } else {
        final_code = status == 404                    ? ErrorCode::kNotFound
                     : status == 401 || status == 403 ? ErrorCode::kPermissionDenied
                                                      : ErrorCode::kInvalidArgument;
        if (!t->body.empty()) why += ": " + t->body.substr(0, 300);
        finish_with(*t, make_error(final_code, *t, why));
        return;
      }
    }
    if (retry && t->attempt <= opts.max_retries) {
      const double wait =
          backoff_seconds(t->attempt - 1, opts.backoff_base_s, opts.backoff_max_s, jitter);
      const auto when = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(wait));
      ++queued_;
      timers_.emplace(when, std::move(t));
      return;
    }
    if (retry) {
      why += " after " + std::to_string(t->attempt) + " attempt" + (t->attempt > 1 ? "s" : "");
      if (final_code != ErrorCode::kCorruptData) final_code = ErrorCode::kUnavailable;
    }
    finish_with(*t, make_error(final_code, *t, why));
  }

  CURLM* multi_ = nullptr;
  CURLSH* share_ = nullptr;
  std::thread thread_;
  mutable std::mutex mutex_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Transfer>> incoming_;  // guarded by mutex_
  std::atomic<size_t> queued_{0};
  std::atomic<size_t> running_count_{0};
  // Event thread only.
  std::deque<std::unique_ptr<Transfer>> waiting_;
  std::multimap<Clock::time_point, std::unique_ptr<Transfer>> timers_;
  std::unordered_map<CURL*, std::unique_ptr<Transfer>> running_;
  std::vector<CURL*> spare_;
};

detail::ForkSafeMutex g_client_mutex;
CurlClient* g_client = nullptr;
pid_t g_client_pid = 0;

}  // namespace

const std::vector<OptionField<HttpOptions>>& HttpOptions::fields() {
  using O = HttpOptions;
  // libcurl counts milliseconds: a timeout under 1 ms would be 0, "no timeout".
  constexpr long double kTiny = 1e-3L;
  constexpr long double kMax = kMaxHttpSeconds;
  static const std::vector<OptionField<O>> table = {
      {"connect_timeout",
       &O::connect_timeout_s,
       "seconds to connect (TCP and TLS handshake)",
       {.low = kTiny, .high = kMax}},
      {"timeout",
       &O::request_timeout_s,
       "seconds per request attempt, start to last byte",
       {.low = kTiny, .high = kMax}},
      {"stall_timeout",
       &O::stall_timeout_s,
       "seconds a transfer may stay below stall_min_bytes_per_s before it is aborted and retried",
       {.low = 1, .high = kMax}},
      {"stall_min_bytes_per_s",
       &O::stall_min_bytes_per_s,
       "bytes per second under which a transfer counts as stalled",
       {.low = 1}},
      {"max_retries",
       &O::max_retries,
       "retries of a failed request (timeouts, resets, short bodies, 429, 5xx)",
       {.low = 0, .high = 100}},
      {"backoff",
       &O::backoff_base_s,
       "seconds of the first retry's backoff (full jitter, doubling per attempt)",
       {.low = 0, .high = kMax}},
      {"backoff_max",
       &O::backoff_max_s,
       "seconds a retry's backoff may reach (>= backoff)",
       {.low = 0, .high = kMax}},
      {"max_in_flight",
       &O::max_in_flight,
       "HTTP requests running at once in the whole process",
       {.low = 1, .high = 4096}},
      {"coalesce_gap", &O::coalesce_gap, "bytes between two ranges of one file read as one GET"},
      {"coalesce_max",
       &O::coalesce_max,
       "largest read that coalescing makes, in bytes",
       {.low = 1}},
      {"split_size",
       &O::split_size,
       "bytes above which one range goes out as parallel parts",
       {.low = 4096}},
      {"verify_tls", &O::verify_tls, "check the server's TLS certificate and host name"},
  };
  return table;
}

void validate(const HttpOptions& o) {
  check_fields("http", o);
  chute::detail::check_option_range("http", "backoff_max", o.backoff_max_s, o.backoff_base_s,
                                    kMaxHttpSeconds, " (backoff_max >= backoff)");
}

void set_options(const HttpOptions& o) {
  validate(o);
  std::lock_guard lock(g_options_mutex);
  g_options = o;
}

HttpOptions options() {
  std::lock_guard lock(g_options_mutex);
  return g_options;
}

std::optional<std::string_view> find_header(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < key.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(key[i])) ==
             std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (same) return std::string_view(value);
  }
  return std::nullopt;
}

HttpClient& HttpClient::instance() {
  std::lock_guard lock(g_client_mutex);
  if (g_client && g_client_pid != ::getpid()) {
    g_client = nullptr;  // a forked child's copy: its thread does not exist; leak, never join
  }
  if (!g_client) {
    static bool registered = [] { return std::atexit([] { shutdown(); }) == 0; }();
    (void)registered;
    g_client = new CurlClient();
    g_client_pid = ::getpid();
  }
  return *g_client;
}

HttpResult HttpClient::fetch(HttpRequest request, BodySink sink) {
  if (auto* self = dynamic_cast<CurlClient*>(this); self && self->on_event_thread()) {
    fail(ErrorCode::kInternal, "HttpClient::fetch called from a completion (would deadlock)");
  }
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<HttpResult> result;
  start(std::move(request), sink, [&](HttpResult r) {
    std::lock_guard lock(mutex);
    result = std::move(r);
    cv.notify_all();
  });
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return result.has_value(); });
  return std::move(*result);
}

void shutdown() {
  CurlClient* client = nullptr;
  {
    std::lock_guard lock(g_client_mutex);
    if (g_client_pid != ::getpid()) g_client = nullptr;
    client = g_client;
    g_client = nullptr;
  }
  delete client;
}

bool running() {
  std::lock_guard lock(g_client_mutex);
  return g_client != nullptr && g_client_pid == ::getpid();
}

}  // namespace chute::http
