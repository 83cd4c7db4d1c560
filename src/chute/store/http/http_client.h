#pragma once
// One process-wide HTTP client on libcurl: a single event thread drives a curl multi handle
// (connection pool with keep-alive, HTTP/1.1, a shared DNS cache), keeps at most
// HttpOptions::max_in_flight transfers running for the whole process (every store and loader
// shares that budget), applies connect / total / stalled-stream timeouts and retries transient
// failures (timeouts, resets, short bodies, 429, 5xx) with exponential backoff and full jitter.
//
// Stores build an HttpRequest per read; `sign` (optional) runs before every attempt, retries
// included, so a signer (AWS SigV4, a bearer token) sees fresh time stamps. Completions run on
// the event thread: keep them short and never call back into the client's blocking fetch()
// from one.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chute/store/store.h"
#include "chute/util/byte_buffer.h"
#include "chute/util/option_table.h"

namespace chute::http {

/// Process-wide settings; set_options() applies to transfers started afterwards.
struct HttpOptions {
  double connect_timeout_s = 10.0;   // TCP + TLS handshake
  double request_timeout_s = 300.0;  // one attempt, start to last byte
  double stall_timeout_s = 30.0;     // below stall_min_bytes_per_s for this long: abort (>= 1 s)
  int64_t stall_min_bytes_per_s = 1;
  int max_retries = 5;           // attempts = max_retries + 1
  double backoff_base_s = 0.05;  // attempt n waits uniform(0, min(max, base * 2^n))
  double backoff_max_s = 5.0;
  int max_in_flight = 64;                      // transfers running at once, whole process
  uint64_t coalesce_gap = uint64_t{1} << 20;   // HttpStore: merge ranges this close ...
  uint64_t coalesce_max = uint64_t{16} << 20;  // ... into reads of at most this size
  uint64_t split_size = uint64_t{16} << 20;    // HttpStore: longer ranges go out as parallel parts
  bool verify_tls = true;

  /// Name (chute.set_http_options' keyword), help and check of every field (option_table.h).
  static const std::vector<OptionField<HttpOptions>>& fields();
};

/// Largest timeout or backoff accepted, in seconds (about 11.6 days): a longer one is a typo,
/// and its milliseconds would overflow libcurl's long.
inline constexpr double kMaxHttpSeconds = 1e6;

/// Checks every field against its table entry (fields()), then backoff_max >= backoff. Throws
/// kInvalidArgument naming the option as Python spells it ("http: timeout = -1 is outside
/// [0.001, 1000000]"), the value and the allowed range.
void validate(const HttpOptions& options);

/// Validates `options` (validate()) and makes them current.
void set_options(const HttpOptions& options);
HttpOptions options();

using Headers = std::vector<std::pair<std::string, std::string>>;

/// Value of the first header named `name` (case-insensitive), or nullopt.
std::optional<std::string_view> find_header(const Headers& headers, std::string_view name);

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, PUT, POST, DELETE
  std::string url;             // absolute; the caller percent-encodes the path
  Headers headers;             // sent as given (sign may add or replace)
  std::string body;            // request body (PUT/POST)
  /// whole(): no Range header; at(o, n): "bytes=o-(o+n-1)"; open-ended: "bytes=o-";
  /// last(n): "bytes=-n". A ranged GET must come back as 206 with a matching Content-Range
  /// (a 200 is accepted only when it carries exactly the bytes asked for).
  ByteRange range;
  /// Runs before each attempt (the first and every retry), on the event thread. May change
  /// url and headers; throwing fails the request with that error (no retry).
  std::function<void(HttpRequest&)> sign;
  /// For messages: "chunk key 'c/0/1'" etc.; the URL is always named.
  std::string what;
  /// Which non-2xx statuses are retried. nullptr: the default policy (is_retryable_status():
  /// 408, 429, 500-599). Other statuses fail at once: 404 -> kNotFound, 401/403 ->
  /// kPermissionDenied, the rest -> kInvalidArgument, with HttpResult::status set.
  bool (*retryable_status)(long status) = nullptr;
};

/// Where the response body goes: `into` (exactly this many bytes must arrive) or `buffer`
/// (resized to the body). Neither: the body is kept in HttpResult::body up to 1 MiB (error
/// bodies are always kept there, up to 64 KiB, for messages like S3's XML errors).
struct BodySink {
  std::span<std::byte> into;
  ByteBuffer* buffer = nullptr;
};

struct HttpResult {
  long status = 0;      // the last attempt's HTTP status; 0 when no response came (transport error)
  Headers headers;      // the last response's headers (names as sent by the server)
  uint64_t nbytes = 0;  // body bytes delivered to the sink
  std::optional<uint64_t> object_size;  // from Content-Range ".../T" or a 200's Content-Length
  std::string body;                     // see BodySink
  int attempts = 0;
  /// Set when the request failed for good: kUnavailable (transient failure still there after
  /// the retries; the message names URL, `what`, status or curl error and attempts),
  /// kNotFound (404), kPermissionDenied (401/403), kCorruptData (a response that does not
  /// match the range asked), kInvalidArgument (other 4xx), kTimeout never (timeouts retry and
  /// end as kUnavailable). 404 is an error here too; stores turn it into kMissing.
  std::exception_ptr error;
  bool ok() const { return !error; }
};

using Completion = std::function<void(HttpResult result)>;

class HttpClient {
 public:
  /// The process's client (created on first use; recreated in a forked child, whose copy of
  /// the parent's event thread does not exist).
  static HttpClient& instance();

  /// Starts `request`; `done` runs exactly once, on the event thread (or on the caller's
  /// thread when the client is shutting down). The sink's memory must stay valid until then.
  virtual void start(HttpRequest request, BodySink sink, Completion done) = 0;

  /// Starts and waits (not from a completion).
  HttpResult fetch(HttpRequest request, BodySink sink = {});

  /// Transfers running / queued right now (for tests and stats).
  virtual size_t in_flight() const = 0;
  virtual size_t queued() const = 0;

  virtual ~HttpClient() = default;
};

/// Stops the event thread (pending requests fail with kCancelled) and joins it. The next
/// request starts a fresh client. Called at exit; tests call it to check no thread is left.
void shutdown();

/// Whether the event thread is running now.
bool running();

}  // namespace chute::http
