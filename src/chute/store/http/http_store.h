#pragma once
// A read-only store over plain HTTP(S): "https://host/path/data.zarr" with byte-range GETs
// through the process's HttpClient. size() is a HEAD; list() is not available (a web server
// has no listing API), so groups need consolidated metadata and arrays are opened by path.
//
// submit() sends a batch as concurrent requests: ranges of one object that lie close together
// are coalesced into one GET (HttpOptions::coalesce_gap / coalesce_max) and sliced, and long
// ranges are split into parallel parts (split_size). It keeps Store::submit's contract: it never
// throws, and a failure before or while starting the transfers (out of memory) completes each
// request not yet completed with the error, once, after the transfers of it that started end.

#include <functional>
#include <string>
#include <vector>

#include "chute/store/http/http_client.h"
#include "chute/store/store.h"

namespace chute {

class HttpStore : public Store {
 public:
  /// `url`: "http://..." or "https://..."; trailing slashes are dropped.
  /// `sign`: applied to every request (s3/gs stores set it); `make_url` overrides how a key
  /// becomes a URL (default: url + "/" + percent-encoded key).
  explicit HttpStore(std::string url, std::function<void(http::HttpRequest&)> sign = {},
                     std::function<std::string(std::string_view key)> make_url = {});

  std::optional<uint64_t> size(std::string_view key) const override;
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override;
  int preferred_concurrency() const override;
  std::vector<std::string> list(std::string_view prefix) const override;
  std::string describe() const override { return url_; }

  /// The URL of `key`.
  std::string key_url(std::string_view key) const;

 protected:
  http::HttpRequest make_request(std::string_view key, const ByteRange& range) const;
  /// Starts one transfer (HttpClient::instance().start()); a test seam for a start that fails.
  virtual void start_transfer(http::HttpRequest request, http::BodySink sink,
                              http::Completion done) const;

 private:
  struct Launch;
  /// submit()'s first phase: completes the requests that need no transfer (marking them in
  /// `completed`) and prepares a transfer for each of the others; starts nothing.
  void prepare_launches(std::span<const ReadRequest> requests, const ReadCallback& done,
                        std::vector<char>& completed, std::vector<Launch>& launches) const;

  std::string url_;
  std::function<void(http::HttpRequest&)> sign_;
  std::function<std::string(std::string_view)> make_url_;
};

/// Percent-encodes a key for a URL path ('/' kept; A-Z a-z 0-9 - . _ ~ kept).
std::string percent_encode_path(std::string_view key);

}  // namespace chute
